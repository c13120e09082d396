"""The live overview of a study: where participants are, how full each place is (dialogues,
claim cells, comparison instances), who is excluded and why, and who is flagged."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from analysis.exports.table import analysed
from debates.dialogues.services import quotas
from debates.models import (
    DialogueAssignment,
    InstanceSet,
    LiveSession,
    StudyClaim,
    StudyDialogue,
    condition_labels,
)
from debates.pairwise.services import instance_fill, valid_per_instance
from participants.flags import entry_alert
from participants.models import Exclusion, Flag, Participant
from participants.places import lease_minutes
from participants.steps import parse_groups
from studies.models import Study
from studies.services import study_steps


def study_overview(study: Study) -> dict:
    now = timezone.now()
    real = Participant.objects.filter(analysed(""), study=study)
    status_counts = dict(real.values_list("status").annotate(n=Count("id")))
    # Still at their step: a lease not over, or only the short idle lease over within the time
    # limit (reading a long page; the sweep leaves them active, their place free meanwhile).
    reading = Q(place_idle=True, started_at__gt=now - timedelta(minutes=lease_minutes(study)))
    active = real.filter(status=Participant.Status.ACTIVE)
    at_step = dict(
        active.filter(Q(expires_at__gt=now) | reading).values_list("position").annotate(n=Count("id"))
    )
    expired_active = active.filter(expires_at__lte=now).exclude(reading).count()
    steps = [
        {"position": s.position, "title": s.title, "kind": s.kind, "active": at_step.get(s.position, 0)}
        for s in study_steps(study)
    ]
    exclusions = Counter(
        Exclusion.objects.filter(analysed(), participant__study=study, revoked_at__isnull=True).values_list(
            "reason", flat=True
        )
    )
    study_flags = Flag.objects.filter(analysed(), participant__study=study)
    flagged = dict(study_flags.values_list("kind").annotate(n=Count("participant", distinct=True)).order_by())
    return {
        "now": now,
        "statuses": [
            {"value": value, "label": label, "count": status_counts.get(value, 0)}
            for value, label in Participant.Status.choices
        ],
        "total": sum(status_counts.values()),
        "expired_active": expired_active,
        "steps": steps,
        "dialogues": dialogue_fill_rows(study, now),
        "conditions": condition_fill_rows(study, now),
        "claims": claim_fill_rows(study, now),
        "claim_study": StudyClaim.objects.filter(study=study).exists(),
        "pairs": pairs_fill(study, now),
        "live_now": LiveSession.objects.filter(
            analysed(), participant__study=study, phase=LiveSession.Phase.CHAT
        ).count(),
        "exclusions": [
            {"label": label, "count": exclusions.get(value, 0)} for value, label in Exclusion.Reason.choices
        ],
        "excluded_participants": real.filter(excluded=True).count(),
        "flags": [
            {"value": value, "label": label, "count": flagged.get(value, 0)}
            for value, label in Flag.Kind.choices
        ],
        "flagged_participants": real.filter(Exists(Flag.objects.filter(participant=OuterRef("pk")))).count(),
        "pilots": pilot_counts(study),
        "entry_alert": entry_alert(study_id=study.pk, now=now).summary(),
    }


def pilot_counts(study: Study) -> dict:
    """The study's pilots (simulated participants), counted apart from everything above."""
    labels = dict(Participant.Status.choices)
    by_status = dict(
        Participant.objects.filter(study=study, is_pilot=True)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {
        "total": sum(by_status.values()),
        "statuses": [{"label": labels[value], "count": n} for value, n in sorted(by_status.items())],
    }


def dialogue_fill_rows(study: Study, now) -> list[dict]:
    completed = Q(participant__status=Participant.Status.COMPLETED) & analysed()
    counts = {
        row["study_dialogue"]: row
        for row in DialogueAssignment.objects.filter(study_dialogue__study=study)
        .values("study_dialogue")
        .annotate(
            done=Count("id", filter=completed & Q(participant__excluded=False)),
            done_excluded=Count("id", filter=completed & Q(participant__excluded=True)),
            leased=Count(
                "id",
                filter=Q(participant__status=Participant.Status.ACTIVE, participant__expires_at__gt=now)
                & analysed(),
            ),
        )
    }
    slots = list(StudyDialogue.objects.filter(study=study).select_related("dialogue__case"))
    room = quotas(study, slots, now)
    labels = condition_labels()
    rows = []
    for slot in slots:
        c = counts.get(slot.pk, {})
        held = room.fill.get(slot.pk, 0)
        target = room.item_target(slot)
        rows.append(
            {
                "slug": slot.dialogue.slug,
                "case": slot.dialogue.case.title,
                "condition": labels.get(slot.dialogue.condition, slot.dialogue.condition),
                "active_side": slot.dialogue.active_side,
                "side_a": slot.dialogue.side_a,
                "active": slot.active,
                "done": c.get("done", 0),
                "done_excluded": c.get("done_excluded", 0),
                "leased": c.get("leased", 0),
                "held": held,
                "target": target if target is not None else "—",
                "over": target is not None and held > target,
                "percent": _percent(held, target),
            }
        )
    return rows


def condition_fill_rows(study: Study, now) -> list[dict]:
    """Places per condition against its target (design A)."""
    slots = list(StudyDialogue.objects.filter(study=study, active=True).select_related("dialogue"))
    room = quotas(study, slots, now)
    rows = []
    for condition in sorted({s.dialogue.condition for s in slots}):
        held, target = room.condition_fill(condition), room.condition_target(condition)
        rows.append(
            {
                "condition": condition,
                "dialogues": sum(1 for s in slots if s.dialogue.condition == condition),
                "held": held,
                "target": target,
                "set": condition in room.condition_targets,
                "over": held > target,
                "percent": _percent(held, target),
            }
        )
    return rows


def _percent(held: int, target: int | None) -> int:
    return min(100, round(100 * held / target)) if target else 0


def claim_fill_rows(study: Study, now) -> list[dict]:
    """Places per screening group × protocol × claim (design B): every cell of the design (the
    screening step's groups, or none; the claim steps' protocols; the active claims) with its
    target, filled or not, then any cell used outside it (a claim made inactive since)."""
    completed = Q(participant__status=Participant.Status.COMPLETED, participant__excluded=False)
    leased = Q(participant__status=Participant.Status.ACTIVE, participant__expires_at__gt=now)
    used = {
        (row["group"], row["protocol"], row["claim__slug"]): row
        for row in LiveSession.objects.filter(analysed(), participant__study=study)
        .values("group", "protocol", "claim__slug")
        .annotate(done=Count("id", filter=completed), leased=Count("id", filter=leased))
        .order_by()
    }
    offered = StudyClaim.objects.filter(study=study).select_related("claim").order_by("claim__slug")
    targets = {s.claim.slug: s.target if s.target is not None else study.target_per_item for s in offered}
    active = [s.claim.slug for s in offered if s.active]
    design = [(g, p, c) for g in claim_groups(study) for p in claim_protocols(study) for c in active]
    outside = sorted(set(used) - set(design))
    rows = []
    for cell in design + outside:
        counts = used.get(cell, {})
        done, leased_now = counts.get("done", 0), counts.get("leased", 0)
        target = targets.get(cell[2], study.target_per_item)
        rows.append(
            {
                "group": cell[0],
                "protocol": cell[1],
                "claim__slug": cell[2],
                "done": done,
                "leased": leased_now,
                "held": done + leased_now,
                "target": target,
                "percent": _percent(done + leased_now, target),
                "in_design": cell not in outside,
            }
        )
    return rows


def claim_groups(study: Study) -> list[str]:
    """The screening groups participants are balanced within ("" without a screening step)."""
    groups = []
    for step in study_steps(study):
        if step.kind == "screening":
            try:
                groups += [label for label, _, _ in parse_groups(step.config.get("groups", ""))]
            except ValidationError:
                continue
    return list(dict.fromkeys(groups)) or [""]


def claim_protocols(study: Study) -> list[str]:
    """The protocols the study's claim steps use, debate first."""
    steps = [step for step in study_steps(study) if step.kind == "claim_session"]
    chosen = {step.config.get("protocols", "both") for step in steps}
    return [p for p in ("debate", "consultancy") if any(c in ("both", p) for c in chosen)]


def pairs_fill(study: Study, now) -> list[dict]:
    """For each instance set a pairwise step of this study uses: how far the quotas are."""
    slugs = {s.config.get("instance_set") for s in study_steps(study) if s.kind == "pairwise"}
    rows = []
    for pool in InstanceSet.objects.filter(slug__in=slugs):
        held = instance_fill(pool, now)
        valid = valid_per_instance(pool)
        total = pool.instances.count()
        r = pool.annotations_per_instance
        rows.append(
            {
                "pool": pool,
                "instances": total,
                "complete": sum(1 for n in valid.values() if n >= r),
                "valid": sum(valid.values()),
                "leased": sum(held.values()) - sum(valid.values()),
                "wanted": total * r,
                "percent": round(100 * sum(valid.values()) / (total * r)) if total else 0,
            }
        )
    return rows
