"""The export tables every study has: its participants, their responses and step times, with
the flags (evidence of automated or careless answering) and how free text was written."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from django.db.models import Count

from analysis.exports.table import ALL, CHUNK, Table, active_exclusions, analysed, col, flag, iso
from debates.models import DialogueAssignment
from participants.flags import flag_summary
from participants.models import Flag, Participant, Response, StepVisit, TextEntry
from studies.models import Study
from studies.services import study_steps

FLAG_KINDS = ", ".join(f"{value} ({label.lower()})" for value, label in Flag.Kind.choices)


def flag_counts(study: Study) -> dict[tuple[int, int], dict[str, int]]:
    """Flags per (participant id, step position): {kind: count}."""
    counts: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    rows = (
        Flag.objects.filter(analysed(), participant__study=study)
        .values_list("participant_id", "position", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    for participant_id, position, kind, n in rows.iterator(chunk_size=CHUNK):
        counts[participant_id, position][kind] = n
    return counts


def flags_per_participant(study: Study) -> dict[int, dict[str, int]]:
    totals: dict[int, dict[str, int]] = defaultdict(dict)
    for (participant_id, _), kinds in flag_counts(study).items():
        for kind, n in kinds.items():
            totals[participant_id][kind] = totals[participant_id].get(kind, 0) + n
    return totals


# --- participants ------------------------------------------------------------------------


def participant_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    exclusions = active_exclusions(study)
    flags = flags_per_participant(study)
    titles = {s.position: s.title for s in study_steps(study)}
    assignments = {
        a["participant_id"]: a
        for a in DialogueAssignment.objects.filter(participant__study=study).values(
            "participant_id",
            "dialogue__slug",
            "dialogue__case__slug",
            "dialogue__condition",
            "dialogue__active_side",
            "dialogue__variant",
            "dialogue__side_a",
            "assigned_at",
            "words",
            "reading_ms",
            "reading_server_ms",
            "reading_client_ms",
            "reread_ms",
            "wpm",
        )
    }
    queryset = Participant.objects.filter(analysed(""), study=study).order_by("id").values()[window]
    for p in queryset.iterator(chunk_size=CHUNK):
        a = assignments.get(p["id"], {})
        finished = p["finished_at"]
        yield {
            **p,
            "participant_id": p["id"],
            "group": p["group"],
            "language": p["language"] or study.language,
            "step_title": titles.get(p["position"], "") if p["status"] == "active" else "",
            "started_at": iso(p["started_at"]),
            "finished_at": iso(finished),
            "last_seen_at": iso(p["last_seen_at"]),
            "expires_at": iso(p["expires_at"]),
            "duration_s": round((finished - p["started_at"]).total_seconds(), 1) if finished else "",
            "excluded": flag(p["excluded"]),
            "exclusion_reasons": ";".join(sorted(exclusions.get(p["id"], []))),
            "flags": flag_summary(flags.get(p["id"], {})),
            "flag_count": sum(flags.get(p["id"], {}).values()),
            "dialogue": a.get("dialogue__slug", ""),
            "case": a.get("dialogue__case__slug", ""),
            "condition": a.get("dialogue__condition", ""),
            "active_side": a.get("dialogue__active_side", ""),
            "variant": a.get("dialogue__variant", ""),
            "side_a": a.get("dialogue__side_a", ""),
            "assigned_at": iso(a.get("assigned_at")),
            "words": a.get("words"),
            "reading_ms": a.get("reading_ms"),
            "reading_server_ms": a.get("reading_server_ms"),
            "reading_client_ms": a.get("reading_client_ms"),
            "reread_ms": a.get("reread_ms"),
            "wpm": "" if a.get("wpm") is None else round(a["wpm"], 1),
        }


PARTICIPANT_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant (joins the other tables)."),
    col("prolific_pid", "PROLIFIC_PID from the study link."),
    col("prolific_study_id", "STUDY_ID from the study link."),
    col("prolific_session_id", "SESSION_ID from the study link (Prolific's submission id)."),
    col(
        "status",
        "active, completed, no_consent, failed_check, screened_out, study_full, timed_out or returned.",
    ),
    col("position", "The step the participant is on (or stopped at)."),
    col("step_title", "Title of the current step, for participants still in progress."),
    col("started_at", "First visit of the study link (UTC, ISO 8601)."),
    col("finished_at", "When the participant completed or left the study (UTC)."),
    col("duration_s", "Seconds from start to finish."),
    col("last_seen_at", "Last request from the participant (UTC)."),
    col("expires_at", "When the participant's place is released if not finished (UTC)."),
    col("visits", "Times the study link was opened (refreshes of a step are not counted)."),
    col("attention_failures", "Failed attention-check items."),
    col("group", "Screening group (e.g. mainstream, skeptical); empty without a screening step."),
    col("excluded", "1 if excluded from analysis (an active exclusion exists)."),
    col("exclusion_reasons", "Active exclusion reasons, ';'-separated: attention, recall, wpm, manual."),
    col(
        "flags",
        "Flags (evidence of automated or careless answering, for review; never an exclusion by "
        "themselves) as kind:count, ';'-separated, by kind, e.g. 'fast_page:2;honeypot:1'; empty: none. "
        f"Kinds: {FLAG_KINDS}. Thresholds: docs/decisions.md.",
    ),
    col("flag_count", "Number of flags (0: none)."),
    col("dialogue", "Slug of the assigned dialogue (empty if none was assigned)."),
    col("case", "Slug of the dialogue's case."),
    col("condition", "The condition's slug (paper 000's: baseline, anchoring, fallacy_oversight, …)."),
    col("active_side", "Role carrying the bias intervention: none, culprit or rival."),
    col("variant", "V1 or V2 for biased dialogues; empty for baseline."),
    col("side_a", "Whom side A argues for: culprit or rival."),
    col("assigned_at", "When the dialogue was assigned (UTC)."),
    col("words", "Words in the dialogue's six turns."),
    col(
        "reading_ms",
        "Reading time on the dialogue page (browser's active time when plausible, else server time).",
    ),
    col("reading_server_ms", "Server time from serving the dialogue step to its submission."),
    col("reading_client_ms", "Browser-measured time the dialogue page was visible and focused."),
    col(
        "reread_ms",
        "Time the debate was open again on the judgement page, visible, focused and on screen (browser's "
        "figure, capped by the server's time on that page); empty when the page offered no recap.",
    ),
    col(
        "wpm",
        "Words per minute on the dialogue: words / ((reading_ms + reread_ms) / 60000). The study's cap "
        "applies to it: an exclusion at the cap is lifted when re-reading brings the speed under it.",
    ),
    col("user_agent", "The browser's User-Agent at the first visit (first 300 characters)."),
    col(
        "language",
        "Code of the language the participant's pages were in (e.g. en, de), fixed when they first "
        "opened the study link (docs/translation.md); the study's own language when it offered no "
        "other. Answers are stored as the study's own option texts whatever the language.",
    ),
]


# --- step times --------------------------------------------------------------------------


def step_time_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    flags = flag_counts(study)
    queryset = (
        StepVisit.objects.filter(analysed(), participant__study=study)
        .order_by("participant_id", "position")
        .values()
    )[window]
    for v in queryset.iterator(chunk_size=CHUNK):
        yield {
            **v,
            "shown_at": iso(v["shown_at"]),
            "submitted_at": iso(v["submitted_at"]),
            "flags": flag_summary(flags.get((v["participant_id"], v["position"]), {})),
        }


STEP_TIME_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("position", "Step position in the study."),
    col("step_kind", "Kind of the step (consent, questionnaire, dialogue, …)."),
    col("shown_at", "When the step became the participant's current step, i.e. was first served (UTC)."),
    col("submitted_at", "Submission of the step (UTC)."),
    col("server_ms", "Milliseconds from shown_at to the step's submission, measured by the server."),
    col("client_active_ms", "Milliseconds the page was visible and focused, measured by the browser."),
    col("client_hidden_ms", "Milliseconds the page was hidden (another tab or app)."),
    col("client_blurs", "Times the page lost focus or visibility."),
    col(
        "flags",
        "Flags raised by this step's pages, as kind:count, ';'-separated (kinds as in the "
        "participants table); empty: none.",
    ),
]


# --- responses ---------------------------------------------------------------------------


def text_entries(study: Study) -> dict[tuple[int, int, str], dict]:
    """How each free-text answer was written, by (participant id, position, response key)."""
    rows = (
        TextEntry.objects.filter(analysed(), participant__study=study)
        .exclude(key="")
        .values("participant_id", "position", "key", "keys", "pastes", "pasted_chars", "typing_ms")
    )
    return {(r["participant_id"], r["position"], r["key"]): r for r in rows.iterator(chunk_size=CHUNK)}


def response_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    texts = text_entries(study)
    queryset = (
        Response.objects.filter(analysed(), participant__study=study)
        .order_by("participant_id", "position", "id")
        .values(
            "participant_id",
            "participant__prolific_pid",
            "position",
            "step_kind",
            "key",
            "value",
            "value_num",
            "is_check",
            "passed",
            "created_at",
        )
    )[window]
    for r in queryset.iterator(chunk_size=CHUNK):
        text = texts.get((r["participant_id"], r["position"], r["key"]), {})
        yield {
            **r,
            "text_keys": text.get("keys"),
            "text_pastes": text.get("pastes"),
            "text_pasted_chars": text.get("pasted_chars"),
            "text_typing_ms": text.get("typing_ms"),
            "prolific_pid": r["participant__prolific_pid"],
            "is_check": flag(r["is_check"]),
            "passed": flag(r["passed"]),
            "created_at": iso(r["created_at"]),
        }


RESPONSE_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("prolific_pid", "PROLIFIC_PID."),
    col("position", "Step position the answer was given on."),
    col("step_kind", "Kind of that step."),
    col(
        "key", "Item key (a questionnaire item's key, or e.g. judgement_side, bias_present, recall, consent)."
    ),
    col("value", "The answer as shown to the participant (option text, number or free text)."),
    col("value_num", "Numeric coding: Likert position 1..k, slider or number value; empty otherwise."),
    col("is_check", "1 if the item is an attention or recall check."),
    col("passed", "For checks: 1 if answered as instructed, 0 if not."),
    col("created_at", "When the answer was stored (UTC)."),
    col(
        "text_keys",
        "Free-text answers: key presses in the field, counted by the browser (never what was typed); "
        "empty for other answers, or when the browser sent no counts.",
    ),
    col("text_pastes", "Free-text answers: paste (and drop) events in the field."),
    col(
        "text_pasted_chars",
        "Free-text answers: characters pasted (may exceed the answer's length if pasted text was "
        "deleted; the pasted share is min(text_pasted_chars, length) / length).",
    ),
    col(
        "text_typing_ms",
        "Free-text answers: typing time, the sum of the gaps between key presses, each counted up to 2 s.",
    ),
]


PARTICIPANTS = Table(
    "participants",
    "One row per participant (previews left out).",
    PARTICIPANT_COLUMNS,
    participant_rows,
    windowed=True,
)
RESPONSES = Table("responses", "One row per answered item.", RESPONSE_COLUMNS, response_rows, windowed=True)
STEP_TIMES = Table(
    "step_times",
    "One row per submitted step, with server and browser timing.",
    STEP_TIME_COLUMNS,
    step_time_rows,
    windowed=True,
)
