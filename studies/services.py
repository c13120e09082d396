"""Study definitions: reading the step list fast, and changing it safely."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from studies import registry
from studies.models import Question, Step, Study
from studies.snapshot import digest, study_snapshot
from studies.texts import translations_build, translations_copy


class StudyLocked(Exception):
    """The study is frozen (it went live, or real participants entered): its steps cannot change."""


_steps_cache: dict[int, tuple[int, list[Step]]] = {}
# Other apps copy what they attach to a study (e.g. its dialogues) when it is duplicated:
# callables (*, source, copy), registered in their `ready()`.
duplicate_hooks: list[Callable[..., None]] = []


def study_steps(study: Study) -> list[Step]:
    """The study's steps in order, with their questions, cached per `steps_version`.

    Every change to steps goes through this module and bumps `steps_version`; each
    process re-reads the steps when the version it sees on the study row changes.
    """
    cached = _steps_cache.get(study.pk)
    if cached and cached[0] == study.steps_version:
        return cached[1]
    steps = list(Step.objects.filter(study=study).prefetch_related("questions").order_by("position"))
    _steps_cache[study.pk] = (study.steps_version, steps)
    return steps


_study_cache: dict[object, tuple[float, Study]] = {}


def study_cached(*, pk: int | None = None, slug: str | None = None) -> Study | None:
    """The study row, re-read at most every STUDY_CACHE_SECONDS per process.

    Participant pages read the study on every request; a burst of arrivals would re-read
    the same row hundreds of times a second. Changes made in the admin (status, codes,
    limits) reach every server process within the cache time.
    """
    key = ("pk", pk) if pk is not None else ("slug", slug)
    now = time.monotonic()
    hit = _study_cache.get(key)
    if hit and now - hit[0] < settings.STUDY_CACHE_SECONDS:
        return hit[1]
    study = Study.objects.filter(**{key[0]: key[1]}).first()
    if study is not None:
        _study_cache[("pk", study.pk)] = _study_cache[("slug", study.slug)] = (now, study)
    return study


def study_is_locked(study: Study) -> bool:
    return study.locked_at is not None


def study_lock(*, study: Study) -> None:
    """Mark that a real participant has entered: the study stays frozen from now on."""
    if study.entered_at is None:
        now = timezone.now()
        Study.objects.filter(pk=study.pk, entered_at__isnull=True).update(entered_at=now)
        Study.objects.filter(pk=study.pk, locked_at__isnull=True).update(locked_at=now)
        study.entered_at = now
        study.locked_at = study.locked_at or now


def study_steps_changed(*, study: Study) -> None:
    """Call inside the transaction that changed steps or questions of `study`."""
    if study_is_locked(Study.objects.get(pk=study.pk)):
        raise StudyLocked(
            "This study is frozen since it went live, so its steps cannot change. Set it back to "
            "draft if nobody has taken part yet, or duplicate it to make a new version."
        )
    Study.objects.filter(pk=study.pk).update(steps_version=F("steps_version") + 1)


@transaction.atomic
def steps_arrange(*, study: Study, saved: list[Step] = (), deleted: list[Step] = ()) -> None:
    """Apply an edit of a study's list of steps, as the admin makes it.

    `saved` are new steps, or existing ones with changed fields (title, configuration,
    position); each goes to the position it asks for. Where an untouched step holds that
    position, a new step or one moving up goes before it, and one moving down goes after
    it: adding a step at 2 inserts it before the old second step, moving step 3 to 1 puts
    it first, moving step 1 to 3 puts it third. `deleted` steps are removed. Positions then
    run 1..n. A new step without a configuration gets its kind's defaults. Refused
    (StudyLocked) once real participants have entered.
    """
    study_steps_changed(study=study)
    for step in deleted:
        step.delete()
    edited = [s.pk for s in saved if s.pk]
    was_at = dict(Step.objects.filter(pk__in=edited).values_list("pk", "position"))
    untouched = list(Step.objects.filter(study=study).exclude(pk__in=edited).order_by("position", "id"))
    # Park every step far from 1..n first, so the unique (study, position) constraint holds
    # at every statement whatever the new order.
    for offset, step in enumerate(untouched):
        Step.objects.filter(pk=step.pk).update(position=30000 + offset)
    order = [((step.position, 1, offset), step.pk) for offset, step in enumerate(untouched)]
    for offset, step in enumerate(saved):
        wanted, before = step.position, was_at.get(step.pk)
        moving_down = before is not None and before < wanted
        if not step.pk and not step.config:
            step.config = registry.get(step.kind).config(Step(config={}))
        step.study = study
        step.position = 20000 + offset
        step.save()
        order.append(((wanted, 2 if moving_down else 0, offset), step.pk))
    for position, (_, step_id) in enumerate(sorted(order), start=1):
        Step.objects.filter(pk=step_id).update(position=position)
    for step in saved:
        step.refresh_from_db(fields=["position"])


def study_problems(study: Study) -> list[str]:
    """What stops the study from running correctly; empty when it may go live."""
    steps = list(Step.objects.filter(study=study).prefetch_related("questions").order_by("position"))
    if not steps:
        return ["The study has no steps."]
    problems: list[str] = []
    if [s.position for s in steps] != list(range(1, len(steps) + 1)):
        problems.append("Step positions must run 1, 2, 3, … without gaps.")
    keys: dict[str, int] = {}
    for step in steps:
        try:
            kind = registry.get(step.kind)
        except LookupError:
            problems.append(f'Step {step.position}: there is no step kind called "{step.kind}".')
            continue
        try:
            kind.clean_config(kind.config(step))
        except ValidationError as exc:
            reasons = "; ".join(message.rstrip(".") for message in exc.messages)
            problems.append(f"Step {step.position}: its settings are not valid: {reasons}.")
        for q in step.questions.all():
            if q.key in keys:
                problems.append(
                    f'The question key "{q.key}" is used in step {keys[q.key]} and in step {step.position}.'
                )
            keys[q.key] = step.position
        problems += [f"Step {step.position}: {p}" for p in kind.check_study(study, step, steps)]
    return problems + _study_wide_problems(study, steps)


CODE_LABELS = {
    "completion_code": "completion code",
    "failed_check_code": "failed-check code",
    "no_consent_code": "no-consent code",
    "screened_out_code": "screened-out code",
}


def attention_item_count(steps: list[Step]) -> int:
    """The attention-check items a participant meets in these steps (each failure counts one)."""
    return sum(kind.attention_items(s) for s in steps if (kind := registry.find(s.kind)))


def _study_wide_problems(study: Study, steps: list[Step]) -> list[str]:
    """The settings that only make sense together: codes, attention checks, Prolific."""
    problems = []
    for field in ("completion_code", "failed_check_code", "no_consent_code"):
        if not getattr(study, field).strip():
            problems.append(f"The study has no {CODE_LABELS[field]}.")
    first: dict[str, str] = {}
    for field, label in CODE_LABELS.items():
        code = getattr(study, field).strip()
        if code and code in first:
            problems.append(
                f"The {first[code]} and the {label} are the same ({code}), so Prolific cannot tell "
                "those participants apart: give each its own code."
            )
        first.setdefault(code, label)
    items = attention_item_count(steps)
    needed = max(study.attention_failures_to_end, 1)
    if items and needed > items:
        problems.append(
            f"A participant is ended after failing {needed} attention checks, but the study has only "
            f"{items} check item{'s' if items != 1 else ''}, so no one can ever be ended for failing "
            "them: add check items or lower the number of failures that end the study."
        )
    if not study.prolific_study_id.strip() and not study.pilot:
        problems.append(
            "The Prolific STUDY_ID is not set, so links carrying any STUDY_ID are accepted: copy it "
            "from the study's page on Prolific, or mark the study as a pilot."
        )
    return problems


def study_warnings(study: Study) -> list[str]:
    """What is worth a look before going live without stopping it, each a plain sentence: this
    study's codes that a study which has gone live also uses (a duplicate keeps the original's),
    so a participant of one could submit the code they know from the other without doing this
    one (Prolific gives each study its own codes; a second wave reusing them is the researcher's
    call); ending at the first failed check where Prolific would not back a rejection; and what
    each step's kind finds (`StepKind.check_warnings`)."""
    steps = list(Step.objects.filter(study=study).prefetch_related("questions").order_by("position"))
    per_step = [
        f"Step {step.position}: {warning}"
        for step in steps
        if (kind := registry.find(step.kind))
        for warning in kind.check_warnings(study, step, steps)
    ]
    return _shared_code_warnings(study) + _attention_rule_warnings(study, steps) + per_step


