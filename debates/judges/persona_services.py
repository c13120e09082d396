"""Persona and naive judges, the database side: the human claim sessions a job judges, a
session as the judges see it (its finished turns, its human's screening and questionnaire
answers, the human's own answers), and the finished items of a study's jobs (the export)."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import QuerySet

from debates.judges.persona_prompts import SessionView, Turn
from debates.models import Job, JobItem, LiveSession, LiveTurn, StudyClaim
from participants.models import Response
from studies.models import Question

KIND = "persona_judges"
PROFILE_STEPS = ("screening", "questionnaire")  # the steps whose answers make the persona


def claim_study_choices() -> list[tuple[str, str]]:
    """The studies that offer claims (design B), for the jobs' forms."""
    slugs = StudyClaim.objects.values_list("study__slug", "study__title").distinct().order_by("study__slug")
    return [(slug, f"{slug} — {title}") for slug, title in slugs]


def sessions_for(study_slug: str) -> QuerySet[LiveSession]:
    """The study's finished human claim sessions (both answers given; previews and pilots
    left out), in a stable order."""
    return (
        LiveSession.objects.filter(
            participant__study__slug=study_slug,
            participant__is_preview=False,
            participant__is_pilot=False,
            phase=LiveSession.Phase.DONE,
            initial_answer__isnull=False,
            final_answer__isnull=False,
        )
        .select_related("claim")
        .order_by("pk")
    )


def profile_of(participant_id: int, study_id: int) -> list[tuple[str, str]]:
    """The participant's answers to the screening and questionnaire items, as (question text,
    answer), in the study's order; attention checks, unanswered items and derived values (the
    screening score and group: no question asks them) are left out."""
    questions = {
        (q.step.position, q.key): q
        for q in Question.objects.filter(
            step__study_id=study_id, step__kind__in=PROFILE_STEPS
        ).select_related("step")
    }
    responses = Response.objects.filter(
        participant_id=participant_id, step_kind__in=PROFILE_STEPS, is_check=False
    ).order_by("position", "pk")
    found = []
    for response in responses:
        question = questions.get((response.position, response.key))
        if question is None or question.expected_answer or not response.value.strip():
            continue
        found.append(((response.position, question.position, question.pk), question.text, response.value))
    return [(text, value) for _, text, value in sorted(found)]


def session_view(session_id: int) -> SessionView:
    """The session as the judges see it (LiveSession.DoesNotExist if gone)."""
    s = LiveSession.objects.select_related("claim", "participant").get(pk=session_id)
    turns = [
        Turn(speaker=t.speaker, round=t.round, text=t.text, target=t.target)
        for t in s.turns.filter(status=LiveTurn.Status.DONE).order_by("seq")
        if not (t.speaker == "J" and t.target == "pass")
    ]
    return SessionView(
        session=s.pk,
        participant_id=s.participant_id,
        group=s.group,
        position=s.position,
        claim=s.claim.slug,
        claim_text=s.claim.text,
        domain=s.claim.domain,
        truth=s.claim.truth,
        protocol=s.protocol,
        sides={speaker: s.side_of(speaker) for speaker in s.ai_speakers},
        turns=turns,
        profile=profile_of(s.participant_id, s.participant.study_id),
        human={
            "initial_answer": s.initial_answer,
            "initial_confidence": s.initial_confidence,
            "final_answer": s.final_answer,
            "final_confidence": s.final_confidence,
        },
    )


def job_results(job: Job) -> list[dict]:
    items = job.items.filter(status=JobItem.Status.DONE, result__isnull=False).order_by("pk")
    return [item.result for item in items]


def study_items(study_slug: str, kind: str = KIND) -> Iterator[JobItem]:
    """The finished items of every job of `kind` configured on the study, oldest job first."""
    jobs = Job.objects.filter(kind=kind, config__study=study_slug)
    yield from (
        JobItem.objects.filter(job__in=jobs, status=JobItem.Status.DONE, result__isnull=False)
        .select_related("job")
        .order_by("job__created_at", "job_id", "pk")
        .iterator(chunk_size=2000)
    )
