"""The admin's side of Prolific's API: a page per study (linked from the study as "Prolific") to
create the draft on Prolific, publish, pause, resume, stop and sync it, and to review its
submissions with their evidence (checks, timing, exclusions, flags) beside Prolific's status and
Rostrum's: approve, bulk-approve, reject with a message and a category, pay bonuses. Also the
lists of submissions (both statuses, disagreements flagged) and bonuses.

Registered from `ParticipantsConfig.ready()`: the study admin's link and URL hooks."""

from __future__ import annotations

import secrets
from collections import defaultdict

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from participants import prolific, prolific_groups, prolific_review
from participants.admin import flags_text
from participants.models import (
    Bonus,
    Exclusion,
    Flag,
    Participant,
    ProlificGroup,
    ProlificStudy,
    ProlificSubmission,
    Recruitment,
)
from participants.prolific import ProlificError
from studies import registry
from studies.models import Study

VIEW_PERMISSION = "participants.view_participant"
ACT_PERMISSION = "participants.change_participant"


def study_links(study: Study) -> list[tuple[str, str]]:
    return [("Prolific", reverse("admin:studies_study_prolific", args=[study.pk]))]


def study_urls(site) -> list:
    return [path("<int:study_id>/prolific/", site.admin_view(review_view), name="studies_study_prolific")]


class DraftForm(forms.Form):
    """What the draft on Prolific needs beyond the study's own settings."""

    places = forms.IntegerField(min_value=1, help_text="Participants wanted on Prolific.")
    reward = forms.CharField(help_text="Reward per participant, in the account's currency (e.g. 2.50).")
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="What Prolific shows participants about the study.",
    )
    devices = forms.MultipleChoiceField(
        choices=[(d, d) for d in prolific.DEVICES],
        initial=list(prolific.DEVICES),
        widget=forms.CheckboxSelectMultiple,
    )
    screen_out_reward = forms.CharField(
        required=False, help_text="Fixed screen-out reward (e.g. 0.20), when the study screens people out."
    )
    screen_out_slots = forms.IntegerField(
        required=False, min_value=1, help_text="Screen-out places, if capped."
    )

    def draft(self) -> prolific.Draft:
        data = self.cleaned_data
        screen_out = data.get("screen_out_reward") or ""
        return prolific.Draft(
            places=data["places"],
            reward_cents=prolific_review.amount_cents(data["reward"]),
            description=data["description"],
            devices=tuple(data["devices"]),
            screen_out_reward_cents=prolific_review.amount_cents(screen_out) if screen_out.strip() else None,
            screen_out_slots=data.get("screen_out_slots"),
        )


class RecruitmentForm(forms.Form):
    """Who may take part: saved at once (entry checks it from the next read of the study), and sent
    to Prolific as the draft's filters when the draft is created."""

    group = forms.ModelChoiceField(
        queryset=ProlificGroup.objects.exclude(prolific_group_id="").select_related("study"),
        required=False,
        help_text="Only participants of this group of a screening study (their screening answers and "
        "group are carried over when they enter).",
    )
    sisters = forms.ModelMultipleChoiceField(
        queryset=Study.objects.order_by("-pk"),
        required=False,
        label="Keep out participants of",
        # Boxes to tick, not a list to Ctrl-click: one plain click there dropped every other
        # study, a first wave's too (the second researcher walk).
        widget=forms.CheckboxSelectMultiple,
    )

    @classmethod
    def of(cls, study: Study, data=None) -> RecruitmentForm:
        recruitment = Recruitment.objects.filter(study=study).first()
        initial = {}
        if recruitment is not None:
            initial = {
                "group": recruitment.group_id,
                "sisters": list(recruitment.sisters.values_list("pk", flat=True)),
            }
        form = cls(data, initial=initial)
        form.fields["sisters"].queryset = Study.objects.exclude(pk=study.pk).order_by("-pk")
        return form


# --- The review page -----------------------------------------------------------------------


