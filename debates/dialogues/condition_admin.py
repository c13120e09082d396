"""Design A's conditions in the admin: the experimenter's own interventions beside the
paper's. A condition dialogues use keeps its slug and baseline flag (they say what the data
mean); its label and the participants' description may be reworded."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from debates.models import Condition, ConditionTarget, Dialogue


class ConditionTargetForm(forms.ModelForm):
    """A condition target names a condition from the list, not a typed slug."""

    condition = forms.ChoiceField(choices=lambda: [(c.slug, c.label) for c in Condition.objects.all()])

    class Meta:
        model = ConditionTarget
        fields = ["condition", "target"]


@admin.register(Condition)
class ConditionAdmin(admin.ModelAdmin):
    list_display = ["label", "slug", "baseline", "description", "position", "dialogue_count"]
    list_editable = ["position"]
    search_fields = ["slug", "label"]

    @admin.display(description="Dialogues")
    def dialogue_count(self, obj: Condition) -> int:
        return Dialogue.objects.filter(condition=obj.slug).count()

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and Dialogue.objects.filter(condition=obj.slug).exists():
            return ["slug", "baseline"]
        return []

    def has_delete_permission(self, request, obj=None) -> bool:
        return obj is None or not Dialogue.objects.filter(condition=obj.slug).exists()
