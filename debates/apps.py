"""The debates app: one package per study design, sharing `models/`, `llm.py` and
`imports.py`. Its `ready()` is where each design plugs into the platform; read it to see
what registers what."""

from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"

    def ready(self) -> None:
        from debates import admin as _shared_admin  # noqa: F401  (the model-call log)
        from debates import preview
        from debates.dialogues import admin as dialogues_admin
        from debates.dialogues import condition_admin as _condition_admin  # noqa: F401  (conditions)
        from debates.dialogues import services as dialogues
        from debates.dialogues import steps as dialogue_steps
        from debates.generation import kinds as generation_kinds
        from debates.generation import offline as generation_offline
        from debates.jobs import admin as _jobs_admin  # noqa: F401  (LLM jobs, prompt templates)
        from debates.jobs import kinds as job_kinds
        from debates.jobs import tasks as _jobs_tasks  # noqa: F401  (Celery tasks of job items)
        from debates.judges import kinds as judges_kinds
        from debates.judges import offline as judges_offline
        from debates.judges import persona_kinds, persona_offline, strategy_kinds, strategy_offline
        from debates.live import admin as live_admin
        from debates.live import services as live
        from debates.live import steps as live_steps
        from debates.live import tasks as _live_tasks  # noqa: F401  (Celery tasks of live turns)
        from debates.pairwise import admin as _pairwise_admin  # noqa: F401  (its models' admin)
        from debates.pairwise import services as pairwise
        from debates.pairwise import steps as pairwise_steps
        from debates.persuasion import admin as _persuasion_admin  # noqa: F401  (its models' admin)
        from debates.persuasion import content as persuasion_content
        from debates.persuasion import offline as persuasion_offline
        from debates.persuasion import steps as persuasion_steps
        from debates.persuasion import tasks as _persuasion_tasks  # noqa: F401  (Celery tasks)
        from participants import places
        from studies import admin as studies_admin
        from studies import registry, snapshot
        from studies import services as studies

        # Design A: pre-generated dialogues.
        registry.register_all(
            dialogue_steps.StoryKind,
            dialogue_steps.DialogueKind,
            dialogue_steps.JudgementKind,
            dialogue_steps.BiasDetectionKind,
            dialogue_steps.RecallCheckKind,
        )
        places.register(dialogues.DIALOGUE_PLACES)
        studies.duplicate_hooks.append(dialogues.study_dialogues_copy)
        snapshot.snapshot_parts.append(dialogues.snapshot_part)
        studies_admin.study_inlines += [
            dialogues_admin.StudyDialogueInline,
            dialogues_admin.ConditionTargetInline,
        ]
        # The preview with choices (a step to start at, a condition or dialogue, a group).
        studies_admin.study_urls.append(preview.study_urls)
        studies_admin.study_links.append(preview.study_links)

        # Design B: live debate and consultancy.
        registry.register_all(live_steps.ClaimSessionKind, live_steps.ClaimDebriefKind)
        places.register(live.CLAIM_PLACES)
        studies.duplicate_hooks.append(live.study_claims_copy)
        snapshot.snapshot_parts.append(live.snapshot_part)
        studies_admin.study_inlines.append(live_admin.StudyClaimInline)

        # Design D: pairwise comparisons. Its instance set is named in the step's
        # configuration, so a duplicated study's steps already carry it.
        registry.register_all(pairwise_steps.PairwiseKind)
        places.register(pairwise.INSTANCE_PLACES)
        snapshot.snapshot_parts.append(pairwise.snapshot_part)

        # Design C: formal persuasion dialogues. Topics and agents are named in the step's
        # configuration, so a duplicated study's steps already carry them.
        registry.register_all(persuasion_steps.PersuasionKind)
        persuasion_offline.register()  # the offline backend's answers (demo, tests)
        snapshot.snapshot_parts.append(persuasion_content.snapshot_part)

        # LLM participants for design A: a job kind, and its offline judge (demo, tests).
        job_kinds.register(judges_kinds.LLMParticipantsKind)
        judges_offline.register()
        # Design B's persona and naive judges and strategy raters (paper 001, Study II, Table 3).
        job_kinds.register(persona_kinds.PersonaJudgesKind)
        job_kinds.register(strategy_kinds.StrategyRatersKind)
        persona_offline.register()
        strategy_offline.register()
        # Building design A's library (paper 000, Tables 9-29), and checking its quality.
        job_kinds.register(generation_kinds.GenerateDialoguesKind)
        job_kinds.register(generation_kinds.DialogueQualityKind)
        generation_offline.register()
