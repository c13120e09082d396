"""The design-A pipeline's database side: cases as the pipeline sees them, saving a built
dialogue into the library with its provenance and its quality, and recording the quality
of a dialogue judged later. The only code of the pipeline that writes."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from debates.generation import specs
from debates.generation.pipeline import Attempt
from debates.generation.plans import CaseView, Setup
from debates.models import Case, Dialogue, DialogueAssignment, LLMCall, Turn, count_words
from debates.models.dialogues import paper_conditions_ensure

MIN_EVIDENCE = 4  # two clusters of two units each, at least


def cases_for(slugs: list[str]) -> QuerySet[Case]:
    """The chosen cases (every case when none is chosen), in a stable order."""
    queryset = Case.objects.all()
    if slugs:
        queryset = queryset.filter(slug__in=slugs)
    return queryset.order_by("slug")


def case_problems(case: Case) -> list[str]:
    """Why the pipeline cannot build dialogues about a case (empty: it can)."""
    problems = []
    if len(case.evidence or []) < MIN_EVIDENCE:
        problems.append(f"{case.slug}: it needs at least {MIN_EVIDENCE} numbered evidence units")
    if not case.story.strip():
        problems.append(f"{case.slug}: it has no story")
    return problems


def case_view(slug: str) -> CaseView:
    case = Case.objects.get(slug=slug)
    return CaseView(
        slug=case.slug,
        title=case.title,
        story=case.story,
        suspects=case.suspect_names,
        culprit=case.culprit,
        rival=case.rival,
        evidence={int(unit["number"]): unit["text"] for unit in case.evidence or []},
    )


def dialogue_slug(case_slug: str, condition: specs.Condition, job_id: int) -> str:
    return f"{case_slug[:64]}-{condition.key}-j{job_id}"


def dialogue_save(
    *, slug: str, setup: Setup, kept: Attempt, attempts: list[Attempt], provenance: dict
) -> Dialogue:
    """Store the kept attempt as a library dialogue (or update the one this item stored
    before a crash); a dialogue participants already have is never rewritten."""
    condition = setup.condition
    paper_conditions_ensure()  # the conditions the pipeline builds (the paper's)
    quality = {
        "pass_mark": provenance.get("pass_mark"),
        "sides": kept.quality,
        "manifestation": kept.manifestation,
        "attempts": [
            {"attempt": a.number, "score": a.score, "passed": a.passed, "why": a.why} for a in attempts
        ],
        "why": kept.why,
    }
    fields = {
        "case": Case.objects.get(slug=setup.case.slug),
        "condition": condition.bias,
        "active_side": setup.active_role,
        "variant": condition.variant,
        "side_a": setup.side_a_role,
        "words": sum(count_words(text) for _, text in kept.turns),
        "quality_score": kept.score,
        "quality_passed": kept.passed,
        "quality": quality,
        "provenance": provenance,
    }
    with transaction.atomic():
        existing = Dialogue.objects.select_for_update().filter(slug=slug).first()
        if existing and DialogueAssignment.objects.filter(dialogue=existing).exists():
            return existing
        dialogue, _ = Dialogue.objects.update_or_create(slug=slug, defaults=fields)
        dialogue.turns.all().delete()
        Turn.objects.bulk_create(
            Turn(dialogue=dialogue, number=n, speaker=speaker, text=text)
            for n, (speaker, text) in enumerate(kept.turns, 1)
        )
    return dialogue


def item_call_ids(item_id: int) -> list[int]:
    return list(LLMCall.objects.filter(job_item_id=item_id).order_by("pk").values_list("pk", flat=True))


def dialogue_setup(slug: str, words_per_turn: int) -> tuple[Setup, list[tuple[str, str]]]:
    """An existing dialogue as a `Setup` (for judging it) and its turns."""
    dialogue = Dialogue.objects.select_related("case").get(slug=slug)
    letter = dialogue.active_side_letter
    condition = specs.Condition(0, dialogue.condition, letter, dialogue.variant)
    setup = Setup(
        case=case_view(dialogue.case.slug),
        side_a_role=dialogue.side_a,
        condition=condition,
        fallacy=(dialogue.provenance or {}).get("fallacy", ""),
        words_per_turn=words_per_turn,
        turns=dialogue.turns.count(),
    )
    return setup, [(t.speaker, t.text) for t in dialogue.turns.order_by("number")]


def quality_record(*, slug: str, attempt: Attempt, pass_mark: int, job: str) -> None:
    """The quality check of an existing dialogue (imported or built earlier)."""
    Dialogue.objects.filter(slug=slug).update(
        quality_score=attempt.score,
        quality_passed=attempt.passed,
        quality={
            "pass_mark": pass_mark,
            "sides": attempt.quality,
            "manifestation": attempt.manifestation,
            "why": attempt.why,
            "job": job,
        },
    )
