"""Design A's admin: cases and dialogues (a dialogue's turns edited as rows, with the import
format's rules), their import, the dialogues a study offers, and the judgements, bias reports
and assignments participants left."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from debates.admin_base import ImportForm, InUseAdmin, ReadOnlyAdmin, import_page
from debates.dialogues import services
from debates.dialogues.condition_admin import ConditionTargetForm
from debates.dialogues.imports import (
    cases_import,
    condition_baselines,
    design_problems,
    speaker_problem,
    turn_count_problem,
)
from debates.formats import format_urls
from debates.models import (
    BiasReport,
    Case,
    Condition,
    ConditionTarget,
    Dialogue,
    DialogueAssignment,
    Judgement,
    StudyDialogue,
    Turn,
)
from studies.rows import RowsField, as_list


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
    form = ConditionTargetForm  # a condition chosen from the Conditions, not a typed slug
    extra = 0
    verbose_name = "target for a condition"
    verbose_name_plural = (
        "Condition targets (participants per condition across its dialogues; the least-filled "
        "condition is filled first)"
    )


# --- A dialogue's turns, edited as rows (the import format's rules: debates/dialogues/imports.py) ---


class TurnForm(forms.ModelForm):
    number = forms.IntegerField(
        label="Order",
        min_value=1,
        required=False,
        widget=forms.NumberInput(attrs={"style": "width: 4em"}),
        help_text="Empty: after the others.",
    )

    class Meta:
        model = Turn
        fields = ["number", "speaker", "text"]
        labels = {"speaker": "Side"}
        widgets = {"text": forms.Textarea(attrs={"rows": 5, "cols": 90})}


class TurnFormSet(forms.BaseInlineFormSet):
    """The turns as the format requires them (docs/case-format.md): 2 to 20, numbered 1, 2, 3, …
    (an empty order goes after the others), the sides alternating A, B, A, B, …"""

    frozen = False  # set by TurnInline.get_formset: a live study uses the dialogue

    def kept(self) -> list[forms.ModelForm]:
        """The rows that are turns: saved ones not deleted, and new ones filled in."""
        return [
            f
            for f in self.forms
            if f not in self.deleted_forms and (f.instance.pk or f.has_changed()) and f.is_valid()
        ]

    def clean(self):
        if self.frozen:
            return None  # shown, never saved (save_formset does nothing)
        if any(f.errors for f in self.forms):
            return super().clean()
        kept = self.kept()
        after = max([f.cleaned_data.get("number") or 0 for f in kept], default=0)
        for form in kept:
            if not form.cleaned_data.get("number"):
                after += 1
                form.cleaned_data["number"] = form.instance.number = after
        numbers = sorted(f.cleaned_data["number"] for f in kept)
        problems = []
        count = turn_count_problem(len(kept))
        if count:
            problems.append(f"The dialogue {count}.")
        if numbers != list(range(1, len(kept) + 1)):
            problems.append(
                "Number the turns 1, 2, 3, … in reading order, each once: found "
                + ", ".join(str(n) for n in numbers)
                + "."
            )
        else:
            for index, form in enumerate(sorted(kept, key=lambda f: f.cleaned_data["number"])):
                wrong = speaker_problem(index, form.cleaned_data.get("speaker"))
                if wrong:
                    problems.append(f"Turn {index + 1}: the side {wrong}.")
        if problems:  # before Django's own duplicate check, whose wording is less helpful here
            raise forms.ValidationError(problems)
        return super().clean()


class TurnInline(admin.TabularInline):
    model = Turn
    form = TurnForm
    formset = TurnFormSet
    fields = ["number", "speaker", "text"]
    ordering = ["number"]
    verbose_name = "turn"
    verbose_name_plural = "Turns (2 to 20, sides alternating A, B, A, B, …; the paper's dialogues have 6)"

    def get_extra(self, request, obj=None, **kwargs) -> int:
        return 2 if obj is None else 0  # a new dialogue starts with rows for its first two turns

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.frozen = not self._editable(obj)
        return formset

    def _editable(self, obj) -> bool:
        if obj is None:
            return True
        return not services.dialogue_built_by(obj) and not services.dialogue_studies(obj).exists()

    def has_add_permission(self, request, obj=None) -> bool:
        return self._editable(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return self._editable(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._editable(obj) and super().has_delete_permission(request, obj)


class DialogueForm(forms.ModelForm):
    """A dialogue's design, with the importer's rules (`design_problems`)."""

    condition = forms.ChoiceField(
        choices=lambda: [(c.slug, c.label) for c in Condition.objects.all()],
        help_text="Add a new condition under Conditions first.",
    )
    variant = forms.CharField(
        max_length=4,
        required=False,
        help_text='A short label telling apart variants, e.g. "V1"; empty for a baseline.',
    )

    class Meta:
        model = Dialogue
        fields = ["slug", "case", "condition", "active_side", "variant", "side_a"]
        help_texts = {
            "slug": "Lowercase letters, digits and hyphens: how import files name the dialogue.",
            "active_side": "The side carrying the intervention; none for a baseline.",
        }

    def clean(self):
        data = super().clean()
        found = design_problems(
            condition=data.get("condition"),
            active_side=data.get("active_side"),
            variant=data.get("variant") or "",
            side_a=data.get("side_a"),
            baseline=condition_baselines(),
        )
        for field, problem in found:
            if field in self.fields and field not in self.errors:
                self.add_error(field, problem[0].upper() + problem[1:] + ".")
        return data


@admin.register(Dialogue)
class DialogueAdmin(InUseAdmin):
    """The library's dialogues: imported, generated, or written here with their turns. Once a
    study that went live uses one (it offers a dialogue of its case, or a participant read it), its
    design and turns are frozen like the study's steps: make a new version to change them. Only
    "offer despite the quality check" stays editable: the experimenter's call on a dialogue that
    failed it (generated ones are checked as they are built; a "Check design-A dialogue quality"
    job checks imported ones)."""

    form = DialogueForm
    change_form_template = "admin/debates/dialogue/change_form.html"
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

    studies_using = staticmethod(services.dialogue_studies)
    new_version = staticmethod(lambda dialogue: services.dialogue_new_version(dialogue=dialogue))

    DESIGN = ["slug", "case", "condition", "active_side", "variant", "side_a"]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        built_by = services.dialogue_built_by(obj) if obj is not None else ""
        extra_context = {**(extra_context or {}), "built_by": built_by}
        return super().change_view(request, object_id, form_url, extra_context)

    def get_fieldsets(self, request, obj=None):
        design = self.DESIGN + (["words"] if obj else [])
        if obj is None:
            return [(None, {"fields": design})]
        return [
            (None, {"fields": design}),
            ("Quality", {"fields": ["quality_score", "quality_passed", "quality_override", "quality_table"]}),
            ("Provenance", {"fields": ["provenance_summary", "imported_at"], "classes": ["collapse"]}),
        ]

    def get_readonly_fields(self, request, obj=None):
        computed = [
            "words",
            "quality_score",
            "quality_passed",
            "quality_table",
            "provenance_summary",
            "imported_at",
        ]
        if obj is None:
            return computed
        # A saved dialogue keeps its slug; one in use, or built by a job, keeps its design too.
        frozen = self.DESIGN if self._using(obj) or services.dialogue_built_by(obj) else ["slug"]
        return [*frozen, *computed]

    def has_change_permission(self, request, obj=None) -> bool:
        # Unlike other content in use, the quality override stays editable while frozen.
        return admin.ModelAdmin.has_change_permission(self, request, obj)

    def save_formset(self, request, form, formset, change):
        if not isinstance(formset, TurnFormSet):
            return super().save_formset(request, form, formset, change)
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if formset.frozen:
            return None
        turns = [f.save(commit=False) for f in formset.kept()]
        deleted = [f.instance for f in formset.deleted_forms if f.instance.pk]
        try:
            services.dialogue_turns_save(dialogue=form.instance, turns=turns, deleted=deleted)
        except services.DialogueFrozen as frozen:
            raise PermissionDenied(str(frozen)) from None
        formset.deleted_objects = deleted

    @admin.display(description="Scores")
    def quality_table(self, obj: Dialogue):
        return quality_html(obj.quality or {})

    @admin.display(description="How it was made")
    def provenance_summary(self, obj: Dialogue):
        return provenance_html(obj.provenance or {})


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
    file = forms.FileField(help_text="A rostrum.cases/1 JSON file (its format is linked above).")


# --- Editing a case: suspects and evidence as rows, the recall question as three fields ---


class SuspectRow(forms.Form):
    name = forms.CharField(max_length=120)
    description = forms.CharField(max_length=500, required=False, widget=forms.TextInput(attrs={"size": 45}))


class EvidenceRow(forms.Form):
    number = forms.IntegerField(min_value=1, widget=forms.NumberInput(attrs={"style": "width: 5em"}))
    text = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 3, "cols": 60}))


def twice(values: list) -> list:
    return sorted({v for v in values if values.count(v) > 1}, key=str)


def suspects_check(rows: list[dict]) -> list[str]:
    problems = [] if len(rows) >= 2 else ["Give at least two suspects."]
    return problems + [f"The suspect {name!r} appears twice." for name in twice([r["name"] for r in rows])]


def evidence_check(rows: list[dict]) -> list[str]:
    return [f"The evidence number {n} appears twice." for n in twice([r["number"] for r in rows])]


def suspect_rows(value) -> list[dict]:
    return [{"name": s.get("name", ""), "description": s.get("description", "")} for s in as_list(value)]


def evidence_rows(value) -> list[dict]:
    return [{"number": e.get("number"), "text": e.get("text", "")} for e in as_list(value)]


class CaseForm(forms.ModelForm):
    """A case as the import format holds it (docs/case-format.md), edited as forms."""

    suspects = RowsField(
        SuspectRow,
        to_rows=suspect_rows,
        from_rows=lambda rows: [{"name": r["name"], "description": r["description"]} for r in rows],
        check=suspects_check,
        item="suspect",
        add_label="Add a suspect",
        help_text="At least two, names different from each other.",
    )
    evidence = RowsField(
        EvidenceRow,
        to_rows=evidence_rows,
        from_rows=lambda rows: [{"number": r["number"], "text": r["text"]} for r in rows],
        check=evidence_check,
        required=False,
        item="evidence unit",
        add_label="Add an evidence unit",
        autonumber="number",
        help_text="Numbered evidence units (cited in the debates as [E3]); numbers 1 or more, each once.",
    )
    recall_question = forms.CharField(
        max_length=300,
        required=False,
        label="Question",
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="Ask about a detail every dialogue of the case discusses.",
    )
    recall_options = forms.CharField(
        required=False,
        label="Options",
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="One option per line, 2 to 8, different from each other.",
    )
    recall_answer = forms.CharField(
        max_length=200,
        required=False,
        label="Correct answer",
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="One of the options, exactly.",
    )

    class Meta:
        model = Case
        fields = ["title", "story", "suspects", "culprit", "rival", "evidence"]
        help_texts = {
            "slug": "Lowercase letters, digits and hyphens: how dialogue files name the case.",
            "culprit": "The name of one suspect: the true culprit.",
            "rival": "The name of another suspect: the innocent rival the other side argues for.",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        recall = self.instance.recall or {}
        self.initial.setdefault("recall_question", recall.get("question", ""))
        self.initial.setdefault("recall_options", "\n".join(recall.get("options", [])))
        self.initial.setdefault("recall_answer", recall.get("answer", ""))

    def clean(self):
        data = super().clean()
        names = [s["name"] for s in data.get("suspects") or []]
        for role in ("culprit", "rival"):
            if data.get(role) and "suspects" in data and data[role] not in names:
                self.add_error(role, f"{data[role]!r} is not one of the suspects.")
        if data.get("culprit") and data.get("culprit") == data.get("rival"):
            self.add_error("rival", "The rival must differ from the culprit.")
        data["recall"] = self._recall(data)
        return data

    def _recall(self, data) -> dict:
        question = data.get("recall_question", "").strip()
        options = [line.strip() for line in data.get("recall_options", "").splitlines() if line.strip()]
        answer = data.get("recall_answer", "").strip()
        if not (question or options or answer):
            return {}
        if not question:
            self.add_error("recall_question", "Give the question (or leave all three recall fields empty).")
        if not 2 <= len(options) <= 8:
            self.add_error("recall_options", "Give 2 to 8 options, one per line.")
        elif len(set(options)) != len(options):
            self.add_error("recall_options", "The options must differ from each other.")
        elif answer not in options:
            self.add_error("recall_answer", "The answer must be one of the options, exactly.")
        return {"question": question, "options": options, "answer": answer}

    def save(self, commit: bool = True):
        self.instance.recall = self.cleaned_data["recall"]
        return super().save(commit)


@admin.register(Case)
class CaseAdmin(InUseAdmin):
    form = CaseForm
    list_display = ["title", "slug", "culprit", "rival", "dialogue_count"]
    search_fields = ["title", "slug"]
    readonly_fields = ["slug", "imported_at"]
    change_list_template = "admin/debates/case/change_list.html"

    def get_readonly_fields(self, request, obj=None):
        # A new case is given its slug (the key of the import format); a saved one keeps it.
        return ["imported_at"] if obj is None else super().get_readonly_fields(request, obj)

    def get_fieldsets(self, request, obj=None):
        editable = self.has_change_permission(request, obj)
        suspects = ["suspects", "culprit", "rival"] if editable else ["suspect_table", "culprit", "rival"]
        recall = ["recall_question", "recall_options", "recall_answer"] if editable else ["recall_text"]
        return [
            (None, {"fields": ["slug", "title", "story"] + (["imported_at"] if obj else [])}),
            ("Suspects", {"fields": suspects}),
            ("Evidence", {"fields": ["evidence" if editable else "evidence_table"]}),
            (
                "Recall question (optional)",
                {
                    "fields": recall,
                    "description": "The recall check asks it about this case's dialogues. Without it, "
                    "the recall check asks whom a side argued was responsible.",
                },
            ),
        ]

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [
            path("import/", view, name="debates_case_import"),
            *format_urls(self.admin_site, "cases"),
            *super().get_urls(),
        ]

    studies_using = staticmethod(services.case_studies)
    new_version = staticmethod(lambda case: services.case_new_version(case=case))

    @admin.display(description="Dialogues")
    def dialogue_count(self, case: Case) -> int:
        return case.dialogues.count()

    @admin.display(description="Suspects")
    def suspect_table(self, case: Case):
        return rows_table(
            ["Name", "Description"], [(s.get("name", ""), s.get("description", "")) for s in case.suspects]
        )

    @admin.display(description="Evidence")
    def evidence_table(self, case: Case):
        return rows_table(
            ["Number", "Text"], [(e.get("number", ""), e.get("text", "")) for e in case.evidence]
        )

    @admin.display(description="Recall question")
    def recall_text(self, case: Case):
        recall = case.recall or {}
        if not recall:
            return "None."
        return format_html(
            "{}<ul>{}</ul>",
            recall.get("question", ""),
            format_html_join(
                "",
                "<li>{}{}</li>",
                ((o, " (correct)" if o == recall.get("answer") else "") for o in recall.get("options", [])),
            ),
        )

    def import_view(self, request):
        return import_page(
            self,
            request,
            perm="debates.add_dialogue",
            title="Import cases and dialogues",
            form_class=CaseImportForm,
            run=lambda data, text, name: f"Imported: {cases_import(text=text)}.",
            done="admin:debates_case_changelist",
            fmt="cases",
        )


def rows_table(head: list[str], rows: list[tuple]):
    return format_html(
        "<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>",
        format_html_join("", "<th>{}</th>", ((h,) for h in head)),
        format_html_join("", "<tr><td>{}</td><td>{}</td></tr>", rows),
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
