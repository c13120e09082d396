"""Strategy raters, the database side: the debates a job rates (design B debate sessions with
debater turns), a debate as the raters see it, and the finished items of a job."""

from __future__ import annotations

from django.db.models import QuerySet

from debates.judges.strategy_prompts import DebateView
from debates.models import Job, JobItem, LiveSession, LiveTurn

KIND = "strategy_raters"


def debates_for(study_slug: str) -> QuerySet[LiveSession]:
    """The study's debate sessions (previews and pilots left out) in which both debaters
    finished at least one turn, in a stable order."""
    sessions = LiveSession.objects.filter(
        participant__study__slug=study_slug,
        participant__is_preview=False,
        participant__is_pilot=False,
        protocol=LiveSession.Protocol.DEBATE,
    )
    for speaker in ("A", "B"):
        with_turns = LiveTurn.objects.filter(speaker=speaker, status=LiveTurn.Status.DONE).values(
            "session_id"
        )
        sessions = sessions.filter(pk__in=with_turns)
    return sessions.order_by("pk")


def debate_view(session_id: int) -> DebateView:
    """The debate as the raters see it (LiveSession.DoesNotExist if gone)."""
    s = LiveSession.objects.select_related("claim", "debater_a", "debater_b").get(pk=session_id)
    turns = [
        (t.speaker, t.round, t.target, t.text)
        for t in s.turns.filter(status=LiveTurn.Status.DONE).order_by("seq")
        if not (t.speaker == "J" and t.target == "pass")
    ]
    return DebateView(
        session=s.pk,
        participant_id=s.participant_id,
        group=s.group,
        claim=s.claim.slug,
        claim_text=s.claim.text,
        domain=s.claim.domain,
        truth=s.claim.truth,
        sides={"A": s.side_of("A"), "B": s.side_of("B")},
        configs={
            "A": s.debater_a.name if s.debater_a else "",
            "B": s.debater_b.name if s.debater_b else "",
        },
        turns=turns,
    )


def job_results(job: Job) -> list[dict]:
    items = job.items.filter(status=JobItem.Status.DONE, result__isnull=False).order_by("pk")
    return [item.result for item in items]
