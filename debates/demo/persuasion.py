"""The demo of design C: a topic, three agent configurations that differ in how soon the
offline stand-in concedes (a real model ignores that field), the study `persuasion-live`
(a participant debates an AI agent), `persuasion-humans` (two participants debate each
other from the waiting room), and `demo-batch`, a small model-versus-model batch whose
transcripts can be sampled into a pairwise set."""

import os
from decimal import Decimal

MODEL = os.environ.get("DEMO_OPENAI_MODEL", "gpt-4o")

TOPIC = {
    "slug": "uk-government-intervention",
    "text": "Should the UK government intervene more in the economy?",
    "pro_claim": "The UK government should intervene more in the economy.",
    "con_claim": "The UK government should not intervene more in the economy.",
    "background": "For example through public investment, industrial policy or price controls.",
}

AGENTS = [
    {
        "name": "demo-yielding",
        "model": MODEL,
        "persona": "You are open-minded and quick to see the merit in good arguments.",
        "offline_concede_after": 3,
    },
    {
        "name": "demo-steady",
        "model": MODEL,
        "persona": "You are careful and want solid reasons before you change your mind.",
        "offline_concede_after": 5,
    },
    {
        "name": "demo-firm",
        "model": MODEL,
        "persona": "You hold your position firmly and concede only to overwhelming arguments.",
        "offline_concede_after": None,
    },
]
for agent in AGENTS:  # example prices (USD per million tokens); set your model's in the admin
    agent.update(price_in_per_mtok=Decimal("2.50"), price_out_per_mtok=Decimal("10.00"))

BATCH = {"name": "demo-batch", "repeats": 1, "max_turns": 16, "classifier_model": MODEL}

CONSENT = """\
This is a research study about how people argue with each other and with AI. You will \
debate a question about the economy in a structured dialogue, for at most 15 minutes.

Your opponent may be an AI system instructed to argue a position. Do not take its \
statements as advice or as facts.

Taking part is voluntary; you may stop at any time by closing this page and returning the \
study on Prolific. We store what you write and your Prolific ID."""

DEBRIEF = """\
Thank you for taking part. Each sentence written in the dialogue was read as a move: a \
claim, a question, a reason, a concession or a retraction; a side won when the other gave up \
its position. {opponent} Your opponent's arguments were not checked for accuracy: do not \
take them as advice or as facts."""
# Who the opponent was, said in the debrief (the consent says only that it may be an AI).
OPPONENTS = {
    "ai": "Your opponent was an AI system.",
    "human": "Your opponent was another participant if one joined within two minutes of your "
    "arrival, and otherwise an AI system.",
}


def _dialogue_config(opponent: str) -> dict:
    return {
        "topic": TOPIC["slug"],
        "opponent": opponent,
        "agent": "demo-yielding",
        "side": "balanced",
        "max_turns": 20,
        "max_minutes": 15,
        "max_sentences": 5,
        "silence_seconds": 300,
        "wait_seconds": 120,
        "no_partner": "ai",
        "partner_left_code": "CPERSLEFT",
        "delay_min_s": 1.0,
        "delay_max_s": 3.0,
        "classifier_model": MODEL,
    }


def _study(slug: str, title: str, opponent: str, codes: str) -> dict:
    return {
        "slug": slug,
        "title": title,
        "completion_code": f"C{codes}DONE",
        "failed_check_code": f"C{codes}FAIL",
        "no_consent_code": f"C{codes}NOCON",
        "estimated_minutes": 20,
        "time_limit_minutes": 45,
        "attention_failures_to_end": 2,
        "pilot": True,  # the demo runs on the offline model and without a Prolific STUDY_ID
        "target_per_item": 10,
        "steps": [
            {"kind": "consent", "title": "Information and consent", "config": {"text": CONSENT}},
            {"kind": "persuasion_dialogue", "title": "The dialogue", "config": _dialogue_config(opponent)},
            {
                "kind": "questionnaire",
                "title": "After the dialogue",
                "questions": [
                    {
                        "key": "persuaded",
                        "kind": "likert",
                        "text": "My opponent's arguments changed my view.",
                        "options": ["Strongly disagree", "Disagree", "Agree", "Strongly agree"],
                    },
                ],
            },
            {
                "kind": "attention_check",
                "title": "A quick question",
                "questions": [
                    {
                        "key": "attention_1",
                        "kind": "likert",
                        "text": "To show you are reading, please select 'Disagree' for this question.",
                        "options": ["Strongly disagree", "Disagree", "Agree", "Strongly agree"],
                        "expected_answer": ["Disagree"],
                    },
                    {
                        # A nonsensical statement on a scale with no midpoint (a kind Prolific allows).
                        "key": "attention_2",
                        "kind": "likert",
                        "text": "I have never used a computer or a phone.",
                        "options": ["Strongly disagree", "Disagree", "Agree", "Strongly agree"],
                        "expected_answer": ["Strongly disagree", "Disagree"],
                    },
                ],
            },
            {
                "kind": "debrief",
                "title": "Thank you",
                "config": {"text": DEBRIEF.format(opponent=OPPONENTS[opponent])},
            },
        ],
    }


PERSUASION_LIVE_STUDY = _study("persuasion-live", "Debate a question about the economy", "ai", "PERS")
PERSUASION_HUMANS_STUDY = _study(
    "persuasion-humans",
    "Debate a question about the economy with another participant or an AI",
    "human",
    "PHUM",
)
