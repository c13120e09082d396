"""Admin for cases and dialogues, their import, and the dialogues offered in a study."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from debates.importing import ImportInvalid, cases_import, decode
from debates.models import BiasReport, Case, Dialogue, DialogueAssignment, Judgement, StudyDialogue, Turn
from studies import admin as studies_admin

MAX_UPLOAD = 5 * 1024 * 1024


class StudyDialogueInline(admin.TabularInline):
    model = StudyDialogue
    extra = 0
    autocomplete_fields = ["dialogue"]
    verbose_name = "dialogue offered in this study"
    verbose_name_plural = "Study dialogues (participants are spread evenly over the active ones)"

    def has_delete_permission(self, request, obj=None) -> bool:
        # Deactivate a dialogue instead of deleting it once participants have it.
        return obj is None or obj.locked_at is None


studies_admin.study_inlines.append(StudyDialogueInline)


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


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A rostrum.cases/1 JSON file (see docs/case-format.md).")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD:
            raise forms.ValidationError("The file is larger than 5 MB.")
        return upload


@admin.register(Case)
class CaseAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "culprit", "rival", "dialogue_count"]
    search_fields = ["title", "slug"]
    readonly_fields = ["slug", "imported_at"]
    change_list_template = "admin/debates/case/change_list.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="debates_case_import"), *super().get_urls()]

    @admin.display(description="Dialogues")
    def dialogue_count(self, case: Case) -> int:
        return case.dialogues.count()

    def has_add_permission(self, request) -> bool:
        return False

    def import_view(self, request):
        if not self.has_view_permission(request) or not request.user.has_perm("debates.add_dialogue"):
            return redirect("admin:index")
        form = ImportForm(request.POST or None, request.FILES or None)
        problems = []
        if request.method == "POST" and form.is_valid():
            try:
                summary = cases_import(text=decode(form.cleaned_data["file"].read()))
            except ImportInvalid as invalid:
                problems = invalid.problems
            else:
                self.message_user(request, f"Imported: {summary}.", messages.SUCCESS)
                return redirect("admin:debates_case_changelist")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Import cases and dialogues",
            "form": form,
            "problems": problems,
        }
        return TemplateResponse(request, "admin/debates/case/import.html", context)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


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


def dialogue_admin_link(dialogue: Dialogue) -> str:
    url = reverse("admin:debates_dialogue_change", args=[dialogue.pk])
    return format_html('<a href="{}">{}</a>', url, dialogue.slug)
