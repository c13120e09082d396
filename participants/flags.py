"""Flags: evidence of automated or careless answering, recorded with each accepted page.

What a page's submission is checked for (thresholds in `Thresholds`, overridable with the
`PARTICIPANT_FLAGS` setting, a dict of the same names):

- `honeypot`: the hidden field every step form carries (`HONEYPOT`, see step_base.html) came
  back filled. People never see it; a script that fills every field does.
- `no_page_view`: the page was never served to this participant (no GET of it since the
  previous accepted submission: `Participant.served_at` is empty).
- `fast_page`: the server's time on the page is under `seconds_per_item` per answerable item.
- free text (every textarea of the form, with at least `min_text_chars` characters), from the
  browser's counts (`TypingCounts`: key presses, pastes, characters pasted, typing time) and
  the server's clock:
  `pasted_text` (at least `paste_share` of the text was pasted), `untyped_text` (fewer than
  `min_keys_per_char` key presses per character not pasted), `fast_typing` (more than
  `max_chars_per_second` characters not pasted per second of typing time, or of the server's
  time on the page), `unmeasured_text` (the browser sent no counts: no script ran).

Flags never end nor exclude anyone: the experimenter reviews them (admin, exports) and may
exclude by hand. The browser's figures are clamped and only ever add evidence.

Entries that look automated are a study's, not a page's: `entry_alert()` counts, for the
overview, the entries and place-takings the per-address limits refused and the places taken
and left without an answer until their short idle lease ran out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django import forms
from django.conf import settings

from common import limits
from common.statements import Statement
from participants.models import Flag, Participant, Response, TextEntry

# The honeypot's name: plausible to a script, and never a form field (item keys have no '-').
HONEYPOT = "contact-website"
COUNT_MAX = 1_000_000  # key presses, pastes and pasted characters
MS_MAX = 86_400_000  # a day

Kind = Flag.Kind


@dataclass(frozen=True)
class Thresholds:
    seconds_per_item: float = 1.0
    max_chars_per_second: float = 20.0
    min_text_chars: int = 20
    min_keys_per_char: float = 0.5
    paste_share: float = 0.5


def thresholds() -> Thresholds:
    return Thresholds(**getattr(settings, "PARTICIPANT_FLAGS", {}))


def _clamped(data, name: str, top: int) -> int | None:
    try:
        value = int(str(data.get(name, "")).strip())
    except (TypeError, ValueError):
        return None
    return min(max(value, 0), top)


@dataclass(frozen=True)
class TypingCounts:
    """The browser's counts for one textarea, sent by step.js as `_keys.NAME`, `_pastes.NAME`,
    `_pasted.NAME` and `_typing_ms.NAME`. Only counts and durations, never content."""

    keys: int | None = None
    pastes: int | None = None
    pasted_chars: int | None = None
    typing_ms: int | None = None

    @classmethod
    def from_post(cls, data, name: str) -> TypingCounts:
        return cls(
            keys=_clamped(data, f"_keys.{name}", COUNT_MAX),
            pastes=_clamped(data, f"_pastes.{name}", COUNT_MAX),
            pasted_chars=_clamped(data, f"_pasted.{name}", COUNT_MAX),
            typing_ms=_clamped(data, f"_typing_ms.{name}", MS_MAX),
        )

    @property
    def measured(self) -> bool:
        return None not in (self.keys, self.pastes, self.pasted_chars, self.typing_ms)


@dataclass(frozen=True)
class Evidence:
    """What a page's POST says about how it was answered, beyond the answers."""

    honeypot_chars: int = 0
    typing: dict[str, TypingCounts] = field(default_factory=dict)

    @classmethod
    def from_post(cls, data, form: forms.Form) -> Evidence:
        honeypot = str(data.get(HONEYPOT, ""))
        return cls(
            honeypot_chars=len(honeypot.strip()),
            typing={name: TypingCounts.from_post(data, form.add_prefix(name)) for name in text_fields(form)},
        )


