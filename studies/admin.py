"""Admin for studies and their steps. Each step is configured through its kind's own form."""

from __future__ import annotations

import copy
import json
import re
import secrets

from django import forms
from django.contrib import admin, messages
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.forms.models import construct_instance
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from studies import admin_home, registry
from studies.admin_texts import translation_links
from studies.completion import completion_codes, study_url
from studies.models import Question, Step, Study
from studies.services import (
    BACK_TO_DRAFT_REFUSED,
    StudyLocked,
    steps_arrange,
    study_duplicate,
    study_is_locked,
    study_may_go_back_to_draft,
    study_problems,
    study_set_status,
    study_steps_changed,
    study_warnings,
)
from studies.snapshot import FROZEN_FIELDS as FROZEN_STUDY_FIELDS
from studies.snapshot import snapshot_drift, study_snapshot

# Other apps add to the study admin, from their `ready()`: inlines (e.g. the study's
# dialogues), columns of the list (callables (study) -> text, with a description), links
# (callables (study) -> [(label, url)]) and views (callables (admin_site) -> [path]).
study_inlines: list = []
study_columns: list = []
study_links: list = []
study_urls: list = []

# The admin's home in the order of the experimenter's work (studies first).
admin_home.install(admin.site)


def move_buttons(name: str) -> str:
    """↑ and ↓ for a row whose place is its position (static/js/steps_order.js)."""
    return format_html(
        '<span class="rostrum-order"><button type="button" class="button rostrum-move" data-move="up" '
        'title="Move up" aria-label="Move {} up">↑</button> <button type="button" class="button '
        'rostrum-move" data-move="down" title="Move down" aria-label="Move {} down">↓</button></span>',
        name,
        name,
    )


class StepRowForm(forms.ModelForm):
    """A step's row in the study page. Its position is not typed: the row's place in the table
    is its position (moved with the ↑ ↓ buttons, static/js/steps_order.js); a new row without
    one goes last."""

    position = forms.IntegerField(widget=forms.HiddenInput, required=False, min_value=1)

    class Meta:
        model = Step
        fields = ["position", "kind", "title"]


