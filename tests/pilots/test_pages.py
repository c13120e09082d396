"""What a simulated participant reads and answers: the page parsed as a browser shows it
(questions, options with their labels, visible text without the honeypot), instructed-response
items read from their text, the model's answer checked against the form, the offline model."""

import json
import random

import pytest

from participants.models import Participant
from pilots import offline
from pilots.pages import instructed_answer, instructed_answers, parse_step
from pilots.policies import ScriptedPolicy, answer_schema, parse_answer
from tests.support.cast import Walker


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "It is important that you pay attention. Please select 'Strongly disagree' for this question.",
            "sd",
        ),
        ("To show you are reading, please select 'Disagree' for this question.", "d"),
        ("(ATTENTION CHECK: select ‘Agree’)", "a"),
        ('Choose the option "strongly DISAGREE."', "sd"),
        ("I have been to every country in the world this week.", None),  # nothing instructed
        ("Please select 'Maybe' here.", None),  # names no option of the item
    ],
)
def test_an_instructed_response_item_is_read_from_its_text(text, expected):
    options = {"sd": "Strongly disagree", "d": "Disagree", "a": "Agree"}
    assert instructed_answer(text, options) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(AUFMERKSAMKEITSPRÜFUNG: wählen Sie „Stimme nicht zu“)", "d"),  # as Rostrum writes it
        ("Bitte klicken Sie auf 'Stimme zu'.", "a"),
        ("Antworten Sie bei dieser Frage mit »Stimme überhaupt nicht zu«.", "sd"),
        ("Kreuzen Sie „Stimme zu“ an.", "a"),
        ("Wähle bitte die Antwort ‚Stimme nicht zu‘.", "d"),
        ("Ich war diese Woche in jedem Land der Welt.", None),
        ("Bitte wählen Sie „Vielleicht“.", None),
    ],
)
def test_a_german_instructed_response_item_is_read_too(text, expected):
    options = {"sd": "Stimme überhaupt nicht zu", "d": "Stimme nicht zu", "a": "Stimme zu"}
    assert instructed_answer(text, options) == expected


@pytest.mark.django_db
def test_a_real_check_page_is_read_as_a_person_sees_it(questionnaire_study):
    walker = Walker(questionnaire_study)
    walker.enter()
    walker.submit()  # consent
    walker.submit()  # the first questionnaire
    _, form = walker.page()
    assert form.kind == "attention_check" and form.position == "3"
    assert form.questions["check_1"] == "Select 'Disagree' for this question."
    assert list(form.options["check_1"].values())[:2] == ["Strongly disagree", "Disagree"]
    assert instructed_answers(form) == {"check_1": "Disagree", "check_2": "Seven"}
    assert "Select 'Disagree' for this question." in form.text
    assert "Your website" not in form.text  # the honeypot is hidden from people
    assert form.progress == "Step 3 of 5"
    person = type("Person", (), {"rng": random.Random(1), "attentive": True})()
    chosen = ScriptedPolicy().answers(form, person)
    assert chosen["check_1"] == "Disagree" and chosen["check_2"] == "Seven"
    response = walker.submit(chosen)
    assert response.status_code == 303
    assert Participant.objects.get(prolific_pid=walker.pid).attention_failures == 0


def test_the_models_answer_must_fit_the_form():
    html = """<main><form class="step-form" data-step-kind="questionnaire">
    <input type="hidden" name="_position" value="2">
    <fieldset><legend>Pick one</legend><label class="choice"><input type="radio" name="q" value="x">
    <span>Ex</span></label><label class="choice"><input type="radio" name="q" value="y">
    <span>Why</span></label>
    </fieldset><label for="id_n">Age</label><input type="number" name="n" id="id_n" min="18" max="99">
    <label for="id_t">Why?</label><textarea name="t" id="id_t"></textarea>
    <p class="help counter" data-for="id_t" data-min="10">At least 10.</p></form></main>"""
    form = parse_step(html)
    assert form.questions == {"q": "Pick one", "n": "Age", "t": "Why?"}
    schema = answer_schema(form)
    good, problem = parse_answer('```json\n{"q": "y", "n": 30, "t": "because it is"}\n```', schema)
    assert good == {"q": "y", "n": 30, "t": "because it is"} and problem == ""
    for bad, where in [
        ('{"q": "z", "n": 30, "t": "because it is"}', "'q'"),
        ('{"q": "x", "n": 12, "t": "because it is"}', "'n'"),
        ('{"q": "x", "n": 30, "t": "short"}', "'t'"),
        ('{"q": "x", "n": 30}', "required"),
    ]:
        data, problem = parse_answer(bad, schema)
        assert data is None and where in problem
    assert parse_answer("no json here", schema)[0] is None
    answer = json.loads(offline.answer_text(type("R", (), {"hint": {"fields": form.describe()}})()))
    assert parse_answer(json.dumps(answer), schema)[0] == answer  # the offline model's answer fits


def test_the_offline_model_follows_instructions_only_when_attentive():
    fields = [
        {
            "name": "attn",
            "type": "choice",
            "question": "Please select 'Agree' for this question.",
            "choices": [{"value": v, "label": v} for v in ("Disagree", "Neutral", "Agree")],
        }
    ]
    assert offline.answer(fields)["attn"] == "Agree"
    assert offline.answer(fields, attentive=False) == offline.answer(fields, attentive=False)  # deterministic
