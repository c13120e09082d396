"""The experimenter's preview with choices: start at any step, as a chosen screening group,
reading a chosen dialogue or a dialogue of a chosen condition (design A). Like the plain
preview (/s/SLUG/preview/), it makes a throw-away participant that is never counted, holds no
place and is never exported, then opens its current step. Linked from the study admin
(`study_links`, `study_urls`, registered in the app's `ready()`)."""

from __future__ import annotations

from functools import partial

from django import forms
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from debates.dialogues.preview import preview_dialogue_assign
from debates.models import StudyDialogue, condition_labels
from participants.models import Participant
from participants.services import participant_preview
from participants.steps import parse_groups
from studies import registry
from studies.models import Step, Study


def screening_groups(study: Study) -> list[tuple[str, float, float]]:
    groups = []
    for step in Step.objects.filter(study=study, kind="screening").order_by("position"):
        try:
            groups += parse_groups(registry.get("screening").config(step).get("groups", ""))
        except forms.ValidationError:
            continue
    return groups


class PreviewForm(forms.Form):
    step = forms.TypedChoiceField(coerce=int, label="Start at", help_text="The steps before it are skipped.")
    group = forms.ChoiceField(
        required=False,
        label="As screening group",
        help_text="For steps after the screening (claims are balanced per group).",
    )
    condition = forms.ChoiceField(required=False, help_text="Read a dialogue of this condition.")
    dialogue = forms.ModelChoiceField(
        queryset=StudyDialogue.objects.none(), required=False, help_text="Or read exactly this dialogue."
    )

    def __init__(self, study: Study, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        steps = Step.objects.filter(study=study).order_by("position")
        labels = {k.key: k.label for k in registry.all_kinds()}
        self.fields["step"].choices = [
            (s.position, f"{s.position}. {s.title} ({labels.get(s.kind, s.kind)})") for s in steps
        ]
        groups = screening_groups(study)
        if groups:
            self.fields["group"].choices = [("", "None (as if not screened)")] + [
                (label, f"{label} ({low:g} to {high:g})") for label, low, high in groups
            ]
        else:
            del self.fields["group"]
        slots = StudyDialogue.objects.filter(study=study, active=True).select_related("dialogue__case")
        if slots:
            names = condition_labels()
            conditions = sorted({s.dialogue.condition for s in slots})
            self.fields["condition"].choices = [("", "Any (as assignment chooses)")] + [
                (c, names.get(c, c)) for c in conditions
            ]
            self.fields["dialogue"].queryset = slots.order_by("dialogue__slug")
            self.fields["dialogue"].label_from_instance = lambda s: (
                f"{s.dialogue.slug} ({names.get(s.dialogue.condition, s.dialogue.condition)}, "
                f"{s.dialogue.case.title})"
            )
        else:
            del self.fields["condition"], self.fields["dialogue"]

    def clean(self):
        data = super().clean()
        chosen, condition = data.get("dialogue"), data.get("condition")
        if chosen and condition and chosen.dialogue.condition != condition:
            self.add_error(
                "dialogue", "This dialogue is not of the chosen condition: choose one or the other."
            )
        return data


def preview_start(
    *,
    study: Study,
    position: int = 1,
    group: str = "",
    condition: str = "",
    study_dialogue: StudyDialogue | None = None,
) -> Participant:
    """A preview participant at step `position`, in `group`, with the chosen dialogue."""
    now = timezone.now()
    with transaction.atomic():
        participant = participant_preview(study=study)
        Participant.objects.filter(pk=participant.pk).update(position=position, group=group, shown_at=now)
        participant.position, participant.group, participant.shown_at = position, group, now
        if condition or study_dialogue is not None:
            preview_dialogue_assign(
                participant=participant, now=now, condition=condition, study_dialogue=study_dialogue
            )
    return participant


def preview_view(request, study_id: int, admin_site):
    study = get_object_or_404(Study, pk=study_id)
    if not admin_site._registry[Study].has_view_permission(request, study):
        raise PermissionDenied
    form = PreviewForm(study, request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        participant = preview_start(
            study=study,
            position=data["step"],
            group=data.get("group") or "",
            condition=data.get("condition") or "",
            study_dialogue=data.get("dialogue"),
        )
        return redirect("step", token=participant.token)
    context = {
        **admin_site.each_context(request),
        "opts": Study._meta,
        "title": f"Preview {study.title}",
        "study": study,
        "form": form,
        "plain_preview": reverse("preview", args=[study.slug]),
    }
    return TemplateResponse(request, "admin/rostrum/preview.html", context)


def study_urls(admin_site) -> list:
    view = admin_site.admin_view(partial(preview_view, admin_site=admin_site))
    return [path("<int:study_id>/preview/", view, name="studies_study_preview")]


def study_links(study: Study) -> list[tuple[str, str]]:
    return [("Preview from a step…", reverse("admin:studies_study_preview", args=[study.pk]))]
