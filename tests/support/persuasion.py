"""Persuasion dialogues (design C) in tests: studies with a persuasion step on the demo topic
and agents, participants walked to that step, the step's design, and turns run here and now
(no worker runs them), with a participant's turns written the way the offline agent would
write them, so the offline classifier reads them as legal moves."""

from __future__ import annotations

from dataclasses import replace

from asgiref.sync import SyncToAsync, async_to_sync
from django.db import connections
from django.utils import timezone

from debates import llm
from debates.demo import loader
from debates.demo.persuasion import TOPIC
from debates.models import PersuasionDialogue, PersuasionTurn
from debates.persuasion import language, offline, runner, services
from debates.persuasion.services import PersuasionDesign
from participants.models import Participant
from studies import registry
from studies.models import Step, Study
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

STEP_TITLE = "The dialogue"
POSITION = 2  # consent, the dialogue, the debrief


def use_offline(settings) -> None:
    """The offline backend, with design C's tasks answered by its scripted agent."""
    settings.LLM_BACKEND = "offline"
    offline.register()


def step_config(**overrides) -> dict:
    """A persuasion step against the demo's yielding agent (it concedes after 3 turns)."""
    return {
        "topic": TOPIC["slug"],
        "opponent": "ai",
        "agent": "demo-yielding",
        "side": "balanced",
        "max_turns": 20,
        "max_minutes": 15,
        "max_sentences": 5,
        "silence_seconds": 300,
        "wait_seconds": 120,
        "no_partner": "ai",
        "no_partner_code": "",
        "partner_left_code": "CLEFT",
        "delay_min_s": 0.0,
        "delay_max_s": 0.0,
        "classifier_model": "gpt-4o",
        "intro": "Persuade your opponent.",
        **overrides,
    }


def dialogue_study(study: dict | None = None, **config) -> Study:
    """consent → a persuasion dialogue (the demo topic and agents, `config` changing the
    step's settings) → debrief; live unless `study` says otherwise, and a pilot (the offline
    backend would otherwise be a go-live problem)."""
    loader.demo_persuasion_content()
    step = {"kind": "persuasion_dialogue", "title": STEP_TITLE, "config": step_config(**config)}
    return build_study([CONSENT_STEP, step, DEBRIEF_STEP], **{"pilot": True, **(study or {})})


def design_of(study: Study, **changes) -> PersuasionDesign:
    step = Step.objects.get(study=study, position=POSITION)
    design = registry.get("persuasion_dialogue").design(step)
    return replace(design, **changes) if changes else design


def arrive(study: Study) -> Walker:
    """A participant who consented and stands at the dialogue step, not yet shown (showing
    it seats them)."""
    w = Walker(study)
    w.enter()
    _, consent = w.page()
    assert consent.title == CONSENT_STEP["title"], consent.title
    response = w.submit(form=consent)
    assert response.status_code in (302, 303), consent.errors
    return w


def person(w: Walker) -> Participant:
    return Participant.objects.get(prolific_pid=w.pid, study=w.study)


def seat(study: Study, design: PersuasionDesign | None = None) -> tuple[Participant, PersuasionDialogue]:
    """A participant seated by the services (not through the page): their dialogue."""
    participant = person(arrive(study))
    services.dialogue_assign(
        participant=participant, position=POSITION, design=design or design_of(study), now=timezone.now()
    )
    return participant, dialogue_of(participant)


def dialogue_of(participant: Participant) -> PersuasionDialogue:
    return services.dialogue_of(participant, POSITION)


def fresh(dialogue: PersuasionDialogue) -> PersuasionDialogue:
    return services.dialogue_query().get(pk=dialogue.pk)


def open_turn(dialogue_id: int) -> PersuasionTurn | None:
    return services.open_turn(PersuasionDialogue.objects.get(pk=dialogue_id))


def run_turns(dialogue_id: int, limit: int = 80) -> int:
    """Write and read every open turn of the dialogue, here and now, until it is a
    participant's turn to write or the dialogue has ended; returns how many ran."""
    done = 0
    for _ in range(limit):
        turn = open_turn(dialogue_id)
        if turn is None:
            return done
        async_to_sync(runner.run_turn)(turn.pk)
        done += 1
    raise AssertionError("turns kept coming")


def human_text(dialogue: PersuasionDialogue, side: str) -> str:
    """What the participant on `side` writes now: what the offline agent (who never
    concedes) would write, so the offline classifier reads every sentence as meant."""
    dialogue = fresh(dialogue)
    game = services.game_of(dialogue)
    view = language.AgentView(name="person", model="offline", offline_concede_after=None)
    request = language.agent_request(game, side, view, services.topic_view(dialogue.topic))
    return llm.offline_text(request)


def say(participant: Participant, dialogue: PersuasionDialogue, text: str | None = None) -> PersuasionTurn:
    side = fresh(dialogue).side_of(participant.pk)
    return services.human_say(
        dialogue_id=dialogue.pk,
        participant_id=participant.pk,
        text=human_text(dialogue, side) if text is None else text,
        now=timezone.now(),
    )


def debate_to_end(participants: dict[str, Participant], dialogue: PersuasionDialogue, limit: int = 60):
    """Play the dialogue to its end: agents' turns run here, participants (by side) say what
    the offline agent would. Returns the dialogue as it ended."""
    for _ in range(limit):
        run_turns(dialogue.pk)
        dialogue = fresh(dialogue)
        if dialogue.status != PersuasionDialogue.Status.RUNNING:
            return dialogue
        side = services.game_of(dialogue).to_move
        say(participants[side], dialogue)
    raise AssertionError("the dialogue did not end")


def close_thread_connections() -> None:
    """Close the connections of asgiref's shared thread, where code under `asyncio.run`
    without an outer `async_to_sync` (`tasks.run_here`) runs its ORM calls."""
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
