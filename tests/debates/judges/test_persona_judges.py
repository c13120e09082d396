"""The "persona_judges" job (paper 001, Study II): human claim sessions of the demo's design-B
study, walked through the real views, judged again by models with and without the human's
persona, through the real `openai` client against the fake server on loopback; the offline
judges; the admin's summary; the export `llm_persona_judgements`."""

from __future__ import annotations

import json

import pytest

from analysis.exports import TABLES
from debates.jobs import kinds, tasks
from debates.judges import persona_offline, persona_prompts, strategy_services
from debates.live import services as live_services
from debates.models import Job, LiveSession, LLMCall
from participants.models import Participant
from tests.support.cast import Walker
from tests.support.live import drain_turns

pytestmark = pytest.mark.django_db
MODELS = "ECHO | fake-echo | 0.2 | 1 | 4\nNAY | fake-nay"
SKEPTIC = {
    "belief_overstated": "Strongly agree",
    "belief_own_research": "Agree",
    "belief_trust": "Disagree",
    "age": "47",
    "education": "Vocational",
}
QUESTION = "Which of your sources is the most recent one?"


def walk_session(
    study, protocol: str, initial: str, final: str, *, question: str = "", complete: bool = False
) -> LiveSession:
    """A participant screened with SKEPTIC's answers, through claim 1 with `protocol` (a
    question to debater A, or the consultant, in round 1 when given), with these answers;
    with `complete`, on through claim 2 (passing) to the end of the study."""
    w = Walker(study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2", answers={"About your views": SKEPTIC})
    w.page()
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    sides = {"side_a": "true"} if protocol == "debate" else {"consultant_side": "false"}
    LiveSession.objects.filter(pk=session.pk).update(protocol=protocol, debater_b=session.debater_a, **sides)
    chat_through(w, session, initial, final, question)
    if complete:
        w.page()
        second = LiveSession.objects.get(participant__prolific_pid=w.pid, position=session.position + 1)
        chat_through(w, second, "true", "true", "")
        w.walk(answers={"A quick question": {"attention_1": "Disagree", "attention_2": "Strongly disagree"}})
        assert Participant.objects.get(pk=session.participant_id).excluded is False
        assert Participant.objects.get(pk=session.participant_id).status == "completed"
    session.refresh_from_db()
    return session


def chat_through(w: Walker, session: LiveSession, initial: str, final: str, question: str) -> None:
    w.submit({"answer": initial, "confidence": "40"})
    _, chat = w.page()
    asked = False
    while True:
        session.refresh_from_db()
        turns = list(session.turns.order_by("seq"))
        if live_services.chat_complete(session, turns):
            break
        if live_services.judge_may_write(session, turns):
            target = "A" if session.protocol == "debate" else "C"
            text, target = ("", "pass") if asked or not question else (question, target)
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text=text, target=target
            )
            asked = True
        drain_turns(session.pk)
    w.submit(form=chat)
    w.submit(
        {"answer": final, "confidence": "80", "justification": "The sources on one side were much better."}
    )
    session.refresh_from_db()
    assert session.phase == "done"


@pytest.fixture
def sessions(claim_study):
    debate = walk_session(claim_study, "debate", "false", "true", question=QUESTION)
    consultancy = walk_session(claim_study, "consultancy", "true", "true")
    return debate, consultancy


def new_job(study="claim-debate", models=MODELS, judges="both", **fields) -> Job:
    config = kinds.get("persona_judges").clean_config({"study": study, "models": models, "judges": judges})
    return Job.objects.create(
        name=fields.pop("name", "persona"), kind="persona_judges", config=config, **fields
    )


class Judges:
    """The fake server's answers: "fake-echo" says true (60) before and false (80) after;
    "fake-nay" says false (55), then false in a code fence (70). Every body is kept."""

    def __init__(self):
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> str:
        self.bodies.append(body)
        final = len([m for m in body["messages"] if m["role"] == "user"]) == 2
        if body["model"] == "fake-echo":
            answer = {"answer": "false", "confidence": 80} if final else {"answer": "true", "confidence": 60}
        else:
            answer = {"answer": "false", "confidence": 70 if final else 55}
        if final:
            answer["justification"] = "Debater B's sources held up."
        return (
            f"```json\n{json.dumps(answer)}\n```"
            if final and body["model"] == "fake-nay"
            else json.dumps(answer)
        )


