"""The demo study of design D: `persuasion-pairs`, comparisons of excerpts of the demo's
mystery dialogues; each side's interlocutor is its rhetorical style (a bias intervention,
or 'baseline')."""

PAIRS_SET = {
    "slug": "demo-pairs",
    "title": "Demo: excerpts of the mystery dialogues",
    "seed": 2026,
    "excerpt_turns": 4,
    "per_pair": 4,
    "annotations_per_instance": 3,
    "topic_label": "Who is responsible in a detective mystery",
}

CONSENT = """\
In this study you compare short excerpts of debates about detective mysteries and say \
which speaker argues more persuasively. It takes about 10 minutes.

There are no right or wrong answers, except for a few questions that tell you, in \
brackets, exactly what to answer: please follow those instructions.

Taking part is voluntary; you may stop at any time by returning the study on Prolific. \
We store your answers and your Prolific ID."""

PERSUASION_PAIRS_STUDY = {
    "slug": "persuasion-pairs",
    "title": "Which speaker is more persuasive?",
    "completion_code": "CPAIRDONE",
    "failed_check_code": "CPAIRFAIL",
    "no_consent_code": "CPAIRNOCON",
    "estimated_minutes": 10,
    "attention_failures_to_end": 2,
    "pilot": True,  # the demo runs on the offline model and without a Prolific STUDY_ID
    "steps": [
        {"kind": "consent", "title": "Information and consent", "config": {"text": CONSENT}},
        {
            "kind": "pairwise",
            "title": "Compare the two Speaker As",
            "config": {"instance_set": "demo-pairs", "per_annotator": 3, "checks": 2},
        },
        {
            "kind": "questionnaire",
            "title": "About you",
            "questions": [
                {"key": "age", "kind": "number", "text": "Your age", "min_value": 18, "max_value": 100},
                {
                    "key": "gender",
                    "kind": "single_choice",
                    "text": "Your gender",
                    "options": ["Woman", "Man", "Non-binary", "Prefer not to say"],
                },
                {
                    "key": "political_leaning",
                    "kind": "single_choice",
                    "text": "Where would you place yourself politically?",
                    "options": ["Left", "Centre", "Right", "Prefer not to say"],
                },
            ],
        },
        {"kind": "debrief", "title": "Thank you", "config": {"text": "Thank you for taking part."}},
    ],
}
