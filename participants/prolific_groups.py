"""Two-stage studies on Prolific, as paper 001 ran them: a screening study places people in belief
groups; each group becomes a participant group on Prolific; a main study is published to one group
and, when one of its people enters, their screening answers and group are carried over; sister
studies keep each other's participants out (on Prolific by a filter, here at entry).

Services (keyword-only): `prolific_groups_make` (the screening study's groups to Prolific, which
also takes out members excluded since), `prolific_groups_leave` (excluded participants out of their
participant group on Prolific, at once: called after a manual exclusion),
`recruitment_set` (a main study's source group and sisters, before its draft is created),
`recruitment_copy` (a duplicated study: its source's recruitment, and the source a sister),
`participant_admit` (called once at entry, by `services.participant_enter`: refuses a sister
study's participant, else carries the screening over), `screening_carry_over`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy

from participants import prolific, services
from participants.models import Participant, ProlificGroup, Recruitment, Response
from studies.models import Study

CARRIED_POSITION = 0  # carried-over answers sit before the study's first step (steps start at 1)
CARRIED_KIND = "carried_over"
SISTER_MESSAGE = gettext_lazy(
    "You have already taken part in a related study, so this one is not open to you. "
    "Please return it on Prolific: you will not be penalised."
)
Status = Participant.Status


def group_name(study: Study, label: str) -> str:
    """The participant group's name on Prolific (also how a creation cut short is found again)."""
    return f"rostrum {study.slug} {label}"


def group_members(*, study: Study) -> dict[str, list[str]]:
    """Each screening group's PROLIFIC_PIDs: completed, not excluded, not previews nor pilots."""
    rows = (
        Participant.objects.filter(
            study=study, status=Status.COMPLETED, excluded=False, is_preview=False, is_pilot=False
        )
        .exclude(group="")
        .order_by("group", "started_at")
        .values_list("group", "prolific_pid")
    )
    members: dict[str, list[str]] = {}
    for label, pid in rows:
        members.setdefault(label, []).append(pid)
    return members


def group_leavers(*, study: Study) -> dict[str, list[str]]:
    """Each screening group's PROLIFIC_PIDs that must not be in its participant group: placed in
    it, then excluded (an exclusion revoked makes them members again at the next make)."""
    rows = (
        Participant.objects.filter(study=study, excluded=True, is_preview=False, is_pilot=False)
        .exclude(group="")
        .order_by("group", "started_at")
        .values_list("group", "prolific_pid")
    )
    leavers: dict[str, list[str]] = {}
    for label, pid in rows:
        leavers.setdefault(label, []).append(pid)
    return leavers


def prolific_groups_make(*, study: Study, api: prolific.Client | None = None) -> list[ProlificGroup]:
    """Make (or update) a participant group on Prolific per screening group of the study, with its
    members; keep each mapping (study, label) -> Prolific group id. Adding someone already in a
    group does nothing on Prolific, so running it again adds only the newly completed."""
    members = group_members(study=study)
    if not members:
        raise ValidationError("No completed participant is placed in a screening group yet.")
    api = api or prolific.client()
    made = []
    for label, pids in members.items():
        made.append(_group_update(api, study, label, pids))
    _leavers_remove(api, study, group_leavers(study=study))
    return made


def prolific_groups_leave(*, participants: Iterable[Participant], api: prolific.Client | None = None) -> int:
    """Take the excluded ones among `participants` out of their screening group's participant
    group on Prolific (a main study published to it stops admitting them at once). Removing
    someone not in a group does nothing on Prolific, so this can run again safely. Returns how
    many were sent for removal. Raises ProlificError (the exclusions stay: making the groups again
    removes them)."""
    ids = [p.pk for p in participants]
    rows = (
        Participant.objects.filter(pk__in=ids, excluded=True, is_preview=False, is_pilot=False)
        .exclude(group="")
        .values_list("study_id", "group", "prolific_pid")
    )
    leaving: dict[int, dict[str, list[str]]] = {}
    for study_id, label, pid in rows:
        leaving.setdefault(study_id, {}).setdefault(label, []).append(pid)
    on_prolific = ProlificGroup.objects.filter(study_id__in=leaving).exclude(prolific_group_id="")
    if not on_prolific.exists():
        return 0
    api = api or prolific.client()
    sent = 0
    for study in Study.objects.filter(pk__in=leaving).order_by("pk"):
        sent += _leavers_remove(api, study, leaving[study.pk])
    return sent


def _leavers_remove(api: prolific.Client, study: Study, leavers: dict[str, list[str]]) -> int:
    """Remove each group's leavers from its participant group on Prolific; keep the count."""
    sent = 0
    for row in ProlificGroup.objects.filter(study=study, label__in=leavers).exclude(prolific_group_id=""):
        api.participant_group_remove(row.prolific_group_id, leavers[row.label])
        sent += len(leavers[row.label])
        members = len(group_members(study=study).get(row.label, []))
        ProlificGroup.objects.filter(pk=row.pk).update(members=members, updated_at=timezone.now())
    return sent