def review_view(request, study_id: int):
    study = get_object_or_404(Study, pk=study_id)
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    places = places_needed(study)
    if request.POST.get("action") == "create":
        draft_form = DraftForm(request.POST)
    else:
        draft_form = DraftForm(initial={"places": places[0]} if places else None)
    recruitment_form = RecruitmentForm.of(
        study, request.POST if request.POST.get("action") == "recruitment" else None
    )
    if request.method == "POST":
        if not request.user.has_perm(ACT_PERMISSION):
            raise PermissionDenied
        if _act(request, study, draft_form, recruitment_form):
            return redirect(request.get_full_path())
    context = {
        **admin.site.each_context(request),
        "title": f"Prolific: {study.title}",
        "opts": Study._meta,
        "study": study,
        "remote": ProlificStudy.objects.filter(study=study).first(),
        "screening_groups": ProlificGroup.objects.filter(study=study).order_by("label"),
        "screens": study.steps.filter(kind="screening").exists(),
        "configured": bool(settings.PROLIFIC_API_TOKEN),
        "study_url": prolific.study_url(study),
        "places_needed": places,
        "site_url_elsewhere": _site_url_elsewhere(request),
        "codes": prolific.completion_codes(study),
        "draft_form": draft_form,
        "recruitment_form": recruitment_form,
        "kept_out": recruitment_form.fields["sisters"].queryset.filter(
            pk__in=recruitment_form.initial.get("sisters", ())
        ),
        "kept_out_by": Study.objects.filter(recruitment__sisters=study).order_by("-pk"),
        "rows": review_rows(study, show=request.GET.get("show", "")),
        "show": request.GET.get("show", ""),
        "categories": prolific_review.REJECTION_CATEGORIES.items(),
        "min_message": prolific_review.MIN_REJECTION_MESSAGE,
        "form_key": secrets.token_urlsafe(16),
        "bonuses": Bonus.objects.filter(study=study).select_related("participant")[:200],
        "may_act": request.user.has_perm(ACT_PERMISSION),
    }
    return TemplateResponse(request, "admin/participants/prolific_review.html", context)


def places_needed(study: Study) -> tuple[int, str] | None:
    """The participants the study's content takes (the most any step's design fixes), with the
    reason in words; None when no step fixes it (targets per dialogue or claim are the
    experimenter's)."""
    found = []
    for step in study.steps.all():
        try:
            kind = registry.get(step.kind)
        except LookupError:
            continue
        if (needed := kind.places_needed(step)) is not None:
            found.append(needed)
    return max(found, default=None)


def _site_url_elsewhere(request) -> str:
    """This admin's own address when SITE_URL (the address the study URL sent to Prolific
    starts with) is another: a demo started on another port, or a SITE_URL never set for the
    deployment. Empty when they agree."""
    here = request.build_absolute_uri("/").rstrip("/")
    return "" if here.lower() == settings.SITE_URL.lower() else here


def _act(request, study: Study, draft_form: DraftForm, recruitment_form: RecruitmentForm) -> bool:
    """Do what the POST asks; messages say how it went. False: show the page again (a form error)."""
    action = request.POST.get("action", "")
    if action != "recruitment" and not settings.PROLIFIC_API_TOKEN:
        # Each action went on without it and said something else ("Approved 0 submission(s)",
        # "the study is frozen"): the researcher walk.
        messages.error(
            request,
            'Nothing was sent: PROLIFIC_API_TOKEN is not set on this server (README, "Running a '
            "study through Prolific's API\"). Without it, do this on Prolific's own site.",
        )
        return True
    try:
        if action == "recruitment":
            if not recruitment_form.is_valid():
                return False
            data = recruitment_form.cleaned_data
            prolific_groups.recruitment_set(study=study, group=data["group"], sisters=data["sisters"])
            note = (
                " Prolific's own filters of the study are not changed by this: change them on Prolific too."
                if study.prolific_study_id
                else ""
            )
            messages.success(request, f"Saved who may take part.{note}")
        elif action == "create":
            if not draft_form.is_valid():
                return False
            row = prolific.prolific_study_create(study=study, draft=draft_form.draft())
            messages.success(request, f"Draft {study.prolific_study_id} created on Prolific ({row.status}).")
        elif action in prolific.STUDY_ACTIONS:
            row = prolific.prolific_study_transition(study=study, action=action)
            messages.success(
                request, f"The study is {prolific.STUDY_ACTIONS[action]} on Prolific ({row.status})."
            )
        elif action == "groups":
            made = prolific_groups.prolific_groups_make(study=study)
            messages.success(
                request,
                "Participant groups on Prolific: "
                + ", ".join(f"{g.label} ({g.members}, {g.prolific_group_id})" for g in made)
                + ".",
            )
        elif action == "sync":
            report = prolific.prolific_sync(study=study)
            messages.success(
                request,
                f"Synced {report.seen} submission(s): {report.freed} place(s) freed, "
                f"{report.disagreements} disagreement(s).",
            )
        elif action in ("approve", "reject", "bonus"):
            _review(request, study, action)
        elif action in ("send", "check", "retry"):
            _bonuses(request, study, action)
        else:
            messages.error(request, "Unknown action.")
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, message)
    except ProlificError as error:
        hint = " Trying again may help." if error.retryable else ""
        messages.error(request, f"Prolific: {error.message}.{hint}")
    return True


