"""Loading the demo studies: the one way the `load_demo` command, the tests and the
benchmarks set them up. Every loader is idempotent: the content is imported (updated in
place), a study that exists is reused, and a study still in draft is set live.

Keyword overrides change the study's fields (slug, target_per_item, …) for tests and
benchmarks; the demo itself uses none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import transaction

from debates.demo.claim_debate import CLAIM_DEBATE_STUDY, CLAIMS_FILE, DEBATERS
from debates.demo.generation import generation_job  # noqa: F401  (design A's library built by a job)
from debates.demo.judges import llm_participants_job  # noqa: F401  (design A's LLM participants job)
from debates.demo.mystery import CASES_FILE, MYSTERY_STUDY
from debates.demo.persuasion import AGENTS, BATCH, PERSUASION_HUMANS_STUDY, PERSUASION_LIVE_STUDY, TOPIC
from debates.demo.persuasion_pairs import PAIRS_SET, PERSUASION_PAIRS_STUDY
from debates.dialogues.imports import CaseImportSummary, cases_import
from debates.live.imports import ClaimImportSummary, claims_import
from debates.models import (
    AgentConfig,
    Claim,
    DebaterConfig,
    Dialogue,
    InstanceSet,
    PersuasionBatch,
    StudyClaim,
    StudyDialogue,
    Topic,
)
from debates.pairwise.sampler import instance_set_from_dialogues
from studies.models import Study
from studies.services import study_build, study_set_status


def demo_cases() -> CaseImportSummary:
    """The demo's mystery cases and their dialogues (design A)."""
    return cases_import(text=CASES_FILE.read_text(encoding="utf-8"))


def demo_claims() -> ClaimImportSummary:
    """The demo's claims (design B) and its debater configuration."""
    summary = claims_import(text=CLAIMS_FILE.read_text(encoding="utf-8"))
    for spec in DEBATERS:
        DebaterConfig.objects.get_or_create(name=spec["name"], defaults=spec)
    return summary


def _demo_case_slugs() -> list[str]:
    return [c["slug"] for c in json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]]


def _demo_dialogue_slugs() -> list[str]:
    return [d["slug"] for d in json.loads(CASES_FILE.read_text(encoding="utf-8"))["dialogues"]]


def _demo_claim_slugs() -> list[str]:
    return [c["slug"] for c in json.loads(CLAIMS_FILE.read_text(encoding="utf-8"))["claims"]]


def _study(spec: dict, overrides: dict) -> Study:
    """The study of `spec` (with overrides), built unless one with its slug exists; an
    existing study is reused only as it is (overrides are for building)."""
    spec = {**spec, **overrides}
    study = Study.objects.filter(slug=spec["slug"]).first()
    if study is None:
        study = study_build(spec=spec)
    elif set(overrides) - {"slug"}:
        raise ValueError(f"the study {study.slug!r} exists: give another slug to build it with overrides")
    return study


def _go_live(study: Study) -> Study:
    """A demo study still in draft (just built) is set live, its design checked first."""
    if study.status == Study.Status.DRAFT:
        study_set_status(study=study, status=Study.Status.LIVE)
    return study


@transaction.atomic
def mystery_study(*, content: bool = True, **overrides) -> Study:
    """`mystery-debate` (design A) on the demo cases' dialogues. `content=False` skips
    importing the cases (the caller has just done it)."""
    if content:
        demo_cases()
    study = _study(MYSTERY_STUDY, overrides)
    # The demo file's dialogues only: the library's generated ones are the experimenter's to add.
    for dialogue in Dialogue.objects.filter(slug__in=_demo_dialogue_slugs()):
        StudyDialogue.objects.get_or_create(study=study, dialogue=dialogue)
    return _go_live(study)


@transaction.atomic
def claim_study(*, content: bool = True, **overrides) -> Study:
    """`claim-debate` (design B): both protocols on the demo claims."""
    if content:
        demo_claims()
    study = _study(CLAIM_DEBATE_STUDY, overrides)
    for claim in Claim.objects.filter(slug__in=_demo_claim_slugs()):
        StudyClaim.objects.get_or_create(study=study, claim=claim)
    return _go_live(study)


@transaction.atomic
def pairs_set(**overrides) -> InstanceSet:
    """The demo instance set, built from the demo dialogues (imported if missing)."""
    pool = InstanceSet.objects.filter(slug=PAIRS_SET["slug"]).first()
    if pool is not None:
        if overrides:
            raise ValueError(f"the instance set {pool.slug!r} exists: overrides are for building it")
        return pool
    if not Dialogue.objects.filter(slug__in=_demo_dialogue_slugs()).exists():
        demo_cases()
    pool = InstanceSet.objects.create(**{**PAIRS_SET, **overrides})
    dialogues = list(Dialogue.objects.filter(slug__in=_demo_dialogue_slugs()).select_related("case"))
    instance_set_from_dialogues(instance_set=pool, dialogues=dialogues)
    return pool


@transaction.atomic
def pairs_study(*, set_overrides: dict | None = None, **overrides) -> Study:
    """`persuasion-pairs` (design D) on the demo instance set."""
    pairs_set(**(set_overrides or {}))
    return _go_live(_study(PERSUASION_PAIRS_STUDY, overrides))


def demo_persuasion_content() -> Topic:
    """The demo topic and agent configurations (design C)."""
    topic, _ = Topic.objects.get_or_create(slug=TOPIC["slug"], defaults=TOPIC)
    for spec in AGENTS:
        AgentConfig.objects.get_or_create(name=spec["name"], defaults=spec)
    return topic


@transaction.atomic
def persuasion_study(*, humans: bool = False, **overrides) -> Study:
    """`persuasion-live` (a participant against an AI agent), or with `humans`
    `persuasion-humans` (participants paired in the waiting room)."""
    demo_persuasion_content()
    return _go_live(_study(PERSUASION_HUMANS_STUDY if humans else PERSUASION_LIVE_STUDY, overrides))


def persuasion_batch(*, run: bool = True) -> PersuasionBatch:
    """`demo-batch`: the three demo agents against each other, each on each side, on the
    demo topic; with `run`, played here to the end (the offline model: a few seconds)."""
    from debates.persuasion import batches
    from debates.persuasion.tasks import run_here

    topic = demo_persuasion_content()
    batch, created = PersuasionBatch.objects.get_or_create(name=BATCH["name"], defaults=BATCH)
    if created:
        batch.topics.set([topic])
        batch.agents.set(AgentConfig.objects.filter(name__in=[a["name"] for a in AGENTS]))
    if run and batch.status != PersuasionBatch.Status.DONE:
        for turn in batches.batch_start(batch_id=batch.pk):
            run_here(turn.pk)
        batch.refresh_from_db()
    return batch


@dataclass
class DemoLoad:
    cases: CaseImportSummary
    claims: ClaimImportSummary
    studies: list[Study]


@transaction.atomic
def load_all() -> DemoLoad:
    """Every demo study, with its content imported once."""
    cases, claims = demo_cases(), demo_claims()
    studies = [
        mystery_study(content=False),
        claim_study(content=False),
        pairs_study(),
        persuasion_study(),
        persuasion_study(humans=True),
    ]
    return DemoLoad(cases, claims, studies)