def text_fields(form: forms.Form) -> list[str]:
    """The form's free-text fields: those shown as a textarea."""
    return [name for name, f in form.fields.items() if isinstance(f.widget, forms.Textarea)]


@dataclass(frozen=True)
class Page:
    """The accepted page: whose, which step, its form, and when it was served and answered."""

    participant: Participant
    position: int
    step_kind: str
    form: forms.Form
    served_at: datetime | None
    started_at: datetime | None  # when the page became current, if it was never served
    now: datetime
    # The page's stored answers as (key, value) in the order they were stored, when the caller
    # has them (`step_submit`: what `responses_record` wrote); None: read them back.
    answers: list[tuple[str, str]] | None = None

    @property
    def seconds(self) -> float | None:
        start = self.served_at or self.started_at
        return max((self.now - start).total_seconds(), 0.0) if start else None


def flags_record(*, page: Page, evidence: Evidence) -> list[Flag]:
    """Store the page's free-text measures and the flags they and the page's timing raise."""
    limits = thresholds()
    flags: list[Flag] = []

    def add(kind: str, detail: str, *, name: str = "", value=None, threshold=None) -> None:
        flags.append(
            Flag(
                participant=page.participant,
                position=page.position,
                step_kind=page.step_kind,
                kind=kind,
                field=name[:60],
                value=None if value is None else round(value, 3),
                threshold=threshold,
                detail=detail[:300],
                created_at=page.now,
            )
        )

    if evidence.honeypot_chars:
        chars = evidence.honeypot_chars
        add(Kind.HONEYPOT, f"the hidden field came back with {chars} characters", value=chars)
    if page.served_at is None:
        add(Kind.NO_PAGE_VIEW, "answered without the page being served since the previous answer")
    seconds = page.seconds
    items = len(page.form.fields)
    if items and seconds is not None and seconds < items * limits.seconds_per_item:
        add(
            Kind.FAST_PAGE,
            f"{seconds:.2f} s on the page for {items} item(s)",
            value=seconds,
            threshold=items * limits.seconds_per_item,
        )
    entries = _text_entries(page, evidence, seconds)
    for entry in entries:
        _text_flags(entry, seconds, limits, add)
    TextEntry.objects.bulk_create(entries)
    _FLAGS.insert_rows([[getattr(f, name) for name in FLAG_COLUMNS] for f in flags])
    return flags  # as stored (without their ids)


# A fast page raises a flag on nearly every page of a hurried participant: a fixed statement
# (common.statements) rather than the ORM's bulk_create.
FLAG_COLUMNS = (
    *("participant_id", "position", "step_kind", "kind", "field"),
    *("value", "threshold", "detail", "created_at"),
)
_FLAGS = Statement(Flag, insert=[name.removesuffix("_id") for name in FLAG_COLUMNS])


def _text_entries(page: Page, evidence: Evidence, seconds: float | None) -> list[TextEntry]:
    if page.answers is not None:
        stored = dict(page.answers)
    else:
        stored = dict(
            Response.objects.filter(
                participant=page.participant, position=page.position, created_at=page.now
            ).values_list("key", "value")
        )
    entries = []
    for name, counts in evidence.typing.items():
        text = page.form.cleaned_data.get(name)
        if not isinstance(text, str) or not text:
            continue
        key = name if stored.get(name) == text else next((k for k, v in stored.items() if v == text), "")
        entries.append(
            TextEntry(
                participant=page.participant,
                position=page.position,
                step_kind=page.step_kind,
                field=name[:60],
                key=key[:60],
                chars=len(text),
                keys=counts.keys,
                pastes=counts.pastes,
                pasted_chars=counts.pasted_chars,
                typing_ms=counts.typing_ms,
                page_ms=None if seconds is None else min(round(seconds * 1000), MS_MAX),
                created_at=page.now,
            )
        )
    return entries


