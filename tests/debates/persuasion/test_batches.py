"""Model-versus-model batches of design C: the plan (pairings × topics × stances × repeats),
playing a batch to the end here (`tasks.run_here`), the table of outcomes, pausing and
resuming, the cost budget (on the loopback model server, so calls cost money), and turns
started twice that are played once."""

import threading
import time
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import pytest

from debates.demo import loader
from debates.models import AgentConfig, LLMCall, PersuasionBatch, PersuasionDialogue, PersuasionTurn
from debates.persuasion import batches, services, tasks
from devtools import fakellm
from tests.support import persuasion as ps

Status = PersuasionDialogue.Status
BatchStatus = PersuasionBatch.Status
CENT = Decimal("0.01")

# run_here runs the turns' ORM calls on asgiref's shared thread: committed data only.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def offline_backend(settings):
    ps.use_offline(settings)
    yield
    ps.close_thread_connections()


def new_batch(name: str, agents: list[str], **fields) -> PersuasionBatch:
    topic = loader.demo_persuasion_content()
    batch = PersuasionBatch.objects.create(name=name, **fields)
    batch.topics.set([topic])
    batch.agents.set(AgentConfig.objects.filter(name__in=agents))
    return batch


def run_all(batch: PersuasionBatch) -> PersuasionBatch:
    for turn in batches.batch_start(batch_id=batch.pk):
        tasks.run_here(turn.pk)
    batch.refresh_from_db()
    return batch


def agent_calls(turn: PersuasionTurn):
    return LLMCall.objects.filter(persuasion_turn=turn, role="persuasion_agent", error_kind="")


@pytest.mark.django_db
def test_the_plan_counts_every_pairing_stance_and_repeat():
    batch = new_batch("plan", ["demo-yielding", "demo-steady", "demo-firm"], repeats=2)
    plan = batches.batch_pairings(batch)
    assert len(plan) == 3 * 2 * 2  # 3 pairs, each agent on each side, twice
    assert len({(pro.name, con.name, repeat) for pro, con, _, repeat in plan}) == 12
    assert all(pro != con for pro, con, _, _ in plan)
    batch.self_play = True
    plan = batches.batch_pairings(batch)
    assert len(plan) == 12 + 3 * 2  # and each agent against itself, twice
    assert sum(pro == con for pro, con, _, _ in plan) == 6


def test_a_batch_without_agents_or_topics_does_not_start():
    batch = PersuasionBatch.objects.create(name="empty")
    with pytest.raises(services.PersuasionError, match="no dialogues to run"):
        batches.batch_start(batch_id=batch.pk)
    assert PersuasionBatch.objects.get(pk=batch.pk).status == BatchStatus.DRAFT


def test_a_batch_with_one_agent_and_no_self_play_does_not_start():
    loader.demo_persuasion_content()
    batch = new_batch("lonely", ["demo-firm"])
    with pytest.raises(services.PersuasionError, match="at least two agent"):
        batches.batch_start(batch_id=batch.pk)
    batch.self_play = True
    batch.save()
    assert batches.batch_start(batch_id=batch.pk)  # with self-play: one dialogue, its first turn


