"""The demo study of design B: `claim-debate`, live debate and consultancy on claims the
team wrote, with the offline model backend unless OPENAI_API_KEY is set."""

import os
from decimal import Decimal
from pathlib import Path

CLAIMS_FILE = Path(__file__).with_name("claims.json")
AGREE5 = ["Strongly disagree", "Disagree", "Neither agree nor disagree", "Agree", "Strongly agree"]
LIKERT4 = ["Strongly disagree", "Disagree", "Agree", "Strongly agree"]

DEBATERS = [
    {
        "name": "demo-debater",
        "model": os.environ.get("DEMO_OPENAI_MODEL", "gpt-4o"),
        "temperature": 0.2,
        "max_tokens": 400,
        "max_words": 120,
        # Example prices (USD per million tokens); set your model's real prices in the admin.
        "price_in_per_mtok": Decimal("2.50"),
        "price_out_per_mtok": Decimal("10.00"),
    },
]

CONSENT = """\
This is a research study about how people judge factual claims with the help of AI. You \
will answer a few questions about your views, then judge two short claims: first on your \
own, then after a conversation with AI systems, to which you may put questions.

The AI systems are instructed to argue a position; they can be wrong, and they may argue \
for a false answer. Do not take their statements as advice.

Taking part is voluntary; you may stop at any time by closing this page and returning the \
study on Prolific. We store your answers, your messages to the AI and your Prolific ID."""

INSTRUCTIONS = """\
For each claim you first say whether you think it is true or false, and how confident you \
are (0 = a pure guess, 100 = completely sure).

Then you read a short live exchange: either two AI debaters arguing opposite sides, or one \
AI advisor. After each round you may ask a question or pass. Replies appear as they are \
written.

Finally you answer again and explain your answer in a few sentences."""

DEBRIEF = """\
Thank you for taking part. In this study, AI systems were instructed to argue a given \
side, and some of them argued for the wrong answer. Below are the correct answers to the \
claims you judged.

Press the button to return to Prolific and record your completion."""

SESSION_CONFIG = {
    "protocols": "both",
    "protocol_per": "participant",
    "rounds": 3,
    "consultant_side": "random",
    "correct_share": 0.5,
    "debater_a": "demo-debater",
    "debater_b": "demo-debater",
    "consultant": "demo-debater",
    "max_message_chars": 500,
    "min_justification": 40,
}

CLAIM_DEBATE_STUDY = {
    "slug": "claim-debate",
    "title": "True or false? Judging claims with AI debaters",
    "completion_code": "CCLAIMDONE",
    "failed_check_code": "CCLAIMFAIL",
    "no_consent_code": "CCLAIMNOCON",
    "screened_out_code": "CCLAIMSCREEN",
    "estimated_minutes": 20,
    "attention_failures_to_end": 2,
    "pilot": True,  # the demo runs on the offline model and without a Prolific STUDY_ID
    "target_per_item": 3,
    "steps": [
        {"kind": "consent", "title": "Information and consent", "config": {"text": CONSENT}},
        {
            "kind": "screening",
            "title": "About your views",
            "config": {
                "intro": "A few questions about your views and about you.",
                "score_items": "belief_overstated, belief_own_research, belief_trust",
                "reverse_items": "belief_trust",
                # The demo's groups cover every score (means of three items: 1, 4/3, …, 5), so
                # anyone trying it reaches the debate; a study like paper 001's leaves a middle
                # band out ("mainstream: 1 - 2.5", "skeptical: 3.5 - 5"), screened out with
                # screened_out_code.
                "groups": "mainstream: 1 - 3\nskeptical: 3.1 - 5",
            },
            "questions": [
                {
                    "key": "belief_overstated",
                    "kind": "likert",
                    "text": "Scientists tend to overstate the risks of climate change.",
                    "options": AGREE5,
                },
                {
                    "key": "belief_own_research",
                    "kind": "likert",
                    "text": "When it comes to food and health, my own experience is a better guide than "
                    "official advice.",
                    "options": AGREE5,
                },
                {
                    "key": "belief_trust",
                    "kind": "likert",
                    "text": "Scientific bodies can generally be trusted on questions of nutrition and "
                    "climate.",
                    "options": AGREE5,
                },
                {
                    "key": "ai_literacy",
                    "kind": "likert",
                    "text": "I understand how AI chatbots produce their answers.",
                    "options": LIKERT4,
                },
                {
                    "key": "age",
                    "kind": "number",
                    "text": "How old are you?",
                    "min_value": 18,
                    "max_value": 100,
                },
                {
                    "key": "education",
                    "kind": "single_choice",
                    "text": "Highest level of education completed",
                    "options": ["Secondary school or less", "Vocational", "Undergraduate", "Postgraduate"],
                },
            ],
        },
        {"kind": "instructions", "title": "How it works", "config": {"text": INSTRUCTIONS}},
        {"kind": "claim_session", "title": "Claim 1 of 2", "config": SESSION_CONFIG},
        {"kind": "claim_session", "title": "Claim 2 of 2", "config": SESSION_CONFIG},
        {
            "kind": "attention_check",
            "title": "A quick question",
            "questions": [
                {
                    "key": "attention_1",
                    "kind": "likert",
                    "text": "To show you are reading, please select 'Disagree' for this question.",
                    "options": LIKERT4,
                    "expected_answer": ["Disagree"],
                },
                {
                    # A nonsensical statement on a scale with no midpoint (a kind Prolific allows).
                    "key": "attention_2",
                    "kind": "likert",
                    "text": "I have never used a computer or a phone.",
                    "options": LIKERT4,
                    "expected_answer": ["Strongly disagree", "Disagree"],
                },
            ],
        },
        {"kind": "claim_debrief", "title": "Thank you", "config": {"text": DEBRIEF}},
    ],
}
