"""Design A's admin: cases and dialogues, their import, the dialogues a study offers, and
the judgements, bias reports and assignments participants left."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

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
    """The library's dialogues. Only "offer despite the quality check" is editable: the
    experimenter's call on a dialogue that failed it (generated ones are checked as they are
    built; a "Check design-A dialogue quality" job checks imported ones)."""

    list_display = [
        "slug",
        "case",
        "condition",
        "active_side",
        "variant",
        "side_a",
        "words",
        "quality_score",
        "quality_passed",
        "quality_override",
    ]
    list_filter = ["case", "condition", "active_side", "variant", "quality_passed", "quality_override"]
    search_fields = ["slug", "case__title"]
    inlines = [TurnInline]
    fieldsets = [
        (None, {"fields": ["slug", "case", "condition", "active_side", "variant", "side_a", "words"]}),
        ("Quality", {"fields": ["quality_score", "quality_passed", "quality_override", "quality_table"]}),
        ("Provenance", {"fields": ["provenance_summary", "imported_at"], "classes": ["collapse"]}),
    ]

    def get_readonly_fields(self, request, obj=None):
        fields = [f.name for f in Dialogue._meta.fields if f.name != "quality_override"]
        return [*fields, "quality_table", "provenance_summary"]

    @admin.display(description="Scores")
    def quality_table(self, obj: Dialogue):
        return quality_html(obj.quality or {})

    @admin.display(description="How it was made")
    def provenance_summary(self, obj: Dialogue):
        return provenance_html(obj.provenance or {})

    def has_add_permission(self, request) -> bool:
        return False


DIMENSION_LABELS = [
    ("written_clarity", "Clarity"),
    ("organization", "Organisation"),
    ("evidence", "Evidence"),
    ("argumentation", "Argument"),
    ("responsiveness", "Responsiveness"),
    ("conduct", "Conduct"),
]


def quality_html(quality: dict):
    """Each side's rubric scores (Table 27), the manifestation check and the attempts."""
    sides = quality.get("sides") or {}
    if not sides:
        return "Not checked."
    head = format_html_join("", "<th>{}</th>", ((label,) for _, label in DIMENSION_LABELS))
    rows = format_html_join(
        "",
        "<tr><th>Side {}</th>{}<td><b>{}</b>/30</td><td>{}</td></tr>",
        (
            (
                side,
                format_html_join("", "<td>{}</td>", ((q["scores"].get(d, ""),) for d, _ in DIMENSION_LABELS)),
                q.get("total", ""),
                q.get("comments", ""),
            )
            for side, q in sorted(sides.items())
        ),
    )
    manifest = quality.get("manifestation") or {}
    if manifest.get("checked"):
        shown = format_html(
            "Intervention {} on the active side {}: {}.",
            manifest.get("bias", ""),
            manifest.get("active", ""),
            "shows as intended" if manifest.get("passed") else manifest.get("problem", "did not show"),
        )
    else:
        shown = "No intervention to check (baseline), or not checked."
    attempts = format_html_join(
        "; ",
        "attempt {}: {} ({})",
        (
            (a["attempt"], a["score"], "passed" if a["passed"] else a.get("why") or "failed")
            for a in quality.get("attempts") or []
        ),
    )
    return format_html(
        "<table><tr><th></th>{}<th>Total</th><th>Comments</th></tr>{}</table><p>{}</p><p>{}</p><p>{}</p>",
        head,
        rows,
        format_html("Pass mark: {} of 30 for each side.", quality.get("pass_mark") or 27),
        shown,
        attempts or "",
    )


def provenance_html(provenance: dict):
    if not provenance:
        return "Imported (no generation record)."
    calls = provenance.get("calls") or []
    link = reverse("admin:debates_llmcall_changelist")
    return format_html(
        "Job <b>{}</b>, item {} (Table 2 no. {}: {}). Generator {} at temperature {}, judge {}; "
        "seed {}, attempt {}; fallacy {}; templates {}. "
        "<a href='{}?job_item__id__exact={}'>{} model calls</a>.",
        provenance.get("job", ""),
        provenance.get("item", ""),
        provenance.get("inventory", ""),
        provenance.get("label", ""),
        (provenance.get("generator") or {}).get("model", ""),
        (provenance.get("generator") or {}).get("temperature", ""),
        (provenance.get("judge") or {}).get("model", ""),
        provenance.get("seed", ""),
        provenance.get("attempt", ""),
        provenance.get("fallacy") or "—",
        ", ".join(
            f"{name} v{version}" for name, version in sorted((provenance.get("templates") or {}).items())
        ),
        link,
        provenance.get("item_id", ""),
        len(calls),
    )


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
