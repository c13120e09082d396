"""The experimenter's preview with choices: start at any step, as a chosen screening group,
reading a chosen dialogue or a dialogue of a chosen condition (design A), judging a chosen claim
through a chosen protocol (design B: debate or consultancy), or comparing a chosen pair (design
D). Like the plain
preview (/s/SLUG/preview/), it makes a throw-away participant that is never counted, holds no
place and is never exported, then opens its current step. Linked from the study admin
(`study_links`, `study_urls`, registered in the app's `ready()`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from django import forms
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from debates.dialogues.preview import preview_dialogue_assign
from debates.live.services import LiveDesign, live_session_assign
from debates.models import Instance, LiveSession, StudyClaim, StudyDialogue, condition_labels
from debates.pairwise.preview import preview_comparison_assign
from participants.models import Participant
from participants.services import participant_preview
from participants.steps import parse_groups
from studies import registry
from studies.models import Step, Study

PROTOCOLS = dict(LiveSession.Protocol.choices)


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
    claim = forms.ModelChoiceField(
        queryset=StudyClaim.objects.none(),
        required=False,
        help_text="Judge this claim in the first claim step from the chosen one on.",
    )
    protocol = forms.ChoiceField(
        required=False, help_text="Debate (two AI debaters) or consultancy (one AI)."
    )
    item = forms.ModelChoiceField(
        queryset=Instance.objects.none(),
        required=False,
        label="Pairwise item",
        help_text="Compare exactly this pair in the first pairwise step from the chosen one on "
        "(that one comparison, without attention checks).",
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
        self.steps = list(steps)
        self._claim_choices(study)
        self._item_choices()

    def _claim_choices(self, study: Study) -> None:
        """Design B: the study's active claims, and the protocols its claim steps use."""
        designs = [claim_design(s) for s in self.steps if s.kind == CLAIM_KIND]
        claims = StudyClaim.objects.filter(study=study, active=True).select_related("claim")
        if not designs or not claims:
            del self.fields["claim"], self.fields["protocol"]
            return
        self.fields["claim"].queryset = claims.order_by("claim__slug")
        self.fields["claim"].label_from_instance = lambda s: f"{s.claim.slug}: {s.claim.text[:90]}"
        used = sorted({p for d in designs for p in d.protocols})
        self.fields["protocol"].choices = [("", "As assignment chooses")] + [(p, PROTOCOLS[p]) for p in used]

    def _item_choices(self) -> None:
        """Design D: the instances of the instance sets the study's pairwise steps use."""
        sets = {pairwise_set(s) for s in self.steps if s.kind == PAIRWISE_KIND}
        items = Instance.objects.filter(instance_set__slug__in=sets).select_related("instance_set")
        if not items.exists():
            del self.fields["item"]
            return
        self.fields["item"].queryset = items.order_by("instance_set__slug", "number")
        self.fields["item"].label_from_instance = lambda i: (
            f"{i.instance_set.slug} no. {i.number}: {i.stance} ({i.interlocutor_1} vs {i.interlocutor_2})"
        )

    def clean(self):
        data = super().clean()
        chosen, condition = data.get("dialogue"), data.get("condition")
        if chosen and condition and chosen.dialogue.condition != condition:
            self.add_error(
                "dialogue", "This dialogue is not of the chosen condition: choose one or the other."
            )
        start = data.get("step") or 1
        if data.get("claim") or data.get("protocol"):
            self._clean_claim(data, start)
        if data.get("item"):
            self._clean_item(data, start)
        return data

    def _clean_claim(self, data: dict, start: int) -> None:
        step = next((s for s in self.steps if s.kind == CLAIM_KIND and s.position >= start), None)
        if step is None:
            self.add_error("claim", "No claim step comes at or after the chosen step: start earlier.")
            return
        design, claim, protocol = claim_design(step), data.get("claim"), data.get("protocol")
        if protocol and protocol not in design.protocols:
            self.add_error("protocol", f"Step {step.position} runs only {', '.join(design.protocols)}.")
        if claim and design.domain and claim.claim.domain != design.domain:
            self.add_error(
                "claim", f"Step {step.position} takes only claims of the domain {design.domain!r}."
            )
        data["claim_step"], data["claim_design"] = step.position, design

    def _clean_item(self, data: dict, start: int) -> None:
        pool = data["item"].instance_set.slug
        later = [s for s in self.steps if s.kind == PAIRWISE_KIND and s.position >= start]
        step = next((s for s in later if pairwise_set(s) == pool), None)
        if step is None:
            self.add_error("item", "No pairwise step of this instance set comes at or after the chosen step.")
            return
        data["item_step"] = step.position


CLAIM_KIND, PAIRWISE_KIND = "claim_session", "pairwise"


def claim_design(step: Step) -> LiveDesign:
    return registry.get(CLAIM_KIND).design(step)


def pairwise_set(step: Step) -> str:
    return registry.get(PAIRWISE_KIND).config(step).get("instance_set") or ""


@dataclass(frozen=True)
class ClaimChoice:
    """Design B: the claim step it applies to, its design, and what was chosen."""

    position: int
    design: LiveDesign
    study_claim: StudyClaim | None = None
    protocol: str = ""


@dataclass(frozen=True)
class ItemChoice:
    """Design D: the pairwise step it applies to and the instance to compare."""

    position: int
    instance: Instance


def preview_start(
    *,
    study: Study,
    position: int = 1,
    group: str = "",
    condition: str = "",
    study_dialogue: StudyDialogue | None = None,
    claim: ClaimChoice | None = None,
    item: ItemChoice | None = None,
) -> Participant:
    """A preview participant at step `position`, in `group`, with the chosen dialogue, claim
    and protocol, or pairwise item."""
    now = timezone.now()
    with transaction.atomic():
        participant = participant_preview(study=study)
        Participant.objects.filter(pk=participant.pk).update(position=position, group=group, shown_at=now)
        participant.position, participant.group, participant.shown_at = position, group, now
        if condition or study_dialogue is not None:
            preview_dialogue_assign(
                participant=participant, now=now, condition=condition, study_dialogue=study_dialogue
            )
        if claim is not None:
            live_session_assign(
                participant=participant,
                position=claim.position,
                design=claim.design,
                now=now,
                claim_id=claim.study_claim.claim_id if claim.study_claim else None,
                protocol=claim.protocol,
            )
        if item is not None:
            preview_comparison_assign(
                participant=participant, position=item.position, instance=item.instance, now=now
            )
    return participant


def preview_view(request, study_id: int, admin_site):
    study = get_object_or_404(Study, pk=study_id)
    if not admin_site._registry[Study].has_view_permission(request, study):
        raise PermissionDenied
    form = PreviewForm(study, request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        claim = item = None
        if data.get("claim_step"):
            claim = ClaimChoice(
                data["claim_step"], data["claim_design"], data.get("claim"), data.get("protocol") or ""
            )
        if data.get("item_step"):
            item = ItemChoice(data["item_step"], data["item"])
        participant = preview_start(
            study=study,
            position=data["step"],
            group=data.get("group") or "",
            condition=data.get("condition") or "",
            study_dialogue=data.get("dialogue"),
            claim=claim,
            item=item,
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
