"""The study's texts in another language, edited in the admin as plain fields on one page per
language: the study's title and exit messages, then each step's title, the texts of its
configuration and of its items, each with the study's own text beside it. Adding a language
offers the study in it. Empty fields show the study's own text (studies.texts). The page is
reached from the study's page ("Texts in …", "Add a language"); it is frozen with the study."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin
from django.db import transaction
from django.http import HttpResponseRedirect
from django.urls import reverse

from studies import registry
from studies.models import Question, Step, StepTranslation, Study, StudyTranslation
from studies.services import study_is_locked
from studies.texts import text_config_names

CHOICE_KINDS = (Question.Kind.SINGLE_CHOICE, Question.Kind.LIKERT, Question.Kind.SLIDER)
STUDY_FIELDS = ["study", "language", "title", "screened_out_message", "failed_check_message"]


def _own(text: str) -> str:
    shown = " ".join(str(text or "").split())
    return f"Own text: {shown[:300]}{'…' if len(shown) > 300 else ''}" if shown else "Own text: (empty)"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class StepFields:
    """The translation fields of one step (`s<position>_…`) and how they map to its texts."""

    def __init__(self, step: Step) -> None:
        self.step = step
        self.prefix = f"s{step.position}_"
        kind = registry.get(step.kind)
        self.kind = kind
        self.config = kind.config(step)
        self.config_names = text_config_names(kind)
        self.questions = list(step.questions.all()) if kind.uses_questions else []

    def fields(self) -> dict[str, forms.Field]:
        p, found = self.prefix, {}
        found[f"{p}title"] = forms.CharField(
            label="Title", required=False, max_length=200, help_text=_own(self.step.title)
        )
        for name in self.config_names:
            textarea = isinstance(self.kind.config_form.base_fields[name].widget, forms.Textarea)
            found[f"{p}config_{name}"] = forms.CharField(
                label=name.replace("_", " ").capitalize(),
                required=False,
                widget=forms.Textarea(attrs={"rows": 4}) if textarea else None,
                help_text=_own(self.config.get(name)),
            )
        for q in self.questions:
            found[f"{p}q_{q.key}_text"] = forms.CharField(
                label=f"{q.key}: question",
                required=False,
                widget=forms.Textarea(attrs={"rows": 2}),
                help_text=_own(q.text),
            )
            if q.help_text:
                found[f"{p}q_{q.key}_help_text"] = forms.CharField(
                    label=f"{q.key}: help", required=False, help_text=_own(q.help_text)
                )
            if q.kind in CHOICE_KINDS and q.option_list:
                found[f"{p}q_{q.key}_options"] = forms.CharField(
                    label=f"{q.key}: options",
                    required=False,
                    widget=forms.Textarea(attrs={"rows": len(q.option_list)}),
                    help_text=f"One per line, {len(q.option_list)} in the same order as the study's own: "
                    f"{' / '.join(q.option_list)}. Answers are stored as the study's own options.",
                )
        return found

    def initial(self, row: StepTranslation | None) -> dict:
        texts = (row.texts or {}) if row else {}
        p, config, items = self.prefix, texts.get("config") or {}, texts.get("questions") or {}
        found = {f"{p}title": row.title if row else ""}
        found.update({f"{p}config_{name}": config.get(name, "") for name in self.config_names})
        for q in self.questions:
            mine = items.get(q.key) or {}
            found[f"{p}q_{q.key}_text"] = mine.get("text", "")
            found[f"{p}q_{q.key}_help_text"] = mine.get("help_text", "")
            found[f"{p}q_{q.key}_options"] = "\n".join(mine.get("options") or [])
        return found

    def problems(self, data: dict) -> dict[str, str]:
        found = {}
        for q in self.questions:
            name = f"{self.prefix}q_{q.key}_options"
            given = _lines(data.get(name))
            if given and len(given) != len(q.option_list):
                found[name] = f"Give {len(q.option_list)} options, one per line, or none."
        return found

    def texts(self, data: dict) -> tuple[str, dict]:
        p = self.prefix
        config = {
            n: data[f"{p}config_{n}"].strip()
            for n in self.config_names
            if data.get(f"{p}config_{n}", "").strip()
        }
        items = {}
        for q in self.questions:
            entry = {
                "text": (data.get(f"{p}q_{q.key}_text") or "").strip(),
                "help_text": (data.get(f"{p}q_{q.key}_help_text") or "").strip(),
                "options": _lines(data.get(f"{p}q_{q.key}_options")),
            }
            if any(entry.values()):
                items[q.key] = entry
        return (data.get(f"{p}title") or "").strip(), {"config": config, "questions": items}


class StudyTranslationForm(forms.ModelForm):
    class Meta:
        model = StudyTranslation
        fields = STUDY_FIELDS
        widgets = {
            "screened_out_message": forms.Textarea(attrs={"rows": 4}),
            "failed_check_message": forms.Textarea(attrs={"rows": 4}),
        }

    steps: list[StepFields] = []
    page_study: Study | None = None  # the study the page is for (set by the admin)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        study = self.page_study
        if "language" in self.fields:
            own = study.language if study else None
            self.fields["language"].choices = [
                ("", "---------"),
                *[(c, n) for c, n in settings.LANGUAGES if c != own],
            ]
        if study is not None:
            for name in ("title", "screened_out_message", "failed_check_message"):
                if name in self.fields:
                    self.fields[name].help_text = _own(getattr(study, name))
        rows = {
            r.step_id: r
            for r in StepTranslation.objects.filter(step__study=study, language=self.instance.language)
        }
        for step_fields in self.steps:
            self.fields.update(step_fields.fields())
            for name, value in step_fields.initial(rows.get(step_fields.step.pk)).items():
                self.initial.setdefault(name, value)

    def clean(self):
        data = super().clean()
        for step_fields in self.steps:
            for name, problem in step_fields.problems(data).items():
                self.add_error(name, problem)
        return data


@admin.register(StudyTranslation)
class StudyTranslationAdmin(admin.ModelAdmin):
    """One language of a study: every text participants read, beside the study's own."""

    form = StudyTranslationForm
    list_display = ["study", "language"]
    list_filter = ["language"]

    def _study(self, request, obj) -> Study | None:
        if obj is not None:
            return obj.study
        study_id = request.GET.get("study") or request.POST.get("study")
        return Study.objects.filter(pk=study_id).first() if str(study_id or "").isdigit() else None

    def _step_fields(self, study: Study | None) -> list[StepFields]:
        if study is None:
            return []
        steps = Step.objects.filter(study=study).prefetch_related("questions").order_by("position")
        return [StepFields(step) for step in steps]

    def get_form(self, request, obj=None, change=False, **kwargs):
        study = self._study(request, obj)
        kwargs["fields"] = STUDY_FIELDS  # the steps' fields are the form's own (StepFields)
        form = super().get_form(request, obj, change, **kwargs)
        attrs = {"steps": self._step_fields(study), "page_study": study}
        if study is not None and obj is None:
            form.base_fields["study"].initial = study.pk
        return type("StudyTranslationForm", (form,), attrs)

    def get_readonly_fields(self, request, obj=None):
        return ["study", "language"] if obj is not None else []

    def get_fieldsets(self, request, obj=None):
        study = self._study(request, obj)
        sets = [(None, {"fields": STUDY_FIELDS})]
        if study is None:
            sets[0][1]["description"] = "Choose the study and the language, save, then translate its steps."
        for step_fields in self._step_fields(study):
            step = step_fields.step
            names = list(step_fields.fields())
            sets.append((f"Step {step.position}: {step.title} ({step_fields.kind.label})", {"fields": names}))
        return sets

    def _locked(self, request, obj) -> bool:
        study = self._study(request, obj)
        return study is not None and study_is_locked(study)

    def has_add_permission(self, request):
        return not self._locked(request, None) and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        return not self._locked(request, obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not self._locked(request, obj) and super().has_delete_permission(request, obj)

    @transaction.atomic
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        for step_fields in form.steps:
            title, texts = step_fields.texts(form.cleaned_data)
            StepTranslation.objects.update_or_create(
                step=step_fields.step, language=obj.language, defaults={"title": title, "texts": texts}
            )

    def delete_model(self, request, obj):
        with transaction.atomic():
            StepTranslation.objects.filter(step__study=obj.study, language=obj.language).delete()
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for row in queryset.select_related("study"):
            self.delete_model(request, row)

    def response_add(self, request, obj, post_url_continue=None):
        # A new language goes straight to its texts.
        return HttpResponseRedirect(reverse("admin:studies_studytranslation_change", args=[obj.pk]))

    def response_change(self, request, obj):
        if "_continue" in request.POST:
            return super().response_change(request, obj)
        return HttpResponseRedirect(reverse("admin:studies_study_change", args=[obj.study_id]))


def translation_links(study: Study) -> list[tuple[str, str]]:
    """The study page's links to its languages' texts, and to add a language."""
    names = dict(settings.LANGUAGES)
    links = [
        (
            f"Texts in {names.get(row.language, row.language)}",
            reverse("admin:studies_studytranslation_change", args=[row.pk]),
        )
        for row in study.translations.all()
    ]
    if not study_is_locked(study):
        links.append(("Add a language", f"{reverse('admin:studies_studytranslation_add')}?study={study.pk}"))
    return links