def _group_update(api: prolific.Client, study: Study, label: str, pids: list[str]) -> ProlificGroup:
    """One screening group on Prolific: created with its members (or found again by name, when a
    creation's answer was lost), else its new members added."""
    row, _ = ProlificGroup.objects.get_or_create(study=study, label=label)
    if row.prolific_group_id:
        api.participant_group_add(row.prolific_group_id, pids)
    else:
        name = group_name(study, label)
        found = next((g for g in api.participant_groups() if g.get("name") == name), None)
        if found:
            api.participant_group_add(str(found["id"]), pids)
        row.prolific_group_id = str((found or api.participant_group_create(name, pids))["id"])
    ProlificGroup.objects.filter(pk=row.pk).update(
        prolific_group_id=row.prolific_group_id, members=len(pids), updated_at=timezone.now()
    )
    row.refresh_from_db()
    return row


def recruitment_set(
    *, study: Study, group: ProlificGroup | None, sisters: Iterable[Study] = ()
) -> Recruitment:
    """A study's recruitment: published to `group` of its screening study (the source whose answers
    are carried over), keeping out participants of `sisters`. Set before the draft is created."""
    sisters = [s for s in sisters if s.pk != study.pk]
    if group is not None and group.study_id == study.pk:
        raise ValidationError("A study cannot be its own screening study.")
    if group is not None and not group.prolific_group_id:
        raise ValidationError(f"The group {group.label} is not on Prolific yet: make the groups first.")
    with transaction.atomic():
        recruitment, _ = Recruitment.objects.update_or_create(
            study=study, defaults={"group": group, "source_id": group.study_id if group else None}
        )
        recruitment.sisters.set(sisters)
    return recruitment


def recruitment_copy(*, source: Study, copy: Study) -> None:
    """A duplicated study (a new wave, a changed design) recruits as its source did (the same
    screening group, and the sisters the source keeps out or is kept out by: the check at entry
    goes both ways) and keeps the source's own participants out: someone who has
    seen the first version is not a new participant of the second. Changed on the copy's
    Prolific page before its draft is created (`recruitment_set`)."""
    recruitment = Recruitment.objects.filter(study=source).first()
    keeping_it_out = Study.objects.filter(recruitment__sisters=source)  # either way, as at entry
    sisters = [source, *(recruitment.sisters.all() if recruitment else ()), *keeping_it_out]
    recruitment_set(study=copy, group=recruitment.group if recruitment else None, sisters=sisters)


@dataclass(frozen=True)
class Admission:
    """What entry checks for a study: its sister studies (either naming the other) and the
    screening study its answers come from."""

    sisters: frozenset[int]
    source: Study | None


def study_admission(study: Study) -> Admission:
    """Read once per study row and kept with it: participant pages share a row cached for
    STUDY_CACHE_SECONDS (`studies.services.study_cached`), so a change made in the admin reaches
    entry as soon as the row is read again, and most entries read nothing here."""
    admission = getattr(study, "_rostrum_admission", None)
    if admission is None:
        named = Recruitment.objects.filter(study=study).values_list("sisters", flat=True)
        naming = Recruitment.objects.filter(sisters=study).values_list("study_id", flat=True)
        recruitment = Recruitment.objects.filter(study=study).select_related("source").first()
        sisters = frozenset(pk for pk in (*named, *naming) if pk is not None)
        admission = Admission(sisters=sisters, source=recruitment.source if recruitment else None)
        study._rostrum_admission = admission
    return admission


def sister_took_part(*, study: Study, prolific_pid: str) -> bool:
    """Whether this PROLIFIC_PID took part in a sister study (either study naming the other)."""
    sisters = study_admission(study).sisters
    return bool(sisters) and (
        Participant.objects.filter(study_id__in=sisters, prolific_pid=prolific_pid)
        .filter(is_preview=False, is_pilot=False)
        .exclude(status=Status.STUDY_FULL)  # turned away at the door: never took part
        .exists()
    )


def participant_admit(*, participant: Participant) -> None:
    """At entry (inside the transaction that creates the participant): a sister study's participant
    is refused (EntryError: the creation rolls back, no place); anyone else entering a main study
    gets their screening answers and group carried over."""
    if participant.is_preview or participant.is_pilot:
        return
    if sister_took_part(study=participant.study, prolific_pid=participant.prolific_pid):
        raise services.EntryError(SISTER_MESSAGE)
    source = study_admission(participant.study).source
    if source is not None:
        screening_carry_over(participant=participant, source=source)


def screening_carry_over(*, participant: Participant, source: Study) -> int:
    """Copy the participant's answers in the screening study `source` (found by PROLIFIC_PID:
    completed, not excluded) as responses of this study, with their original keys, at position 0,
    and set their group. Once: a second call copies nothing. Returns the answers copied."""
    origin = Participant.objects.filter(
        study=source,
        prolific_pid=participant.prolific_pid,
        status=Status.COMPLETED,
        excluded=False,
        is_preview=False,
        is_pilot=False,
    ).first()
    if origin is None or participant.responses.filter(position=CARRIED_POSITION).exists():
        return 0
    now = timezone.now()
    rows = [
        Response(
            participant=participant,
            position=CARRIED_POSITION,
            step_kind=answer.step_kind or CARRIED_KIND,
            key=answer.key,
            value=answer.value,
            value_num=answer.value_num,
            is_check=answer.is_check,
            passed=answer.passed,
            created_at=now,
        )
        for answer in origin.responses.order_by("position", "id")
    ]
    with transaction.atomic():
        Response.objects.bulk_create(rows, ignore_conflicts=True)
        if origin.group:
            Participant.objects.filter(pk=participant.pk, group="").update(group=origin.group)
            participant.group = participant.group or origin.group
    return len(rows)