def test_the_demo_batch_plays_to_the_end_a_few_at_a_time(settings):
    settings.PERSUASION_BATCH_PARALLEL = 2
    batch = loader.persuasion_batch(run=True)
    assert batch.status == BatchStatus.DONE and batch.finished_at is not None
    dialogues = list(batch.dialogues.select_related("pro_agent", "con_agent"))
    assert len(dialogues) == 6
    assert {d.status for d in dialogues} == {Status.FINISHED}
    assert all(d.pairing == "ai_ai" and d.study_id is None for d in dialogues)
    # The offline agents concede after 3 (yielding) or 5 (steady) of their turns, or never
    # (firm): whoever concedes first loses, on either side.
    patience = {"demo-yielding": 3, "demo-steady": 5, "demo-firm": 99}
    for d in dialogues:
        loser = min(("pro", "con"), key=lambda side: patience[d.agent_of(side).name])
        assert (d.end_reason, d.winner) == ("conceded", "con" if loser == "pro" else "pro"), d
        assert d.turns.filter(status="done").count() == d.turns_played == d.turns.count()
        for turn in d.turns.all():
            assert agent_calls(turn).count() == 1  # each turn written once
    table = {row["agent"]: row for row in batches.win_table(batch)}
    assert {name: (r["won"], r["lost"], r["drawn"], r["abandoned"]) for name, r in table.items()} == {
        "demo-firm": (4, 0, 0, 0),
        "demo-steady": (2, 2, 0, 0),
        "demo-yielding": (0, 4, 0, 0),
    }
    for name, row in table.items():
        mine = [d for d in dialogues if name in (d.pro_agent.name, d.con_agent.name)]
        assert row["dialogues"] == len(mine) == row["won"] + row["lost"] + row["drawn"] + row["abandoned"]
        assert row["won"] == sum(d.agent_of(d.winner).name == name for d in mine)
    progress = batches.batch_progress(batch)
    assert (progress["total"], progress["done"], progress["running"], progress["waiting"]) == (6, 6, 0, 0)
    assert progress["spent"] == 0  # the offline model costs nothing
    assert batches.batch_start(batch_id=batch.pk) == []  # a finished batch stays finished


def test_a_turn_limit_makes_draws_in_the_table():
    batch = run_all(new_batch("firm", ["demo-firm", "demo-steady"], max_turns=4))
    assert {(d.end_reason, d.winner, d.turns_played) for d in batch.dialogues.all()} == {
        ("turn_limit", "", 4)
    }
    assert [(r["drawn"], r["dialogues"]) for r in batches.win_table(batch)] == [(2, 2), (2, 2)]


def test_a_paused_batch_plays_nothing_until_it_is_resumed():
    batch = new_batch("paused", ["demo-firm", "demo-yielding"])
    first = batches.batch_start(batch_id=batch.pk)
    assert len(first) == 2 and {t.seq for t in first} == {1}
    batches.batch_pause(batch_id=batch.pk)
    for turn in first:
        tasks.run_here(turn.pk)
    assert not PersuasionTurn.objects.filter(dialogue__batch=batch, status="done").exists()
    assert set(PersuasionTurn.objects.filter(dialogue__batch=batch).values_list("status", "attempts")) == {
        ("pending", 0)
    }
    assert not LLMCall.objects.exists()
    assert services.stuck_turns() == []  # the watchdog leaves a paused batch alone
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PAUSED
    batch = run_all(batch)  # resume
    assert batch.status == BatchStatus.DONE
    assert {d.status for d in batch.dialogues.all()} == {Status.FINISHED}


def test_a_batch_paused_mid_dialogue_resumes_from_its_last_played_turn():
    batch = new_batch("midway", ["demo-firm", "demo-yielding"], max_turns=6)
    (turn, *_) = batches.batch_start(batch_id=batch.pk)
    tasks.run_here(turn.pk)  # one dialogue to its end, the other not started yet
    batches.batch_pause(batch_id=batch.pk)
    played = dict(
        PersuasionTurn.objects.filter(dialogue__batch=batch, status="done").values_list("pk", "finished_at")
    )
    assert played
    batch = run_all(batch)
    assert batch.status == BatchStatus.DONE
    again = dict(PersuasionTurn.objects.filter(pk__in=played, status="done").values_list("pk", "finished_at"))
    assert again == played  # nothing played twice
    for turn in PersuasionTurn.objects.filter(dialogue__batch=batch):
        assert agent_calls(turn).count() == 1


@pytest.mark.embedded  # the turns it makes due run on this process's loop (eager tasks)
def test_a_turn_started_twice_at_once_is_played_once(settings):
    settings.PERSUASION_BATCH_PARALLEL = 1
    batch = new_batch("twice", ["demo-firm", "demo-yielding"], max_turns=2)
    (first,) = batches.batch_start(batch_id=batch.pk)
    barrier = threading.Barrier(2)

    def start() -> None:
        barrier.wait(timeout=10)
        tasks.generate_turn(first.pk)  # the Celery task, as a duplicate delivery runs it

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    tasks.generate_turn(first.pk)  # and once more, after it was played
    deadline = time.monotonic() + 20  # the turns it made due run on the process's loop
    while time.monotonic() < deadline:
        batch.refresh_from_db()
        if batch.status == BatchStatus.DONE:
            break
        time.sleep(0.05)
    assert batch.status == BatchStatus.DONE
    first.refresh_from_db()
    assert (first.status, first.attempts) == ("done", 1)
    assert agent_calls(first).count() == 1
    for dialogue in batch.dialogues.all():
        assert list(dialogue.turns.values_list("seq", "status")) == [(1, "done"), (2, "done")]


