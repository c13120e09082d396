"""LLM participants, the database side: the dialogues a job judges, a dialogue as the prompt
sees it, and the finished judgements of a job or of a study (for the export)."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import QuerySet

from debates.judges.prompts import DialogueView
from debates.models import Dialogue, Job, JobItem, StudyDialogue

KIND = "llm_participants"


def dialogues_for(study_slug: str) -> QuerySet[Dialogue]:
    """The dialogues a study offers (all of them when `study_slug` is empty), in a stable order."""
    queryset = Dialogue.objects.select_related("case")
    if study_slug:
        ids = StudyDialogue.objects.filter(study__slug=study_slug).values("dialogue_id")
        queryset = queryset.filter(pk__in=ids)
    return queryset.order_by("case__slug", "slug")


def dialogue_view(slug: str) -> DialogueView:
    """The dialogue `slug` as the prompt and the result see it (Dialogue.DoesNotExist if gone)."""
    dialogue = Dialogue.objects.select_related("case").get(slug=slug)
    return DialogueView(
        slug=dialogue.slug,
        case=dialogue.case.slug,
        title=dialogue.case.title,
        story=dialogue.case.story,
        suspect_a=dialogue.suspect_for("A"),
        suspect_b=dialogue.suspect_for("B"),
        turns=[(t.speaker, t.text) for t in dialogue.turns.order_by("number")],
        condition=dialogue.condition,
        variant=dialogue.variant,
        active_side=dialogue.active_side,
        side_a=dialogue.side_a,
        culprit_side=dialogue.culprit_side,
        active_side_letter=dialogue.active_side_letter,
    )


def job_results(job: Job) -> list[dict]:
    """The results of the job's finished items."""
    items = job.items.filter(status=JobItem.Status.DONE, result__isnull=False).order_by("pk")
    return [item.result for item in items]


def study_items(study_slug: str, window: slice = slice(None)) -> Iterator[JobItem]:
    """The finished items of every LLM-participants job configured on the study, oldest job
    first (the export's rows); those of `window` (read with LIMIT and OFFSET) when given."""
    jobs = Job.objects.filter(kind=KIND, config__study=study_slug)
    yield from (
        JobItem.objects.filter(job__in=jobs, status=JobItem.Status.DONE, result__isnull=False)
        .select_related("job")
        .order_by("job__created_at", "job_id", "pk")[window]
        .iterator(chunk_size=2000)
    )