def _selected(request, study: Study) -> tuple[list[Participant], list[ProlificSubmission]]:
    participant_ids, submission_ids = [], []
    for value in request.POST.getlist("row"):
        participant_id, _, submission_id = value.partition(":")
        if participant_id.isdigit():
            participant_ids.append(int(participant_id))
        if submission_id.isdigit():
            submission_ids.append(int(submission_id))
    participants = list(
        Participant.objects.filter(study=study, pk__in=participant_ids).select_related("study")
    )
    submissions = list(
        ProlificSubmission.objects.filter(study=study, pk__in=submission_ids).select_related(
            "study", "participant"
        )
    )
    return participants, submissions


def _review(request, study: Study, action: str) -> None:
    participants, submissions = _selected(request, study)
    if not participants and not submissions:
        raise ValidationError("Select submissions first.")
    if action in ("approve", "reject") and not submissions:
        raise ValidationError(
            "None of the selected rows has a submission on Prolific (an empty Prolific column): "
            "sync the submissions first, or review them on Prolific."
        )
    if action == "approve":
        done = prolific_review.submission_approve(submissions=submissions, by=request.user)
        messages.success(request, f"Approved {len(done)} submission(s) on Prolific.")
    elif action == "reject":
        if len(submissions) != 1:
            raise ValidationError("Reject one submission at a time, with its own message.")
        prolific_review.submission_reject(
            submission=submissions[0],
            message=request.POST.get("message", ""),
            category=request.POST.get("category", ""),
            by=request.user,
        )
        messages.success(
            request, f"Rejected {submissions[0].prolific_pid} on Prolific; the place is free again."
        )
    else:
        _bonus(request, participants)


def _bonus(request, participants: list[Participant]) -> None:
    cents = prolific_review.amount_cents(request.POST.get("amount", ""))
    key = request.POST.get("key", "")
    if not key:
        raise ValidationError("The form has no key: reload the page.")
    sent = 0
    for participant in participants:
        try:
            bonus = prolific_review.bonus_record(
                participant=participant,
                amount_cents=cents,
                reason=request.POST.get("reason", ""),
                key=f"{key}:{participant.pk}",
                by=request.user,
            )
        except ValidationError as refused:  # this one only (e.g. already has this bonus): go on
            for message in refused.messages:
                messages.error(request, message)
            continue
        sent += _send(request, bonus).state == Bonus.State.SENT
    messages.info(request, f"{sent} bonus(es) sent to Prolific; each is recorded below with its state.")


def _send(request, bonus: Bonus) -> Bonus:
    try:
        bonus = prolific_review.bonus_send(bonus=bonus)
    except prolific_review.BonusBusy as busy:
        messages.warning(request, str(busy))
    if bonus.state == Bonus.State.FAILED:
        messages.error(request, f"Bonus to {bonus.participant.prolific_pid} not paid: {bonus.error}")
    elif bonus.state == Bonus.State.SENDING:
        messages.warning(
            request, f"Bonus to {bonus.participant.prolific_pid}: {bonus.error or 'being sent'}."
        )
    return bonus


def _bonuses(request, study: Study, action: str) -> None:
    ids = [int(v) for v in request.POST.getlist("bonus") if v.isdigit()]
    chosen = Bonus.objects.filter(study=study, pk__in=ids).select_related("participant", "study")
    for bonus in chosen:
        if action == "send" and bonus.state == Bonus.State.RECORDED:
            _send(request, bonus)
        elif action == "retry" and bonus.state == Bonus.State.FAILED:
            _send(request, prolific_review.bonus_retry(bonus=bonus))
        elif action == "check" and bonus.state == Bonus.State.SENDING:
            bonus = prolific_review.bonus_resolve(bonus=bonus)
            messages.info(request, f"Bonus to {bonus.participant.prolific_pid}: {bonus.get_state_display()}.")
    messages.info(request, "Done; the bonuses below show their states.")