# Prolific's rule for rejecting on attention checks: one failure suffices only in studies under
# 5 minutes; from 5 minutes on, two or more are needed (shared/prolific.md, "Attention checks").
ONE_FAILURE_MINUTES = 5


def _attention_rule_warnings(study: Study, steps: list[Step]) -> list[str]:
    """A study of 5 minutes or more that ends participants at their first failed check: the
    go-live checks said "No problems found" although Prolific would not back a rejection for it
    (the researcher walk). Worth a look, not a stop: ending without rejecting is allowed."""
    if study.attention_failures_to_end > 1 or study.estimated_minutes < ONE_FAILURE_MINUTES:
        return []
    if not attention_item_count(steps):
        return []
    return [
        f"A participant is ended with the failed-check code at their first failed attention check, "
        f"but the study takes {study.estimated_minutes} minutes: Prolific allows rejecting for "
        f"failed checks only after two or more failures in studies of {ONE_FAILURE_MINUTES} minutes "
        "or longer. Set 'Attention failures to end' to 2 or more, or do not reject those who "
        "enter the failed-check code."
    ]


def _shared_code_warnings(study: Study) -> list[str]:
    mine = {getattr(study, field).strip(): label for field, label in CODE_LABELS.items()}
    mine.pop("", None)
    if not mine:
        return []
    others = Study.objects.exclude(pk=study.pk).filter(locked_at__isnull=False)
    found: dict[str, set[str]] = {}
    for other in others.only("slug", *CODE_LABELS):
        for field in CODE_LABELS:
            code = getattr(other, field).strip()
            if code in mine:
                found.setdefault(code, set()).add(other.slug)
    return [
        f"The {mine[code]} ({code}) is also a code of {', '.join(sorted(slugs))}, which has gone live: "
        "give this study the codes Prolific gives it."
        for code, slugs in found.items()
    ]