# --- plan and configuration ------------------------------------------------------------------------


def test_the_plan_is_one_item_per_finished_session_judge_and_kind(sessions, claim_study):
    debate, consultancy = sessions
    # A session still in its chat is not judged: the human has no final answer yet.
    w = Walker(claim_study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2", answers={"About your views": SKEPTIC})
    w.page()
    w.submit({"answer": "true", "confidence": "50"})
    specs = kinds.get("persona_judges").plan(new_job())
    assert {s.key for s in specs} == {
        f"{s.pk}:{label}:{kind}"
        for s in (debate, consultancy)
        for label in ("ECHO", "NAY")
        for kind in ("persona", "naive")
    }
    spec = next(s for s in specs if s.key == f"{debate.pk}:ECHO:persona")
    assert spec.payload == {
        "session": debate.pk,
        "kind": "persona",
        "judge": {
            "label": "ECHO",
            "model": "fake-echo",
            "temperature": 0.2,
            "price_in": "1",
            "price_out": "4",
        },
    }
    assert {
        s.payload["kind"] for s in kinds.get("persona_judges").plan(new_job(judges="naive", name="n"))
    } == {"naive"}


def test_pilots_sessions_are_not_judged(sessions):
    debate, consultancy = sessions
    Participant.objects.filter(pk=debate.participant_id).update(is_pilot=True)
    specs = kinds.get("persona_judges").plan(new_job())
    assert {s.payload["session"] for s in specs} == {consultancy.pk}
    assert not strategy_services.debates_for("claim-debate").exists()  # the debate was the pilot's


def test_the_form_offers_claim_studies_only(claim_study, mystery_study):
    form = kinds.get("persona_judges").config_form(data={"study": "mystery-debate", "models": MODELS})
    assert not form.is_valid() and "study" in form.errors
    form = kinds.get("persona_judges").config_form(
        data={"study": "claim-debate", "models": MODELS, "judges": "both"}
    )
    assert form.is_valid(), form.errors


def test_the_persona_is_the_humans_screening_answers_in_words(sessions):
    from debates.judges.persona_services import session_view

    view = session_view(sessions[0].pk)
    assert view.profile == [
        ("Scientists tend to overstate the risks of climate change.", "Strongly agree"),
        (
            "When it comes to food and health, my own experience is a better guide than official advice.",
            "Agree",
        ),
        ("Scientific bodies can generally be trusted on questions of nutrition and climate.", "Disagree"),
        ("I understand how AI chatbots produce their answers.", view.profile[3][1]),
        ("How old are you?", "47"),
        ("Highest level of education completed", "Vocational"),
    ]
    text = persona_prompts.persona_text(view.profile)
    assert "\nHow old are you? — 47\n" in text and "screening" not in text and "skeptical" not in text


# --- running against the loopback server -------------------------------------------------------------


def test_each_session_is_judged_with_the_humans_protocol(sessions, openai_backend):
    debate, consultancy = sessions
    openai_backend.app.responder = answers = Judges()
    job = new_job()
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    assert len(answers.bodies) == 16  # 2 sessions x 2 judges x 2 kinds x 2 calls
    item = job.items.get(key=f"{debate.pk}:ECHO:persona")
    truth = debate.claim.truth
    assert item.result == {
        "session": debate.pk,
        "participant_id": debate.participant_id,
        "claim": debate.claim.slug,
        "domain": debate.claim.domain,
        "truth": truth,
        "protocol": "debate",
        "group": "skeptical",
        "judge": "ECHO",
        "model": "fake-echo",
        "kind": "persona",
        "persona": item.result["persona"],
        "initial_answer": True,
        "initial_confidence": 60,
        "initial_correct": truth is True,
        "final_answer": False,
        "final_confidence": 80,
        "final_correct": truth is False,
        "justification": "Debater B's sources held up.",
        "human": {
            "initial_answer": False,
            "initial_confidence": 40,
            "final_answer": True,
            "final_confidence": 80,
        },
        "template_versions": {"initial": 1, "final": 1, "persona": 1},
    }
    assert item.result["persona"].startswith("Scientists tend to overstate")
    # The persona judge's two calls: the persona as the system message, the claim; then the same
    # conversation with its first answer and the transcript the human saw, their question included.
    echo = [b for b in answers.bodies if b["model"] == "fake-echo" and b["messages"][0]["role"] == "system"]
    second = next(b for b in echo if len(b["messages"]) == 4 and QUESTION in b["messages"][3]["content"])
    first = next(b for b in echo if b["messages"] == second["messages"][:2])
    assert "How old are you? — 47" in first["messages"][0]["content"]
    assert f"“{debate.claim.text}”" in first["messages"][1]["content"] and first["temperature"] == 0.2
    assert second["messages"][:2] == first["messages"]
    assert json.loads(second["messages"][2]["content"]) == {"answer": "true", "confidence": 60}
    final_prompt = second["messages"][3]["content"]
    assert f"Judge (to Debater A):\n{QUESTION}" in final_prompt
    assert "Round 1 — Debater A — argues the claim is TRUE:" in final_prompt
    assert "Debater B — argues the claim is FALSE:" in final_prompt
    a_turns = [t.text.strip() for t in debate.turns.filter(speaker="A").order_by("seq")]
    assert all(text in final_prompt for text in a_turns) and len(a_turns) == 3
    # The naive judge is told nothing about anyone.
    naive = [b for b in answers.bodies if b["messages"][0]["role"] != "system"]
    assert len(naive) == 8 and not any("How old are you?" in json.dumps(b) for b in naive)
    # The consultancy transcript names the advisor and its side.
    consulted = job.items.get(key=f"{consultancy.pk}:NAY:naive")
    assert consulted.result["final_answer"] is False and consulted.result["final_confidence"] == 70
    calls = LLMCall.objects.filter(job_item=item).order_by("pk")
    assert [c.role for c in calls] == ["persona_judge", "persona_judge"]
    assert set(LLMCall.objects.filter(job_item=consulted).values_list("role", flat=True)) == {"naive_judge"}
    assert item.cost_usd == sum(c.cost_usd for c in calls) > 0


def test_the_admin_summary_counts_accuracy_and_agreement(sessions, openai_backend):
    debate, consultancy = sessions
    openai_backend.app.responder = Judges()
    job = new_job()
    tasks.job_run_here(job.pk)
    rows = kinds.get("persona_judges").summary(job)
    truths = [debate.claim.truth, consultancy.claim.truth]
    false_right = sum(t is False for t in truths)
    # By hand: ECHO says true then false, NAY false then false; the humans said (false, true)
    # then (true, true).
    assert rows[0] == {
        "Judge": "ECHO",
        "Kind": "persona",
        "Sessions": 2,
        "Initial accuracy": f"{sum(t is True for t in truths)}/2",
        "Final accuracy": f"{false_right}/2",
        "Same initial answer as the human": "1/2",
        "Same final answer as the human": "0/2",
    }
    assert [(r["Judge"], r["Kind"]) for r in rows] == [
        ("ECHO", "persona"),
        ("ECHO", "naive"),
        ("NAY", "persona"),
        ("NAY", "naive"),
        ("Humans", ""),
    ]
    assert rows[2]["Same initial answer as the human"] == "1/2"
    assert rows[-1]["Final accuracy"] == f"{sum(t is True for t in truths)}/2"


def test_the_offline_judges_are_deterministic_and_plausible(sessions):
    job = new_job(models="P1 | demo-judge-1\nP2 | demo-judge-2", name="offline")
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    again = new_job(models="P1 | demo-judge-1\nP2 | demo-judge-2", name="again")
    tasks.job_run_here(again.pk)
    first = {i.key: i.result for i in job.items.all()}
    second = {i.key: i.result for i in again.items.all()}
    assert len(first) == 8 and first == second
    for r in first.values():
        assert 55 <= r["initial_confidence"] <= 80 and 55 <= r["final_confidence"] <= 90
        assert r["justification"]
    # A persona judge answers as its human did, or the truth.
    for r in first.values():
        if r["kind"] == "persona":
            assert r["final_answer"] in (r["human"]["final_answer"], r["truth"])


def test_offline_persona_judges_follow_their_humans_more_than_naive_ones():
    hint = {"task": "claim_judge", "truth": True, "words": {"true": 10, "false": 30}}
    same = {"persona": 0, "naive": 0}
    for session in range(400):
        human = {"initial_answer": session % 3 == 0, "final_answer": session % 2 == 0}
        for kind in same:
            answer, _ = persona_offline.choose(
                "m", {**hint, "session": session, "kind": kind, "stage": "final", "human": human}
            )
            same[kind] += answer == human["final_answer"]
    assert same["persona"] / 400 > 0.75 > same["naive"] / 400


def test_a_session_gone_since_the_plan_fails_its_item_only(sessions, openai_backend):
    from debates.jobs import services

    openai_backend.app.responder = Judges()
    job = new_job(models="ECHO | fake-echo", judges="naive")
    services.job_plan(job=job)
    gone = job.items.first()
    gone.payload = {**gone.payload, "session": 10**9}
    gone.save()
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    gone.refresh_from_db()
    assert gone.status == "failed" and "no longer exists" in gone.error
    assert job.items.filter(status="done").count() == 1


# --- the export --------------------------------------------------------------------------------------


def test_the_export_has_a_row_per_judgement_beside_the_humans_answers(sessions, openai_backend):
    debate, consultancy = sessions
    openai_backend.app.responder = Judges()
    job = new_job()
    tasks.job_run_here(job.pk)
    Participant.objects.filter(pk=consultancy.participant_id).update(excluded=True)
    table = TABLES["llm_persona_judgements"]
    rows = {r["item"]: r for r in table.rows_for(debate.participant.study)}
    assert len(rows) == 8
    row = rows[f"{debate.pk}:ECHO:persona"]
    truth = "true" if debate.claim.truth else "false"
    assert {
        k: row[k]
        for k in (
            "study",
            "session",
            "participant_id",
            "position",
            "claim",
            "truth",
            "protocol",
            "judge",
            "judge_kind",
            "initial_answer",
            "final_answer",
            "human_initial_answer",
            "human_final_answer",
            "agrees_initial",
            "agrees_final",
            "final_correct",
            "human_final_correct",
            "excluded",
            "template_versions",
            "temperature",
        )
    } == {
        "study": "claim-debate",
        "session": debate.pk,
        "participant_id": debate.participant_id,
        "position": debate.position,
        "claim": debate.claim.slug,
        "truth": truth,
        "protocol": "debate",
        "judge": "ECHO",
        "judge_kind": "persona",
        "initial_answer": "true",
        "final_answer": "false",
        "human_initial_answer": "false",
        "human_final_answer": "true",
        "agrees_initial": "0",
        "agrees_final": "0",
        "final_correct": "1" if truth == "false" else "0",
        "human_final_correct": "1" if truth == "true" else "0",
        "excluded": "0",
        "template_versions": "final=1;initial=1;persona=1",
        "temperature": 0.2,
    }
    assert rows[f"{debate.pk}:NAY:naive"]["persona"] == "" and "47" in row["persona"]
    assert rows[f"{consultancy.pk}:NAY:naive"]["excluded"] == "1"
    assert {c.name for c in table.columns} >= {"human_final_confidence", "cost_usd", "finished_at"}


# --- the demo ----------------------------------------------------------------------------------------


def test_the_demo_judges_claim_debate_once_it_has_finished_sessions(claim_study):
    from debates.demo.persona import design_b_judge_jobs

    assert design_b_judge_jobs() == []
    debate = walk_session(claim_study, "debate", "true", "true", question=QUESTION)
    persona, strategy = design_b_judge_jobs()
    assert (persona.status, strategy.status) == (Job.Status.DONE, Job.Status.DONE)
    assert persona.items.filter(status="done").count() == 4  # 1 session x 2 judges x persona/naive
    assert strategy.items.filter(status="done").count() == 4  # 2 debaters x 2 raters
    assert len(strategy.items.get(key=f"{debate.pk}:A:GPT").result["ratings"]) == 8
    assert [j.pk for j in design_b_judge_jobs()] == [persona.pk, strategy.pk]  # made once
