"""The pre-registration snapshot: what a study is when it goes live (its settings, its steps
and their items with options and expected answers, its seed and analysis plan, and the
content and model settings it uses, by hash), and the SHA-256 that names it. Exports,
reports and the API carry the hash; `manage.py verify_study` recomputes it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from studies.models import Step, Study
from studies.texts import translations_snapshot

FORMAT = "rostrum.snapshot/1"
# Other apps add what they attach to a study (its dialogues, claims, model settings, …), from
# their `ready()`: callables (study) -> (name, JSON-ready value).
snapshot_parts: list[Callable[[Study], tuple[str, object]]] = []

# The study's settings that shape what participants meet and what is analysed (its title,
# status, internal notes and timestamps do not).
FROZEN_FIELDS = [
    "slug",
    "title",
    "prolific_study_id",
    "completion_code",
    "failed_check_code",
    "no_consent_code",
    "screened_out_code",
    "screened_out_message",
    "failed_check_message",
    "estimated_minutes",
    "time_limit_minutes",
    "attention_failures_to_end",
    "wpm_cap",
    "target_per_item",
    "seed",
    "exclusion_frees_place",
    "pilot",
    "analysis_plan",
]


def study_snapshot(study: Study) -> dict:
    """The study as it is now, JSON-ready, in a canonical order."""
    steps = Step.objects.filter(study=study).prefetch_related("questions").order_by("position")
    # The language and the translations only when the study has them, so studies frozen
    # before languages existed keep their hash.
    translations = translations_snapshot(study)
    language = {"language": study.language} if study.language != "en" else {}
    return {
        "format": FORMAT,
        "study": {**{name: getattr(study, name) for name in FROZEN_FIELDS}, **language},
        **({"translations": translations} if translations else {}),
        "steps": [
            {
                "position": step.position,
                "kind": step.kind,
                "title": step.title,
                "config": step.config,
                "questions": [
                    {
                        "key": q.key,
                        "kind": q.kind,
                        "text": q.text,
                        "help_text": q.help_text,
                        "options": q.option_list,
                        "required": q.required,
                        "min_value": q.min_value,
                        "max_value": q.max_value,
                        "min_length": q.min_length,
                        "expected_answer": q.expected_list,
                        # only when set, so studies frozen before it existed keep their hash
                        **({"specify_option": q.specify_option} if q.specify_option else {}),
                    }
                    for q in step.questions.order_by("position", "id")
                ],
            }
            for step in steps
        ],
        "content": dict(part(study) for part in snapshot_parts),
    }


def canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def digest(value) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def snapshot_drift(frozen: dict, now: dict, path: str = "") -> list[str]:
    """Where two snapshots differ, as readable paths (e.g. "steps[3].questions[0].text")."""
    if isinstance(frozen, dict) and isinstance(now, dict):
        found = []
        for key in sorted(set(frozen) | set(now)):
            where = f"{path}.{key}" if path else str(key)
            if key not in frozen:
                found.append(f"{where} was added")
            elif key not in now:
                found.append(f"{where} was removed")
            else:
                found += snapshot_drift(frozen[key], now[key], where)
        return found
    if isinstance(frozen, list) and isinstance(now, list) and len(frozen) == len(now):
        return [d for n, (a, b) in enumerate(zip(frozen, now)) for d in snapshot_drift(a, b, f"{path}[{n}]")]
    return [] if canonical(frozen) == canonical(now) else [f"{path} changed"]