def review_rows(study: Study, *, show: str = "") -> list[dict]:
    """One row per person: the participant (real ones only) and their submission on Prolific,
    with the evidence for review and what disagrees."""
    checks = Q(responses__is_check=True)
    participants = (
        Participant.objects.filter(study=study, is_preview=False, is_pilot=False)
        .annotate(
            checks_passed=Count("responses", filter=checks & Q(responses__passed=True), distinct=True),
            checks_failed=Count("responses", filter=checks & Q(responses__passed=False), distinct=True),
        )
        .prefetch_related(
            Prefetch("flags", queryset=Flag.objects.only("participant_id", "kind"), to_attr="flag_rows"),
            Prefetch(
                "exclusions", queryset=Exclusion.objects.filter(revoked_at__isnull=True), to_attr="active"
            ),
        )
        .select_related("study")
    )
    submissions = list(ProlificSubmission.objects.filter(study=study).select_related("participant", "study"))
    by_participant = {s.participant_id: s for s in submissions if s.participant_id}
    bonuses = defaultdict(list)
    for bonus in Bonus.objects.filter(study=study):
        bonuses[bonus.participant_id].append(bonus)
    synced = ProlificStudy.objects.filter(study=study, synced_at__isnull=False).exists()
    rows = [_row(p, by_participant.get(p.pk), bonuses[p.pk], synced) for p in participants]
    rows += [_row(None, s, [], synced) for s in submissions if s.participant_id is None]
    if show == "review":
        rows = [r for r in rows if r["submission"] and r["submission"].status == "AWAITING_REVIEW"]
    elif show == "disagree":
        rows = [r for r in rows if r["disagreement"]]
    return rows


def _row(
    participant: Participant | None, submission: ProlificSubmission | None, bonuses: list, synced: bool
) -> dict:
    disagreement = prolific.disagreement(participant, submission) if (synced or submission) else ""
    return {
        "key": f"{participant.pk if participant else ''}:{submission.pk if submission else ''}",
        "pid": participant.prolific_pid if participant else submission.prolific_pid,
        "participant": participant,
        "submission": submission,
        "disagreement": disagreement,
        "minutes": prolific_review.minutes(participant) if participant else None,
        "exclusions": ", ".join(e.get_reason_display() for e in participant.active) if participant else "",
        "flags": flags_text(participant.flag_rows) if participant else "",
        "bonuses": "; ".join(f"{b.amount_cents / 100:.2f} {b.state}" for b in bonuses),
    }


# --- Lists -----------------------------------------------------------------------------------


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class DisagreementFilter(admin.SimpleListFilter):
    title = "Prolific and Rostrum"
    parameter_name = "agree"

    def lookups(self, request, model_admin):
        return [("no", "Disagree")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            ids = [
                s.pk
                for s in queryset.select_related("participant")
                if prolific.disagreement(s.participant, s)
            ]
            return queryset.filter(pk__in=ids)
        return queryset


@admin.register(ProlificSubmission)
class ProlificSubmissionAdmin(ReadOnly):
    list_display = [
        "prolific_pid",
        "study",
        "status",
        "rostrum_status",
        "disagreement",
        "entered_code",
        "seen_at",
    ]
    list_filter = ["study", "status", DisagreementFilter]
    search_fields = ["prolific_pid", "submission_id"]
    list_select_related = ["study", "participant"]

    @admin.display(description="Status in Rostrum")
    def rostrum_status(self, submission: ProlificSubmission) -> str:
        return submission.participant.get_status_display() if submission.participant else "—"

    @admin.display(description="Disagreement")
    def disagreement(self, submission: ProlificSubmission) -> str:
        text = prolific.disagreement(submission.participant, submission)
        return format_html('<strong style="color:#ba2121">⚠ {}</strong>', text) if text else "—"


@admin.register(Bonus)
class BonusAdmin(ReadOnly):
    list_display = ["participant", "study", "amount", "state", "reason", "created_at", "sent_at", "error"]
    list_filter = ["state", "study"]
    search_fields = ["participant__prolific_pid"]
    list_select_related = ["participant", "study"]

    @admin.display(description="Amount", ordering="amount_cents")
    def amount(self, bonus: Bonus) -> str:
        return f"{bonus.amount_cents / 100:.2f}"


@admin.register(ProlificStudy)
class ProlificStudyAdmin(ReadOnly):
    list_display = ["study", "prolific_id", "status", "places", "reward", "synced_at", "sync_error", "page"]
    list_select_related = ["study"]

    @admin.display(description="Prolific STUDY_ID")
    def prolific_id(self, row: ProlificStudy) -> str:
        return row.study.prolific_study_id or "—"

    @admin.display(description="Reward")
    def reward(self, row: ProlificStudy) -> str:
        return f"{row.reward_cents / 100:.2f}" if row.reward_cents is not None else "—"

    @admin.display(description="Review")
    def page(self, row: ProlificStudy) -> str:
        return format_html('<a href="{}">Submissions and bonuses</a>', study_links(row.study)[0][1])
