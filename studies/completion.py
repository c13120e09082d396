"""What the experimenter copies into Prolific: the study URL with Prolific's three
placeholders, and the study's completion codes with the code types Prolific expects
(../shared/prolific.md: COMPLETED, FAILED_ATTENTION_CHECK, NO_CONSENT, FIXED_SCREENOUT, …)."""

from __future__ import annotations

from dataclasses import dataclass

from studies.models import Step, Study

# Prolific replaces these in the study URL with the participant's, the study's and the
# submission's ids.
PLACEHOLDERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def study_url(base_url: str, study: Study) -> str:
    """The URL to paste into Prolific's "study link" field."""
    return f"{base_url.rstrip('/')}/s/{study.slug}/?{PLACEHOLDERS}"


@dataclass(frozen=True)
class CompletionCode:
    code: str
    prolific_type: str  # Prolific's code type
    when: str  # when a participant leaves with it
    action: str  # what Prolific should do with the submission


STUDY_CODES = [
    (
        "completion_code",
        "COMPLETED",
        "Finished every step.",
        "Approve (after reviewing exclusions and flags).",
    ),
    (
        "failed_check_code",
        "FAILED_ATTENTION_CHECK",
        "Failed the attention checks (the study's threshold).",
        "Review: Prolific allows a rejection for failed attention checks (two or more from 5 minutes on).",
    ),
    (
        "no_consent_code",
        "NO_CONSENT",
        "Declined consent.",
        "Ask the participant to return the study (no payment).",
    ),
    (
        "screened_out_code",
        "FIXED_SCREENOUT",
        "Screened out by the screening step.",
        "Pay the fixed screen-out reward.",
    ),
]


def completion_codes(study: Study) -> list[CompletionCode]:
    """The codes a participant of this study can leave with, each with its Prolific type. Codes
    set by a step (e.g. a persuasion dialogue whose partner left) are OTHER: review them."""
    codes = [
        CompletionCode(getattr(study, field), kind, when, action)
        for field, kind, when, action in STUDY_CODES
        if getattr(study, field)
    ]
    seen = {c.code for c in codes}
    for step in Step.objects.filter(study=study).order_by("position"):
        for name, value in sorted((step.config or {}).items()):
            if name.endswith("_code") and isinstance(value, str) and value and value not in seen:
                seen.add(value)
                when = f"Step {step.position} ({step.title}): {name.removesuffix('_code').replace('_', ' ')}."
                codes.append(
                    CompletionCode(value, "OTHER", when, "Review, then approve or ask for a return.")
                )
    return codes