BACK_TO_DRAFT_REFUSED = (
    "Participants have taken this study, so it cannot go back to draft: use 'Duplicate' on its page "
    "to make a new version."
)


def study_may_go_back_to_draft(study: Study) -> bool:
    """Until a real participant has entered (the row as stored: a participant may just have)."""
    return not Study.objects.filter(pk=study.pk, entered_at__isnull=False).exists()


@transaction.atomic
def study_set_status(*, study: Study, status: str) -> None:
    """Change a study's status. Going live checks the design first, then freezes the study:
    its snapshot and SHA-256 are taken (the pre-registration lock) and its steps and the
    content it uses can no longer change. Back to draft is allowed until a real participant
    has entered (then the freeze is lifted, to be taken again at the next go-live)."""
    now = timezone.now()
    changes: dict = {"status": status, "updated_at": now}
    if status == Study.Status.LIVE:
        problems = study_problems(study)
        if problems:
            raise ValueError("The study cannot go live: " + " ".join(problems))
        if study.snapshot_sha256 == "":
            snapshot = study_snapshot(study)
            frozen = {"snapshot": snapshot, "snapshot_sha256": digest(snapshot), "snapshot_at": now}
            changes.update(frozen, locked_at=now)
    elif status == Study.Status.DRAFT and study.status != Study.Status.DRAFT:
        if not study_may_go_back_to_draft(study):
            raise ValueError(BACK_TO_DRAFT_REFUSED)
        changes.update(snapshot=None, snapshot_sha256="", snapshot_at=None, locked_at=None)
    Study.objects.filter(pk=study.pk).update(**changes)
    for name, value in changes.items():
        setattr(study, name, value)


@transaction.atomic
def study_duplicate(*, study: Study, slug: str) -> Study:
    """Copy a study with its steps and questions as a new draft (for a changed design)."""
    old_steps = list(study.steps.prefetch_related("questions"))
    copy = Study.objects.get(pk=study.pk)
    copy.pk = None
    copy.slug = slug
    copy.title = study.title
    copy.status = Study.Status.DRAFT
    copy.locked_at = copy.entered_at = None
    copy.snapshot, copy.snapshot_sha256, copy.snapshot_at = None, "", None
    copy.steps_version = 1
    copy.prolific_study_id = ""
    copy.pilot = False  # a real run is not a pilot unless ticked again (no STUDY_ID check, offline model)
    copy.save()
    for step in old_steps:
        questions = list(step.questions.all())
        step.pk = None
        step.study = copy
        step.save()
        for q in questions:
            q.pk = None
            q.step = step
            q.save()
    translations_copy(source=study, copy=copy)
    for hook in duplicate_hooks:
        hook(source=study, copy=copy)
    return copy


STUDY_FIELDS = {
    "title",
    "language",
    "notes",
    "status",
    "prolific_study_id",
    "completion_code",
    "failed_check_code",
    "no_consent_code",
    "screened_out_code",
    "screened_out_message",
    "failed_check_message",
    "estimated_minutes",
    "time_limit_minutes",
    "attention_failures_to_end",
    "wpm_cap",
    "target_per_item",
    "seed",
    "exclusion_frees_place",
    "pilot",
    "analysis_plan",
}


@transaction.atomic
def study_build(*, spec: dict) -> Study:
    """Create a study with its steps and questions from a plain description (demo content,
    tests, scripted set-ups). Every config and question is validated like the admin does.
    `translations` gives the study's texts in other languages (see studies.texts)."""
    fields = {k: v for k, v in spec.items() if k in STUDY_FIELDS}
    study = Study(slug=spec["slug"], **fields)
    study.full_clean()
    study.save()
    for position, step_spec in enumerate(spec["steps"], start=1):
        kind = registry.get(step_spec["kind"])
        config = kind.clean_config({**kind.config(Step(config={})), **step_spec.get("config", {})})
        step = Step.objects.create(
            study=study,
            position=position,
            kind=kind.key,
            title=step_spec["title"],
            config=config,
        )
        for q_position, q_spec in enumerate(step_spec.get("questions", []), start=1):
            q_fields = dict(q_spec)
            for name in ("options", "expected_answer"):
                if isinstance(q_fields.get(name), list):
                    q_fields[name] = "\n".join(str(v) for v in q_fields[name])
            question = Question(step=step, position=q_position, **q_fields)
            question.full_clean()
            question.save()
    # The study's texts in other languages: {language: {"study": {...}, "steps": {position: ...}}}
    translations_build(study=study, spec=spec.get("translations", {}))
    return study
