"""Model-versus-model batches: every pairing of the batch's agent configurations, on every
topic, with each agent on each side, `repeats` times. A batch runs a few dialogues at a time
(PERSUASION_BATCH_PARALLEL), one turn per job, so it can be paused, resumed, and stopped by
its cost budget before it overspends; a worker that dies mid-turn leaves the turn to the
watchdog, and the dialogue resumes from its last played turn."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from itertools import combinations

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone

from debates.call_log import TOKENS_PER_WORD, call_upper_bound
from debates.models import LLMCall, PersuasionBatch, PersuasionDialogue, PersuasionTurn
from debates.persuasion import services

Status = PersuasionDialogue.Status
BatchStatus = PersuasionBatch.Status


def batch_pairings(batch: PersuasionBatch) -> list[tuple]:
    """(pro agent, con agent, topic, repeat) for every dialogue the batch asks for."""
    agents = list(batch.agents.order_by("name"))
    pairs = list(combinations(agents, 2))
    if batch.self_play:
        pairs += [(agent, agent) for agent in agents]
    plan = []
    for topic in batch.topics.order_by("slug"):
        for a, b in pairs:
            orientations = [(a, b)] if a == b else [(a, b), (b, a)]
            for pro, con in orientations:
                for repeat in range(1, batch.repeats + 1):
                    plan.append((pro, con, topic, repeat))
    return plan


def batch_plan(*, batch: PersuasionBatch, now: datetime) -> int:
    """Create the batch's dialogues (once): not started yet."""
    if batch.dialogues.exists():
        return 0
    rows = [
        PersuasionDialogue(
            batch=batch,
            repeat=repeat,
            topic=topic,
            pro_agent=pro,
            con_agent=con,
            pairing="ai_ai",
            status=Status.WAITING,
            state=services.new_state(topic, max_turns=batch.max_turns, max_seconds=10**8, max_sentences=5),
            max_turns=batch.max_turns,
            max_seconds=10**8,  # model-versus-model dialogues have no clock: only the turn limit
            classifier_model=batch.classifier_model,
            created_at=now,
        )
        for pro, con, topic, repeat in batch_pairings(batch)
    ]
    PersuasionDialogue.objects.bulk_create(rows)
    return len(rows)


def batch_start(*, batch_id: int, now: datetime | None = None) -> list[PersuasionTurn]:
    """Start or resume a batch: the turns to start (those left pending by a pause or the
    budget, and the first turns of newly started dialogues)."""
    now = now or timezone.now()
    with transaction.atomic():
        batch = PersuasionBatch.objects.select_for_update().get(pk=batch_id)
        if batch.status == BatchStatus.DONE:
            return []
        if not batch.dialogues.exists() and not batch_pairings(batch):
            raise services.PersuasionError(
                "The batch has no dialogues to run: choose a topic and at least two agent "
                "configurations (or one, with self-play)."
            )
        batch_plan(batch=batch, now=now)
        batch.status, batch.note = BatchStatus.RUNNING, ""
        batch.started_at = batch.started_at or now
        batch.save(update_fields=["status", "note", "started_at"])
        resumed = list(
            PersuasionTurn.objects.filter(
                dialogue__batch=batch,
                dialogue__status=Status.RUNNING,
                status__in=(PersuasionTurn.Status.PENDING, PersuasionTurn.Status.STREAMING),
            )
        )
    return resumed + batch_advance(batch_id=batch_id, now=now)


def batch_pause(*, batch_id: int, note: str = "", status: str = BatchStatus.PAUSED) -> None:
    """Stop starting turns; turns being written finish and are played."""
    PersuasionBatch.objects.filter(pk=batch_id, status=BatchStatus.RUNNING).update(status=status, note=note)


