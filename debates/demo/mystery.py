"""The demo study of design A: `mystery-debate`, built on the team's own cases."""

from pathlib import Path

from debates.demo.mystery_de import MYSTERY_STUDY_DE

CASES_FILE = Path(__file__).with_name("mystery_cases.json")

LIKERT_AGREE = ["Strongly disagree", "Disagree", "Agree", "Strongly agree"]
FAMILIARITY = ["Not at all", "Slightly", "Moderately", "Very", "Extremely"]

CONSENT = """\
This is a research study about how people judge arguments. You will read a short detective \
story and a debate between two sides about who is responsible, then answer some questions. \
It takes about 15 minutes.

Taking part is voluntary. You may stop at any time by closing this page and returning the \
study on Prolific. We store your answers and your Prolific ID; we do not ask for your name. \
Your answers are analysed together with those of other participants and published only in \
aggregate.

A few questions check that you are reading carefully; please follow their instructions."""

INSTRUCTIONS = """\
First you will read a mystery story. Exactly one of the people in it is responsible.

Next you will read a debate in six turns. Side A argues that one person is responsible and \
Side B argues that it is someone else. One of the two sides is arguing for the truth.

Then you will decide which side argued for the person who is truly responsible, say how \
confident you are and explain why. There is no time pressure: read at your own pace."""

DEBRIEF = """\
Thank you for taking part.

The debates in this study were written for research. In some of them, one side was written \
to use a rhetorical technique, such as repeating an early claim, using jargon, being \
verbose, or using faulty reasoning, to see whether such techniques sway judges. The stories \
and the people in them are fictional.

Press the button below to return to Prolific and record your completion."""

MYSTERY_STUDY = {
    "slug": "mystery-debate",
    "title": "Who did it? Judging a debate about a mystery",
    "completion_code": "CMYSTDONE",
    "failed_check_code": "CMYSTFAIL",
    "no_consent_code": "CMYSTNOCON",
    "estimated_minutes": 15,
    "attention_failures_to_end": 2,
    "pilot": True,  # the demo runs on the offline model and without a Prolific STUDY_ID
    "wpm_cap": 500,
    "target_per_item": 6,
    "steps": [
        {"kind": "consent", "title": "Information and consent", "config": {"text": CONSENT}},
        {"kind": "instructions", "title": "What you will do", "config": {"text": INSTRUCTIONS}},
        {"kind": "story", "title": "The story", "config": {}},
        {"kind": "dialogue", "title": "The debate", "config": {}},
        {"kind": "judgement", "title": "Your judgement", "config": {"reasoning_min_length": 30}},
        {
            "kind": "attention_check",
            "title": "A quick question",
            "questions": [
                {
                    "key": "attention_1",
                    "kind": "likert",
                    "text": "It is important that you pay attention to this study. "
                    "Please select 'Strongly disagree' for this question.",
                    "options": LIKERT_AGREE,
                    "expected_answer": ["Strongly disagree"],
                }
            ],
        },
        {"kind": "bias_detection", "title": "About the debate", "config": {}},
        {
            "kind": "recall_check",
            "title": "One more question about the debate",
            "config": {"about_side": "A"},
        },
        {
            "kind": "questionnaire",
            "title": "Your experience",
            "questions": [
                {
                    "key": "expertise_mysteries",
                    "kind": "likert",
                    "text": "How familiar are you with detective stories and mystery puzzles?",
                    "options": FAMILIARITY,
                },
                {
                    "key": "expertise_debate",
                    "kind": "likert",
                    "text": "How much experience do you have with formal debate or judging arguments?",
                    "options": FAMILIARITY,
                },
                {
                    "key": "expertise_self",
                    "kind": "slider",
                    "text": "How good do you think you are at telling a strong argument from a weak one?",
                    "options": ["Not good at all", "Excellent"],
                    "min_value": 0,
                    "max_value": 100,
                },
                {
                    "key": "attention_2",
                    "kind": "likert",
                    "text": "I have been to every country in the world this week.",
                    "options": LIKERT_AGREE,
                    "expected_answer": ["Strongly disagree", "Disagree"],
                },
            ],
        },
        {
            "kind": "questionnaire",
            "title": "About you",
            "questions": [
                {
                    "key": "age",
                    "kind": "number",
                    "text": "How old are you?",
                    "min_value": 18,
                    "max_value": 100,
                },
                {
                    "key": "gender",
                    "kind": "single_choice",
                    "text": "What is your gender?",
                    "options": ["Woman", "Man", "Non-binary", "Prefer to self-describe", "Prefer not to say"],
                    "specify_option": "Prefer to self-describe",
                },
                {
                    "key": "education",
                    "kind": "single_choice",
                    "text": "What is the highest level of education you have completed?",
                    "options": [
                        "Secondary school or less",
                        "Vocational qualification",
                        "Undergraduate degree",
                        "Postgraduate degree",
                        "Prefer not to say",
                    ],
                },
                {
                    "key": "comments",
                    "kind": "text",
                    "text": "Anything you would like to tell us about the study? (optional)",
                    "required": False,
                },
            ],
        },
        {"kind": "debrief", "title": "Thank you", "config": {"text": DEBRIEF}},
    ],
    # The study in German too (docs/translation.md): its own texts; the cases stay in English.
    "translations": {"de": MYSTERY_STUDY_DE},
}
