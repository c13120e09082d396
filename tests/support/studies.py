"""Building studies for tests through the same service the admin and the demo use."""

from __future__ import annotations

import secrets

from studies.models import Study
from studies.services import study_build, study_set_status

CONSENT_STEP = {"kind": "consent", "title": "Consent", "config": {"text": "Please agree."}}
DEBRIEF_STEP = {"kind": "debrief", "title": "Thanks", "config": {"text": "Bye."}}

# The STUDY_ID every test link carries (tests/support/cast.entry_url).
STUDY_ID = "a" * 24

# consent → three questionnaire pages (the second: two attention checks) → debrief.
QUESTIONNAIRE_STEPS = [
    CONSENT_STEP,
    {
        "kind": "questionnaire",
        "title": "Page one",
        "questions": [
            {"key": "colour", "kind": "single_choice", "text": "Pick a colour", "options": ["Red", "Blue"]},
            {"key": "agree", "kind": "likert", "text": "I like tests", "options": ["No", "Meh", "Yes"]},
        ],
    },
    {
        "kind": "attention_check",
        "title": "Page two",
        "questions": [
            {
                "key": "check_1",
                "kind": "likert",
                "text": "Select 'Disagree' for this question.",
                "options": ["Strongly disagree", "Disagree", "Agree", "Strongly agree"],
                "expected_answer": ["Disagree"],
            },
            {
                "key": "check_2",
                "kind": "single_choice",
                "text": "Which is a number? Choose 'Seven'.",
                "options": ["Seven", "Blue", "Paris"],
                "expected_answer": ["Seven"],
            },
        ],
    },
    {
        "kind": "questionnaire",
        "title": "Page three",
        "questions": [
            {"key": "age", "kind": "number", "text": "Age", "min_value": 18, "max_value": 99},
            {"key": "warmth", "kind": "slider", "text": "How warm?", "min_value": 0, "max_value": 100},
            {"key": "why", "kind": "text", "text": "Why?", "min_length": 10},
        ],
    },
    DEBRIEF_STEP,
]


def build_study(steps: list[dict], **fields) -> Study:
    """A study with these steps, live unless `status` says otherwise, with the Prolific
    STUDY_ID the test links carry."""
    spec = {
        "prolific_study_id": STUDY_ID,
        "slug": fields.pop("slug", f"study-{secrets.token_hex(4)}"),
        "title": "A test study",
        "completion_code": "CDONE",
        "failed_check_code": "CFAIL",
        "no_consent_code": "CNOCON",
        "screened_out_code": "CSCREEN",
        **fields,
        "steps": steps,
    }
    status = spec.pop("status", "live")
    study = study_build(spec=spec)
    if status != "draft":
        study_set_status(study=study, status=status)
    return study


# --- The study's admin page as the browser posts it ---------------------------------------

STUDY_FIELDS = {
    "title": "A test study",
    "status": "draft",
    "notes": "",
    "prolific_study_id": "",
    "completion_code": "CDONE",
    "failed_check_code": "CFAIL",
    "no_consent_code": "CNOCON",
    "screened_out_code": "CSCREEN",
    "estimated_minutes": 10,
    "time_limit_minutes": 0,
    "attention_failures_to_end": 2,
    "wpm_cap": "",
    "target_per_item": 6,
    "exclusion_frees_place": "on",
    "analysis_plan": "",
}


def management(prefix: str, total: int, initial: int) -> dict:
    return {
        f"{prefix}-TOTAL_FORMS": total,
        f"{prefix}-INITIAL_FORMS": initial,
        f"{prefix}-MIN_NUM_FORMS": 0,
        f"{prefix}-MAX_NUM_FORMS": 1000,
    }


def study_page_post(study: Study, rows: list[dict]) -> dict:
    """The study page as the browser posts it, with these step rows (in table order)."""
    data = {**STUDY_FIELDS, "slug": study.slug, "seed": study.seed, **management("steps", len(rows), 0)}
    for prefix in ("study_dialogues", "study_claims", "condition_targets"):
        data |= management(prefix, 0, 0)
    initial = 0
    for n, row in enumerate(rows):
        if "id" in row:
            initial += 1
        data |= {f"steps-{n}-{name}": value for name, value in {"study": study.pk, **row}.items()}
    data["steps-INITIAL_FORMS"] = initial
    return data