def _text_flags(entry: TextEntry, seconds: float | None, limits: Thresholds, add) -> None:
    if entry.chars < limits.min_text_chars:
        return
    name = entry.field
    counts = TypingCounts(entry.keys, entry.pastes, entry.pasted_chars, entry.typing_ms)
    pasted = 0
    if not counts.measured:  # no (or partial) counts: only the server's clock is evidence
        add(Kind.UNMEASURED_TEXT, f"{entry.chars} characters without the browser's counts", name=name)
    else:
        pasted = min(entry.pasted_chars, entry.chars)
        if pasted / entry.chars >= limits.paste_share:
            add(
                Kind.PASTED_TEXT,
                f"{pasted} of {entry.chars} characters pasted ({entry.pastes} paste(s))",
                name=name,
                value=pasted / entry.chars,
                threshold=limits.paste_share,
            )
    typed = entry.chars - pasted
    if typed < limits.min_text_chars:
        return
    if counts.measured and entry.keys < typed * limits.min_keys_per_char:
        add(
            Kind.UNTYPED_TEXT,
            f"{entry.keys} key presses for {typed} characters not pasted",
            name=name,
            value=entry.keys / typed,
            threshold=limits.min_keys_per_char,
        )
    speeds = []
    if counts.measured and entry.keys:
        speeds.append(("typing time", typed / max(entry.typing_ms / 1000, 0.001)))
    if seconds is not None:
        speeds.append(("time on the page", typed / max(seconds, 0.001)))
    fast = [(clock, cps) for clock, cps in speeds if cps > limits.max_chars_per_second]
    if fast:
        add(
            Kind.FAST_TYPING,
            "; ".join(f"{cps:.1f} characters per second of {clock}" for clock, cps in fast),
            name=name,
            value=max(cps for _, cps in fast),
            threshold=limits.max_chars_per_second,
        )


def flag_summary(counts: dict[str, int]) -> str:
    """'fast_page:2;honeypot:1': flag kinds with their counts, by name (the exports' format)."""
    return ";".join(f"{kind}:{n}" for kind, n in sorted(counts.items()) if n)


# --- Entries that look automated (the overview's alert) ------------------------------------

ALERT_REFUSED = 10  # entries or place-takings refused by the per-address limits, in the last hour
ALERT_IDLE = 5  # places taken and left unanswered until the idle lease ran out, in the last hour
BUCKET_S = 600  # refusals are counted per 10 minutes; the alert sums the last six


def _refusals_key(study_id: int, bucket: int) -> str:
    return f"refused:{study_id}:{bucket}"


def refusal_count(*, study_id: int, now: datetime | None = None) -> None:
    """One more entry or place-taking of the study refused by the per-address limits."""
    stamp = now.timestamp() if now else time.time()
    limits.count_add(_refusals_key(study_id, int(stamp // BUCKET_S)), 1, 7 * BUCKET_S)


@dataclass(frozen=True)
class EntryAlert:
    refused: int  # entries and place-takings refused for coming too fast from one address
    idle: int  # places taken by a page and left without an answer until the idle lease ran out

    @property
    def raised(self) -> bool:
        return self.refused >= ALERT_REFUSED or self.idle >= ALERT_IDLE

    def summary(self) -> dict:
        """For the overview page and the API's progress (plain JSON)."""
        return {"refused": self.refused, "idle": self.idle, "raised": self.raised}


def entry_alert(*, study_id: int, now: datetime) -> EntryAlert:
    """What the last hour's entries say about automation (pilots and previews aside)."""
    bucket = int(now.timestamp() // BUCKET_S)
    refused = sum(limits.count_get(_refusals_key(study_id, b)) for b in range(bucket - 5, bucket + 1))
    idle = Participant.objects.filter(
        study_id=study_id,
        place_idle=True,
        is_pilot=False,
        is_preview=False,
        placed_at__gte=now - timedelta(hours=1),
        expires_at__lte=now,
    ).count()
    return EntryAlert(refused=refused, idle=idle)
