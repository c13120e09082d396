"""A manual exclusion asks for its reason: the participants admin's action "Exclude from
analysis" first shows the selected participants and a reason box, then excludes them with
that reason (kept as the exclusion's detail, beside who excluded them and when). Someone a
screening study placed in a participant group on Prolific leaves that group at once
(`prolific_groups.prolific_groups_leave`), so a main study published to it no longer admits them.

Wired from `participants/admin.py`'s action:

    @admin.action(description="Exclude from analysis (by the experimenter, with a reason)")
    def exclude_manually(self, request, queryset):
        return exclude_with_reason(self, request, queryset)
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from participants import prolific_groups, services
from participants.models import Exclusion
from participants.prolific import ProlificError

ACTION = "exclude_manually"


class ExclusionReasonForm(forms.Form):
    reason = forms.CharField(
        label="Why are they excluded from analysis?",
        min_length=5,
        max_length=280,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Kept with the exclusion and exported with it, e.g. “answered the free-text items "
        "with copied text”.",
    )


def exclude_with_reason(model_admin, request, queryset):
    """The action's body: the reason page, or, once a reason is given, the exclusions."""
    confirmed = request.POST.get("confirm") == "yes"
    form = ExclusionReasonForm(request.POST if confirmed else None)
    if confirmed and form.is_valid():
        reason = form.cleaned_data["reason"]
        for participant in queryset:
            services.exclusion_add(
                participant=participant, reason=Exclusion.Reason.MANUAL, detail=reason, by=request.user
            )
        model_admin.message_user(
            request, f"Excluded {queryset.count()} participant(s): {reason}", messages.SUCCESS
        )
        _leave_groups(model_admin, request, queryset)
        return None  # back to the list
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Exclude from analysis",
        "opts": model_admin.model._meta,
        "participants": list(queryset.select_related("study")[:500]),
        "count": queryset.count(),
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"),
        "action": ACTION,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "form": form,
    }
    return TemplateResponse(request, "admin/participants/participant/exclude.html", context)


def _leave_groups(model_admin, request, queryset) -> None:
    """After the exclusions are saved: take the excluded out of their Prolific participant groups."""
    try:
        sent = prolific_groups.prolific_groups_leave(participants=queryset)
    except ProlificError as error:
        model_admin.message_user(
            request,
            f"Prolific: removing them from their participant group failed ({error.message}). The "
            "exclusions are saved; “Make Prolific participant groups” on the study's Prolific page "
            "removes them.",
            messages.WARNING,
        )
        return
    if sent:
        model_admin.message_user(
            request, f"Removed {sent} of them from their participant group on Prolific.", messages.INFO
        )
