"""Design A's admin: cases and dialogues, their import, the dialogues a study offers, and
the judgements, bias reports and assignments participants left."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.urls import path

from debates.admin_base import ImportForm, InUseAdmin, ReadOnlyAdmin, import_page
from debates.dialogues import services
from debates.dialogues.imports import cases_import
from debates.models import (
    BiasReport,
    Case,
    ConditionTarget,
    Dialogue,
    DialogueAssignment,
    Judgement,
    StudyDialogue,
    Turn,
)


class StudyDialogueInline(admin.TabularInline):
    model = StudyDialogue
    extra = 0
    autocomplete_fields = ["dialogue"]
    verbose_name = "dialogue offered in this study"
    verbose_name_plural = "Study dialogues (participants are spread evenly over the active ones)"

    def has_delete_permission(self, request, obj=None) -> bool:
        # Deactivate a dialogue instead of deleting it once participants have it.
        return obj is None or obj.locked_at is None


class ConditionTargetInline(admin.TabularInline):
    model = ConditionTarget
    extra = 0
    verbose_name = "target for a condition"
    verbose_name_plural = (
        "Condition targets (participants per condition across its dialogues; the least-filled "
        "condition is filled first)"
    )


class TurnInline(admin.StackedInline):
    model = Turn
    extra = 0
    fields = ["number", "speaker", "text"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Dialogue)
class DialogueAdmin(admin.ModelAdmin):
    list_display = ["slug", "case", "condition", "active_side", "variant", "side_a", "words"]
    list_filter = ["case", "condition", "active_side", "variant"]
    search_fields = ["slug", "case__title"]
    inlines = [TurnInline]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Dialogue._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


class CaseImportForm(ImportForm):
    file = forms.FileField(help_text="A rostrum.cases/1 JSON file (see docs/case-format.md).")


@admin.register(Case)
class CaseAdmin(InUseAdmin):
    list_display = ["title", "slug", "culprit", "rival", "dialogue_count"]
    search_fields = ["title", "slug"]
    readonly_fields = ["slug", "imported_at"]
    change_list_template = "admin/debates/case/change_list.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="debates_case_import"), *super().get_urls()]

    studies_using = staticmethod(services.case_studies)
    new_version = staticmethod(lambda case: services.case_new_version(case=case))

    @admin.display(description="Dialogues")
    def dialogue_count(self, case: Case) -> int:
        return case.dialogues.count()

    def has_add_permission(self, request) -> bool:
        return False

    def import_view(self, request):
        return import_page(
            self,
            request,
            perm="debates.add_dialogue",
            title="Import cases and dialogues",
            form_class=CaseImportForm,
            run=lambda data, text, name: f"Imported: {cases_import(text=text)}.",
            done="admin:debates_case_changelist",
        )


@admin.register(Judgement)
class JudgementAdmin(ReadOnlyAdmin):
    list_display = ["participant", "dialogue", "chosen_side", "correct", "confidence", "created_at"]
    list_filter = ["participant__study", "correct", "dialogue__condition"]
    search_fields = ["participant__prolific_pid", "reasoning"]
    list_select_related = ["participant", "dialogue"]


@admin.register(BiasReport)
class BiasReportAdmin(ReadOnlyAdmin):
    list_display = ["participant", "dialogue", "present", "side", "bias_type", "created_at"]
    list_filter = ["participant__study", "present", "bias_type"]
    list_select_related = ["participant", "dialogue"]


@admin.register(DialogueAssignment)
class DialogueAssignmentAdmin(ReadOnlyAdmin):
    list_display = ["participant", "dialogue", "assigned_at", "words", "reading_ms", "wpm_rounded"]
    list_filter = ["study_dialogue__study", "dialogue"]
    list_select_related = ["participant", "dialogue"]

    @admin.display(description="Words per minute")
    def wpm_rounded(self, obj: DialogueAssignment):
        return None if obj.wpm is None else round(obj.wpm)
