"""Create the benchmark study through the project's own services (run with DATABASE_URL set).

    python -m bench.study

Prints one JSON line: the study's slug, completion code, number of steps and the number of
Response rows one completed participant leaves behind.
"""

from __future__ import annotations

import json
import os

SLUG = "bench-arrivals"
COMPLETION_CODE = "CBENCHDONE"

SPEC = {
    "slug": SLUG,
    "title": "Rostrum arrivals benchmark",
    "completion_code": COMPLETION_CODE,
    "failed_check_code": "CBENCHFAIL",
    "no_consent_code": "CBENCHNOCON",
    "screened_out_code": "CBENCHSCREEN",
    "estimated_minutes": 5,
    # A pilot: the simulated arrivals carry random STUDY_IDs (a real study names its own, and
    # the go-live checks refuse a non-pilot study without it).
    "pilot": True,
    "steps": [
        {"kind": "consent", "title": "Consent", "config": {"text": "Please read this and agree."}},
        {
            "kind": "questionnaire",
            "title": "About you",
            "questions": [
                {
                    "key": "colour",
                    "kind": "single_choice",
                    "text": "Pick a colour",
                    "options": ["Red", "Green", "Blue"],
                },
                {
                    "key": "agree",
                    "kind": "likert",
                    "text": "I enjoy taking part in studies.",
                    "options": [
                        "Strongly disagree",
                        "Disagree",
                        "Neutral",
                        "Agree",
                        "Strongly agree",
                    ],
                },
            ],
        },
        {
            "kind": "questionnaire",
            "title": "Numbers",
            "questions": [
                {
                    "key": "warmth",
                    "kind": "slider",
                    "text": "How warm is it?",
                    "min_value": 0,
                    "max_value": 100,
                },
                {"key": "age", "kind": "number", "text": "Your age", "min_value": 18, "max_value": 99},
            ],
        },
        {
            "kind": "questionnaire",
            "title": "In your words",
            "questions": [
                {"key": "why", "kind": "text", "text": "Why did you take part?", "min_length": 10},
                {
                    "key": "again",
                    "kind": "single_choice",
                    "text": "Would you take part again?",
                    "options": ["Yes", "No", "Maybe"],
                },
            ],
        },
        {"kind": "debrief", "title": "Thank you", "config": {"text": "That is all. Thank you!"}},
    ],
}

# Stored answers per completed participant: the consent answer plus one row per item.
ANSWERS_PER_PARTICIPANT = sum(1 for s in SPEC["steps"] if s["kind"] == "consent") + sum(
    len(s.get("questions", [])) for s in SPEC["steps"]
)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from studies.services import study_build, study_set_status

    study = study_build(spec=SPEC)
    study_set_status(study=study, status="live")
    print(
        json.dumps(
            {
                "slug": study.slug,
                "completion_code": study.completion_code,
                "steps": len(SPEC["steps"]),
                "answers_per_participant": ANSWERS_PER_PARTICIPANT,
            }
        )
    )


if __name__ == "__main__":
    main()