class StepInline(admin.TabularInline):
    model = Step
    form = StepRowForm
    fields = ["position", "order", "kind", "title", "configure"]
    readonly_fields = ["order", "configure"]
    extra = 0
    ordering = ["position"]
    verbose_name_plural = "Steps, in the order participants meet them (move them with ↑ and ↓, then save)"

    class Media:
        js = ["js/steps_order.js"]

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "kind":
            return forms.ChoiceField(choices=registry.choices(), label="Kind")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    @admin.display(description="Order")
    def order(self, step: Step) -> str:
        return move_buttons(step.title or "this step")

    @admin.display(description="Configuration")
    def configure(self, step: Step) -> str:
        if not step.pk:
            return "Save first, then configure"
        url = reverse("admin:studies_step_change", args=[step.pk])
        return format_html('<a href="{}">Configure this step</a>', url)

    def _locked(self, obj) -> bool:
        return obj is not None and study_is_locked(obj)

    def has_add_permission(self, request, obj=None) -> bool:
        return not self._locked(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return not self._locked(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return not self._locked(obj) and super().has_delete_permission(request, obj)


# How long a duplicate page's key opens the copy it made (a double click, a resend).
DUPLICATE_KEY_SECONDS = 3600


class StudyForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "language" in self.fields:  # a post without it (a script) keeps the study's language
            self.fields["language"].required = False

    def clean_language(self):
        return self.cleaned_data.get("language") or self.instance.language or "en"

    def clean_status(self):
        status = self.cleaned_data["status"]
        if status == Study.Status.LIVE and not self.instance.pk:
            raise ValidationError("Save the study as a draft, add its steps, then set it live.")
        if (
            status == Study.Status.DRAFT
            and self.instance.pk
            and self.instance.status != Study.Status.DRAFT
            and not study_may_go_back_to_draft(self.instance)
        ):
            # Refused on the form, with nothing saved: the service's refusal came after the rest of
            # the page was saved, so "cannot go back to draft" and "was changed successfully"
            # were shown together (the researcher walk). The service still checks.
            raise ValidationError(BACK_TO_DRAFT_REFUSED)
        return status

    def clean(self):
        """Going live: the go-live checks, on the study as this form would save it. They read
        the stored row before, so ticking "Pilot" and choosing Live in one save was refused
        for not being a pilot (the researcher walk). Steps and content added in the same save
        are not seen yet (the inlines are saved after the form): the service checks again
        after saving, so nothing unchecked goes live."""
        cleaned = super().clean()
        status = cleaned.get("status")
        if status == Study.Status.LIVE and self.instance.pk and self.instance.status != Study.Status.LIVE:
            problems = study_problems(construct_instance(self, copy.copy(self.instance)))
            if problems:
                self.add_error("status", problems)
        return cleaned


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    form = StudyForm
    list_filter = ["status"]
    search_fields = ["title", "slug"]
    readonly_fields = [
        "locked_at",
        "entered_at",
        "snapshot_sha256",
        "snapshot_at",
        "design_problems",
        "since_going_live",
    ]

    class Media:
        js = ["js/copy.js"]

    def get_readonly_fields(self, request, obj=None):
        """Once the study is frozen (live, or taken), what it froze cannot change here."""
        frozen = [*FROZEN_STUDY_FIELDS, "language"] if obj is not None and obj.locked_at else []
        return [*self.readonly_fields, *frozen]

    actions = ["duplicate", "set_live", "set_paused", "set_closed"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "title",
                    "slug",
                    "status",
                    "language",
                    "notes",
                    "design_problems",
                    "since_going_live",
                ]
            },
        ),
        (
            "Prolific",
            {
                "fields": [
                    "prolific_study_id",
                    "completion_code",
                    "failed_check_code",
                    "no_consent_code",
                    "screened_out_code",
                ]
            },
        ),
        (
            "Leaving early: what participants read before going back to Prolific",
            {"fields": ["screened_out_message", "failed_check_message"], "classes": ["collapse"]},
        ),
        (
            "Time, quality and places",
            {
                "fields": [
                    "estimated_minutes",
                    "time_limit_minutes",
                    "attention_failures_to_end",
                    "wpm_cap",
                    "target_per_item",
                    "exclusion_frees_place",
                ]
            },
        ),
        (
            "Randomisation and pre-registration",
            {
                "fields": [
                    "seed",
                    "pilot",
                    "analysis_plan",
                    "locked_at",
                    "entered_at",
                    "snapshot_sha256",
                    "snapshot_at",
                ]
            },
        ),
    ]

    def get_inlines(self, request, obj):
        return [StepInline, *study_inlines]

    def get_urls(self):
        extra = [url for factory in study_urls for url in factory(self.admin_site)]
        view = self.admin_site.admin_view(self.instrument_view)
        name = "studies_study_instrument"
        extra += [
            path("how-to/", self.admin_site.admin_view(self.how_to_view), name="studies_study_how_to"),
            path("<int:study_id>/instrument/", view, {"suffix": "/"}, name=name),
            path("<int:study_id>/instrument.json", view, {"suffix": ".json"}, name=f"{name}_json"),
            path(
                "<int:study_id>/duplicate/",
                self.admin_site.admin_view(self.duplicate_view),
                name="studies_study_duplicate",
            ),
        ]
        return extra + super().get_urls()

    def duplicate_view(self, request, study_id: int):
        """'Duplicate as a new draft' from the study's own page (it was only an action of the
        list, which nothing on a frozen study's pages pointed to: the researcher walk). A GET
        asks, a POST makes the copy and opens it."""
        study = get_object_or_404(Study, pk=study_id)
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            # One copy per page shown: a double click (or a resend) opens the first copy.
            key = f"rostrum-duplicate:{study.pk}:{request.POST.get('key', '')[:64]}"
            if not cache.add(key, 0, DUPLICATE_KEY_SECONDS):
                made = cache.get(key)  # 0 while the first request is still making it
                if made:
                    return HttpResponseRedirect(reverse("admin:studies_study_change", args=[made]))
                return HttpResponseRedirect(reverse("admin:studies_study_changelist"))
            copy = self._duplicate(request, study)
            cache.set(key, copy.pk, DUPLICATE_KEY_SECONDS)
            return HttpResponseRedirect(reverse("admin:studies_study_change", args=[copy.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": Study._meta,
            "title": f"Duplicate {study.title} as a new draft",
            "study": study,
            "slug": self._copy_slug(study),
            "key": secrets.token_urlsafe(16),
            "kept_out_by": Study.objects.filter(recruitment__sisters=study).exists(),
        }
        return TemplateResponse(request, "admin/studies/study/duplicate.html", context)

    def how_to_view(self, request):
        """A short guide from an empty admin to paid participants, linked from the admin home."""
        context = {
            **self.admin_site.each_context(request),
            "opts": Study._meta,
            "title": "How to run a study",
        }
        return TemplateResponse(request, "admin/rostrum/how_to_run.html", context)

    def instrument_view(self, request, study_id: int, suffix: str):
        """The frozen snapshot: readable (`/`) or as JSON (`.json`), what exactly participants
        were asked and in which order, with the hashes of the content and settings used."""
        study = get_object_or_404(Study, pk=study_id)
        if not self.has_view_permission(request, study) or suffix not in ("/", ".json"):
            raise Http404
        if not study.snapshot:
            raise Http404("The study has not gone live: nothing is frozen yet.")
        if suffix == ".json":
            response = JsonResponse(study.snapshot, json_dumps_params={"indent": 1, "ensure_ascii": False})
            response["Content-Disposition"] = (
                f'attachment; filename="{study.slug}-instrument-{study.snapshot_sha256[:12]}.json"'
            )
            return response
        context = {
            **self.admin_site.each_context(request),
            "opts": Study._meta,
            "title": f"Instrument: {study.title}",
            "study": study,
            "snapshot": study.snapshot,
            "content_json": json.dumps(study.snapshot.get("content", {}), indent=1, ensure_ascii=False),
        }
        return TemplateResponse(request, "admin/studies/study/instrument.html", context)

    def get_list_display(self, request):
        return ["title", "slug", "status", *study_columns, "links"]

    @admin.display(description="Links")
    def links(self, study: Study) -> str:
        items = [("Preview", reverse("preview", args=[study.slug]))]
        for factory in study_links:
            items += factory(study)
        return format_html_join(" · ", '<a href="{}">{}</a>', ((url, label) for label, url in items))

    @admin.display(description="Before going live")
    def design_problems(self, study: Study) -> str:
        if not study.pk:
            return "—"
        problems = study_problems(study)
        warnings = format_html_join("", "<li>Worth a look: {}</li>", ((w,) for w in study_warnings(study)))
        if not problems:
            return format_html("No problems found: the study can go live.<ul>{}</ul>", warnings)
        items = format_html_join("", "<li>{}</li>", ((p,) for p in problems))
        return format_html("<ul>{}{}</ul>", items, warnings)

    @admin.display(description="Since going live")
    def since_going_live(self, study: Study) -> str:
        """What changed since the snapshot was frozen (`manage.py verify_study` says the same):
        the targets and offered content stay editable on a live study, and a change there
        was seen nowhere but in that command (the researcher walk)."""
        if not study.pk or not study.snapshot_sha256:
            return "— (not live yet)"
        drift = snapshot_drift(study.snapshot, study_snapshot(study))
        if not drift:
            return "Nothing changed: the study matches the snapshot frozen when it went live."
        items = format_html_join("", "<li><code>{}</code></li>", ((d,) for d in drift))
        return format_html(
            '<p class="errornote">Changed since it went live (a deviation to report with the '
            "pre-registered design; the snapshot and its hash keep what was frozen):</p><ul>{}</ul>",
            items,
        )

    def save_model(self, request, obj, form, change):
        # A new status goes through the service (going live freezes the study: snapshot, hash,
        # lock), after the steps and the rest of the page are saved (save_related).
        if change and "status" in form.changed_data:
            obj._status_wanted = obj.status
            obj.status = form.initial.get("status") or Study.Status.DRAFT
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        wanted = getattr(form.instance, "_status_wanted", None)
        if wanted:
            try:
                study_set_status(study=form.instance, status=wanted)
            except ValueError as error:
                self.message_user(request, str(error), messages.ERROR)

    def save_formset(self, request, form, formset, change):
        if formset.model is not Step:
            return super().save_formset(request, form, formset, change)
        saved = formset.save(commit=False)
        last = Step.objects.filter(study=form.instance).count()
        for offset, step in enumerate(s for s in saved if s.position is None):
            step.position = last + offset + 1
        if saved or formset.deleted_objects:
            steps_arrange(study=form.instance, saved=saved, deleted=formset.deleted_objects)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        study = self.get_object(request, object_id)
        if study is not None:
            links = [("Preview", reverse("preview", args=[study.slug]))]
            if self.has_add_permission(request):
                links.append(("Duplicate", reverse("admin:studies_study_duplicate", args=[study.pk])))
            if study.snapshot_sha256:
                links.append(("Instrument", reverse("admin:studies_study_instrument", args=[study.pk])))
            links += translation_links(study)
            links += [item for factory in study_links for item in factory(study)]
            extra_context = {
                **(extra_context or {}),
                "rostrum_links": links,
                "prolific_url": study_url(request.build_absolute_uri("/"), study),
                "prolific_codes": completion_codes(study),
            }
        try:
            return super().change_view(request, object_id, form_url, extra_context)
        except StudyLocked as locked:
            self.message_user(request, str(locked), messages.ERROR)
            return HttpResponseRedirect(request.path)

    def _set_status(self, request, queryset, status: str) -> None:
        for study in queryset:
            try:
                study_set_status(study=study, status=status)
            except ValueError as error:
                self.message_user(request, f"Study {study.slug!r} is unchanged. {error}", messages.ERROR)
            else:
                status = study.get_status_display().lower()
                self.message_user(request, f"Study {study.slug!r} is now {status}.")

    @admin.action(description="Set live (after checking the design)")
    def set_live(self, request, queryset):
        self._set_status(request, queryset, Study.Status.LIVE)

    @admin.action(description="Pause (no new participants)")
    def set_paused(self, request, queryset):
        self._set_status(request, queryset, Study.Status.PAUSED)

    @admin.action(description="Close")
    def set_closed(self, request, queryset):
        self._set_status(request, queryset, Study.Status.CLOSED)

    @admin.action(description="Duplicate as a new draft (to change a study that has run)")
    def duplicate(self, request, queryset):
        for study in queryset:
            self._duplicate(request, study)

    @staticmethod
    def _copy_slug(study: Study) -> str:
        """'<slug>-v2', or the next version number: above every '<slug>-vN' there is (a copy
        deleted left a gap that a count of copies walked into, and 'pilot-study' counted as a
        copy of 'pilot'), within the slug's 50 characters (a copy of a long slug, or of a copy,
        was a database error on PostgreSQL)."""
        limit = Study._meta.get_field("slug").max_length
        base = study.slug
        numbers = [
            int(found.group(1))
            for slug in Study.objects.filter(slug__startswith=base).values_list("slug", flat=True)
            if (found := re.fullmatch(re.escape(base) + r"-v(\d+)", slug))
        ]
        suffix = f"-v{max(numbers, default=1) + 1}"
        slug = base[: limit - len(suffix)] + suffix
        while Study.objects.filter(slug=slug).exists():  # a shortened base met another study's
            suffix = f"-v{int(suffix[2:]) + 1}"
            slug = base[: limit - len(suffix)] + suffix
        return slug

    def _duplicate(self, request, study: Study) -> Study:
        copy = study_duplicate(study=study, slug=self._copy_slug(study))
        self.message_user(
            request,
            f"Created draft {copy.slug!r}. It is not a pilot (tick Pilot for a pilot run), and it has "
            f"{study.slug!r}'s completion codes: enter the codes Prolific gives the new study before "
            f"it goes live. {study.slug!r}'s participants are kept out of it (refused at entry, and by "
            "the Prolific draft's filter): to let them in, take it out of 'Keep out participants of' "
            "on the new study's Prolific page.",
        )
        return copy


class QuestionRowForm(forms.ModelForm):
    """A questionnaire item. Its position is not typed: the item's place on the page is its
    position (moved with ↑ and ↓, static/js/steps_order.js); a new item without one goes last."""

    position = forms.IntegerField(widget=forms.HiddenInput, required=False, min_value=0)

    class Meta:
        model = Question
        fields = "__all__"

    def clean_position(self) -> int:
        position = self.cleaned_data.get("position")
        if position is not None:
            return position
        return self.instance.position if self.instance.pk else QUESTION_LAST


# Where a new item goes when the page's script did not number it: after every numbered one.
QUESTION_LAST = 1000


class QuestionInline(admin.StackedInline):
    """Questionnaire items, in the order participants meet them. The form shows only the
    fields of the chosen kind (static/js/question_kind.js): options for choices, Likert and
    slider end labels, bounds for numbers and sliders, a minimum length for free text, an
    expected answer for checks."""

    model = Question
    form = QuestionRowForm
    extra = 0
    ordering = ["position", "id"]
    readonly_fields = ["order"]
    verbose_name_plural = "Questions, in the order participants meet them (move them with ↑ and ↓, then save)"
    fields = [
        ("position", "order", "key", "kind", "required"),
        "text",
        "help_text",
        "options",
        "specify_option",
        ("min_value", "max_value"),
        "min_length",
        "expected_answer",
    ]

    class Media:
        js = ["js/question_kind.js", "js/steps_order.js"]

    @admin.display(description="Order")
    def order(self, question: Question) -> str:
        return move_buttons(question.key or "this question")

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name in ("text", "options", "expected_answer"):
            field.widget = forms.Textarea(attrs={"rows": 3, "cols": 80})
        return field

    def has_add_permission(self, request, obj=None):
        return not (obj and study_is_locked(obj.study)) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return not (obj and study_is_locked(obj.study)) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not (obj and study_is_locked(obj.study)) and super().has_delete_permission(request, obj)


def config_field(name: str, field: forms.Field) -> forms.Field:
    """A kind's configuration field as the step's page shows it: labelled by its own name ("Agree
    label", not "Config agree label", Django's label for the prefixed name), and a one-line text
    box as wide as the admin's other text fields (the default question did not fit: the
    researcher walk)."""
    field = copy.deepcopy(field)
    if field.label is None:
        field.label = name.replace("_", " ").capitalize()
    if type(field.widget) is forms.TextInput and "class" not in field.widget.attrs:
        field.widget.attrs["class"] = "vTextField"
    return field


def step_form_for(kind: registry.StepKind | None) -> type[forms.ModelForm]:
    """A Step form with the kind's own configuration fields instead of raw JSON."""
    config_fields = dict(kind.config_form.base_fields) if kind else {}

    class StepForm(forms.ModelForm):
        class Meta:
            model = Step
            fields = ["study", "position", "kind", "title"]

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.fields["kind"] = forms.ChoiceField(choices=registry.choices())
            # Only studies whose steps may change (a frozen one's step was a 500 on saving: the
            # researcher walk); a step stays in its study (to move one, make it in the other).
            study = self.fields["study"]
            study.queryset = Study.objects.filter(locked_at__isnull=True).order_by("-pk")
            study.help_text = (
                "Studies frozen since going live are not listed: set one back to draft if nobody has "
                "taken part yet, or use 'Duplicate' on its page to make a new version."
            )
            study.disabled = bool(self.instance.pk)
            # Not typed: steps are reordered on the study page; a new one goes last.
            self.fields["position"].widget = forms.HiddenInput()
            self.fields["position"].required = False
            if kind is not None:
                self.fields["kind"].disabled = bool(self.instance.pk)
                config = kind.config(self.instance)
                for name, field in config_fields.items():
                    self.fields[f"config_{name}"] = config_field(name, field)
                    self.initial[f"config_{name}"] = config.get(name)

        def _get_validation_exclusions(self):
            # A position another step holds is not an error (the unique (study, position)
            # constraint is not checked here): steps_arrange() makes room for the step.
            return super()._get_validation_exclusions() | {"position"}

        def clean(self):
            data = super().clean()
            if kind is not None:
                config = {name: data.get(f"config_{name}") for name in config_fields}
                try:
                    data["config"] = kind.clean_config(config)
                except ValidationError as error:
                    raise ValidationError(error.messages) from None
            return data

        def save(self, commit=True):
            if "config" in self.cleaned_data:
                self.instance.config = self.cleaned_data["config"]
            elif not self.instance.pk:
                chosen = registry.get(self.cleaned_data["kind"])
                self.instance.config = chosen.config(Step(config={}))
            return super().save(commit)

    return StepForm


FROZEN_STEP_FIELDS = ["study", "position", "kind", "title", "configuration"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["__str__", "study", "kind"]
    list_filter = ["study", "kind"]
    ordering = ["study", "position"]

    def _frozen(self, request, obj) -> bool:
        return obj is not None and not self.has_change_permission(request, obj)

    def get_form(self, request, obj=None, change=False, **kwargs):
        if self._frozen(request, obj):
            kwargs["fields"] = []  # shown read-only, see get_fieldsets
            return super().get_form(request, obj, change, **kwargs)
        kind = registry.get(obj.kind) if obj else None
        kwargs["form"] = step_form_for(kind)
        kwargs["fields"] = None
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return FROZEN_STEP_FIELDS if self._frozen(request, obj) else []

    def get_fieldsets(self, request, obj=None):
        if self._frozen(request, obj):
            return [(None, {"fields": FROZEN_STEP_FIELDS})]
        form = self.get_form(request, obj)(instance=obj)
        base = ["study", "position", "kind", "title"]
        config = [name for name in form.fields if name.startswith("config_")]
        where = "Reorder steps on the study page, with ↑ and ↓."
        if obj is not None:
            where = f"Step {obj.position} of the study. {where}"
        sets = [(None, {"fields": base, "description": where})]
        if obj is not None:
            kind = registry.get(obj.kind)
            sets.append((f"{kind.label}: {kind.description}", {"fields": config}))
        else:
            sets.append((None, {"fields": [], "description": "Choose the kind, save, then configure it."}))
        return sets

    @admin.display(description="Configuration")
    def configuration(self, step: Step) -> str:
        kind = registry.get(step.kind)
        rows = [(name, value) for name, value in kind.config(step).items()]
        return format_html(
            '<p>Participants have taken this study, so its steps are frozen: <a href="{}">duplicate '
            "it as a new draft</a> to change them.</p><dl>{}</dl>",
            reverse("admin:studies_study_duplicate", args=[step.study_id]),
            format_html_join("", "<dt><strong>{}</strong></dt><dd>{}</dd>", rows),
        )

    def get_inlines(self, request, obj):
        if obj is not None and registry.get(obj.kind).uses_questions:
            return [QuestionInline]
        return []

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        study_id = request.GET.get("study")
        if study_id and study_id.isdigit():
            initial["position"] = Step.objects.filter(study_id=study_id).count() + 1
        return initial

    def _locked(self, obj) -> bool:
        return obj is not None and study_is_locked(obj.study)

    def has_change_permission(self, request, obj=None):
        return not self._locked(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not self._locked(obj) and super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        if obj.position is None:
            obj.position = Step.objects.filter(study=obj.study).count() + 1
        steps_arrange(study=obj.study, saved=[obj])

    def save_related(self, request, form, formsets, change):
        with transaction.atomic():
            super().save_related(request, form, formsets, change)
            study_steps_changed(study=form.instance.study)

    def delete_model(self, request, obj):
        steps_arrange(study=obj.study, deleted=[obj])

    def delete_queryset(self, request, queryset):
        for step in queryset.select_related("study"):
            self.delete_model(request, step)

    def response_add(self, request, obj, post_url_continue=None):
        # A new step goes straight to its configuration form.
        return HttpResponseRedirect(reverse("admin:studies_step_change", args=[obj.pk]))

    def response_change(self, request, obj):
        if "_continue" in request.POST or "_addanother" in request.POST:
            return super().response_change(request, obj)
        return HttpResponseRedirect(reverse("admin:studies_study_change", args=[obj.study_id]))
