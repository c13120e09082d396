"""A study's configuration as plain data: what an analyst needs to know of how the study
was run (its settings, steps, items, content and model settings), for reports and bundles."""

from __future__ import annotations

from decimal import Decimal

from debates.models import DebaterConfig, InstanceSet, StudyClaim, StudyDialogue
from studies.models import Study
from studies.services import STUDY_FIELDS, study_steps

DEBATER_FIELDS = ["name", "model", "temperature", "max_tokens", "seed", "max_words", "system_prompt"]
SET_FIELDS = ["slug", "title", "seed", "excerpt_turns", "per_pair", "annotations_per_instance", "shortfalls"]


def study_configuration(study: Study) -> dict:
    """JSON-ready: the study's fields, its steps with their configuration and items, the
    content it offers, and the debater configurations and instance sets its steps name."""
    steps = study_steps(study)
    config = {
        "slug": study.slug,
        **{name: _plain(getattr(study, name)) for name in sorted(STUDY_FIELDS)},
        "effective_time_limit_minutes": study.effective_time_limit_minutes,
        "locked_at": study.locked_at.isoformat() if study.locked_at else None,
        "steps": [
            {
                "position": s.position,
                "kind": s.kind,
                "title": s.title,
                "config": s.config,
                "questions": [_question(q) for q in s.questions.all()],
            }
            for s in steps
        ],
        "dialogues": [
            {"dialogue": row.dialogue.slug, "active": row.active}
            for row in StudyDialogue.objects.filter(study=study).select_related("dialogue").order_by("id")
        ],
        "claims": [
            {"claim": row.claim.slug, "active": row.active}
            for row in StudyClaim.objects.filter(study=study).select_related("claim").order_by("id")
        ],
    }
    named = {
        value
        for s in steps
        for key, value in s.config.items()
        if key in ("debater_a", "debater_b", "consultant")
    }
    config["debaters"] = [
        {**{f: _plain(getattr(d, f)) for f in DEBATER_FIELDS}, "template_version": d.template_version}
        for d in DebaterConfig.objects.filter(name__in=named).order_by("name")
    ]
    sets = {s.config.get("instance_set") for s in steps if s.kind == "pairwise"}
    config["instance_sets"] = [
        {**{f: _plain(getattr(pool, f)) for f in SET_FIELDS}, "instances": pool.instances.count()}
        for pool in InstanceSet.objects.filter(slug__in=sets).order_by("slug")
    ]
    return config


def _question(q) -> dict:
    return {
        "key": q.key,
        "kind": q.kind,
        "text": q.text,
        "options": q.option_list,
        "required": q.required,
        "min_value": q.min_value,
        "max_value": q.max_value,
        "min_length": q.min_length,
        "expected_answer": q.expected_list,
    }


def _plain(value):
    return float(value) if isinstance(value, Decimal) else value