def batch_advance(*, batch_id: int, now: datetime | None = None) -> list[PersuasionTurn]:
    """Start dialogues while fewer than PERSUASION_BATCH_PARALLEL run; mark the batch done
    when every dialogue has ended. Returns the first turns to start."""
    now = now or timezone.now()
    due = []
    with transaction.atomic():
        batch = PersuasionBatch.objects.select_for_update().get(pk=batch_id)
        if batch.status != BatchStatus.RUNNING:
            return []
        dialogues = batch.dialogues.all()
        running = dialogues.filter(status=Status.RUNNING).count()
        room = settings.PERSUASION_BATCH_PARALLEL - running
        if room > 0:
            for dialogue in (
                services.dialogue_query().filter(batch=batch, status=Status.WAITING).order_by("pk")[:room]
            ):
                dialogue.status, dialogue.started_at, dialogue.last_move_at = Status.RUNNING, now, now
                dialogue.save(update_fields=["status", "started_at", "last_move_at"])
                turn = services.agent_turn_if_due(dialogue, now)
                if turn is not None:
                    due.append(turn)
        if not dialogues.filter(status__in=(Status.RUNNING, Status.WAITING)).exists():
            batch.status, batch.finished_at = BatchStatus.DONE, now
            batch.save(update_fields=["status", "finished_at"])
    return due


def batch_spent(batch_id: int) -> Decimal:
    total = LLMCall.objects.filter(persuasion_dialogue__batch_id=batch_id).aggregate(cost=Sum("cost_usd"))[
        "cost"
    ]
    return total or Decimal(0)


CLASSIFY_OUT_TOKENS = 800  # an upper bound on the classifier's answer and checks for one turn


def turn_estimate(*, batch: PersuasionBatch, agent, request) -> Decimal:
    """The most the next turn can cost: the agent's call (`call_upper_bound`), and its
    reading (the prompt again plus the agent's reply, at the classifier's prices). Unknown
    prices count as free, as they do in the call log."""
    cost = call_upper_bound(request, agent)
    price_in, price_out = batch.classifier_price_in_per_mtok, batch.classifier_price_out_per_mtok
    if price_in is not None and price_out is not None:
        words = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        reading_in = words * TOKENS_PER_WORD + request.max_tokens
        million = Decimal(1_000_000)
        cost += reading_in * price_in / million + CLASSIFY_OUT_TOKENS * price_out / million
    return cost


def budget_allows(*, batch_id: int, estimate: Decimal = Decimal(0)) -> bool:
    """Whether the batch may write one more turn without overspending: what it has spent
    plus the most the turn can cost (`turn_estimate`) must stay within the budget. When it
    may not, the batch stops with a note; raising the budget and starting it again resumes
    where it stopped."""
    batch = PersuasionBatch.objects.get(pk=batch_id)
    if batch.status != BatchStatus.RUNNING:
        return False
    if batch.budget_usd is None:
        return True
    spent = batch_spent(batch_id)
    if spent + estimate > batch.budget_usd:
        note = (
            f"Stopped at ${spent:.4f} of ${batch.budget_usd:.2f}: the next turn could cost up to "
            f"${estimate:.4f}. Raise the budget and start the batch again to go on."
        )
        batch_pause(batch_id=batch_id, note=note, status=BatchStatus.BUDGET)
        return False
    return True


def batch_progress(batch: PersuasionBatch) -> dict:
    """Dialogues by status, and the money spent."""
    counts = dict(batch.dialogues.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    total = sum(counts.values())
    return {
        "total": total,
        "done": counts.get(Status.FINISHED, 0) + counts.get(Status.ABANDONED, 0),
        "running": counts.get(Status.RUNNING, 0),
        "waiting": counts.get(Status.WAITING, 0),
        "spent": batch_spent(batch.pk),
    }


def win_table(batch: PersuasionBatch) -> list[dict]:
    """Per agent configuration: dialogues, wins, losses, draws and abandoned."""
    table: dict[str, dict] = {}
    for d in batch.dialogues.select_related("pro_agent", "con_agent").filter(
        status__in=(Status.FINISHED, Status.ABANDONED)
    ):
        for side in ("pro", "con"):
            name = d.agent_of(side).name
            row = table.setdefault(
                name, {"agent": name, "dialogues": 0, "won": 0, "lost": 0, "drawn": 0, "abandoned": 0}
            )
            row["dialogues"] += 1
            if d.status == Status.ABANDONED:
                row["abandoned"] += 1
            elif not d.winner:
                row["drawn"] += 1
            elif d.winner == side:
                row["won"] += 1
            else:
                row["lost"] += 1
    return sorted(table.values(), key=lambda r: (-r["won"], r["lost"], r["agent"]))