# --- The budget, on the loopback model server ---------------------------------------------


@pytest.fixture
def priced_model(settings):
    """Agents and classifier on the loopback server, the agents priced so every turn costs a
    few tenths of a dollar (the classifier's answers are not JSON: its sentences fall back)."""
    with fakellm.run_in_thread() as running:
        settings.LLM_BACKEND = "openai"
        settings.OPENAI_BASE_URL = running.base_url
        settings.OPENAI_API_KEY = "test-key"
        settings.LLM_MAX_RETRIES = 0
        loader.demo_persuasion_content()
        AgentConfig.objects.update(
            model="fake", price_in_per_mtok=Decimal("500"), price_out_per_mtok=Decimal("500")
        )
        yield running


def priced_batch(name: str, budget: Decimal | None) -> PersuasionBatch:
    return new_batch(
        name, ["demo-firm", "demo-steady"], max_turns=6, classifier_model="fake", budget_usd=budget
    )


def turn_costs(batch: PersuasionBatch) -> list[Decimal]:
    """The cost of each turn of the batch's first dialogue, in order."""
    first = batch.dialogues.order_by("pk").first()
    return [
        sum(c.cost_usd or 0 for c in LLMCall.objects.filter(persuasion_turn=t))
        for t in first.turns.order_by("seq")
    ]


def test_the_budget_stops_the_batch_and_a_raised_budget_resumes_it(priced_model):
    costs = turn_costs(run_all(priced_batch("measure", None)))
    assert all(c > 0 for c in costs)
    # Enough for three turns; the fourth would overspend whatever it costs.
    budget = sum(costs[:3]).quantize(CENT, rounding=ROUND_CEILING)
    batch = run_all(priced_batch("budgeted", budget))
    assert batch.status == BatchStatus.BUDGET
    assert "Stopped at $" in batch.note
    spent = batches.batch_spent(batch.pk)
    assert 0 < spent <= budget
    played = dict(
        PersuasionTurn.objects.filter(dialogue__batch=batch, status="done").values_list("pk", "text")
    )
    # The bound reserves the agent's whole max_tokens and a generous prompt, so at most the
    # three turns the budget could pay for are played, and at least the first.
    assert 1 <= len(played) <= 3
    assert batch.dialogues.filter(status=Status.RUNNING).exists()

    batch.budget_usd = None
    batch.save()
    batch = run_all(batch)
    assert batch.status == BatchStatus.DONE
    assert {(d.status, d.end_reason) for d in batch.dialogues.all()} == {(Status.FINISHED, "turn_limit")}
    for pk, text in played.items():
        assert PersuasionTurn.objects.get(pk=pk).text == text
    for turn in PersuasionTurn.objects.filter(dialogue__batch=batch):
        assert turn.status == "done" and agent_calls(turn).count() == 1  # none written twice


def test_the_budget_is_never_overspent_even_as_turns_grow_dearer(priced_model):
    costs = turn_costs(run_all(priced_batch("measure", None)))
    assert costs[2] > costs[1] > costs[0]  # each turn's prompt is longer
    # Room for the third turn by the estimate (the dearest so far: the second), not by its cost.
    low, high = costs[0] + 2 * costs[1], sum(costs[:3])
    budget = high.quantize(CENT, rounding=ROUND_FLOOR)
    if budget == high:
        budget -= CENT
    assert low <= budget < high
    batch = run_all(priced_batch("tight", budget))
    assert batch.status == BatchStatus.BUDGET
    assert batches.batch_spent(batch.pk) <= budget
