"""The admin of LLM jobs and prompt templates.

A job's page: its kind's configuration form (editable until the job starts), a live
progress bar (static/js/job_progress.js polls `<job>/progress/` every 2 s), the actions
start / pause / resume / cancel, the kind's summary table and links, and the items, each
linking to its calls in the model-call log. Prompt templates: a version that produced data is
never edited in place, a change is saved as the next version.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseNotAllowed, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse

from debates.jobs import kinds, services, tasks, templates
from debates.models import Job, JobItem, PromptTemplate

CONFIG_PREFIX = "config__"
ITEMS_SHOWN = 500


def job_form(kind: kinds.JobKind | None, editable: bool) -> type[forms.ModelForm]:
    """The job's fields, plus its kind's configuration fields (stored as `config`)."""
    config_fields = dict(kind.config_form.base_fields) if kind and editable else {}

    class JobForm(forms.ModelForm):
        class Meta:
            model = Job
            fields = ["name", "kind", "title", "budget_usd", "concurrency", "note"]

        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            if "kind" in self.fields:
                self.fields["kind"] = forms.ChoiceField(
                    choices=kinds.choices(), initial=kind.key if kind else None
                )
            for name in config_fields:
                if name in (self.instance.config or {}):
                    self.initial[CONFIG_PREFIX + name] = self.instance.config[name]

        def clean(self):
            data = super().clean()
            if kind and "kind" in data and data["kind"] != kind.key:
                self.add_error(
                    "kind", f"The form shows {kind.key}'s settings: add a job with ?kind={data['kind']}."
                )
            if config_fields and not any(CONFIG_PREFIX + name in self.errors for name in config_fields):
                values = {name: data.get(CONFIG_PREFIX + name) for name in config_fields}
                try:  # the kind's own checks across its fields
                    self.instance.config = kind.clean_config(kinds._jsonable(values))
                except forms.ValidationError as error:
                    self.add_error(None, error)
            return data

    attrs = {CONFIG_PREFIX + name: field for name, field in config_fields.items()}
    return type("JobForm", (JobForm,), attrs)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "title", "status", "progress_text", "spent", "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "title"]
    actions = ["start", "pause", "resume", "cancel"]
    change_form_template = "admin/debates/job/change_form.html"

    def _kind(self, request, obj: Job | None) -> kinds.JobKind | None:
        key = obj.kind if obj else request.GET.get("kind") or (kinds.choices() or [("", "")])[0][0]
        try:
            return kinds.get(key)
        except KeyError:
            return None

    def get_form(self, request, obj=None, change=False, **kwargs):
        editable = obj is None or obj.status == Job.Status.DRAFT
        kwargs["form"] = job_form(self._kind(request, obj), editable)
        kwargs["fields"] = None
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        form = self.get_form(request, obj)
        return list(form.base_fields) + [
            f for f in self.get_readonly_fields(request, obj) if f not in form.base_fields
        ]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        fixed = ["kind", "status", "started_at", "finished_at"]
        return fixed if obj.status == Job.Status.DRAFT else [*fixed, "name", "config"]

    @admin.display(description="progress")
    def progress_text(self, job: Job) -> str:
        p = services.job_progress(job)
        return f"{p['done']}/{p['total']} done, {p['failed']} failed, {p['running']} running"

    @admin.display(description="spent (USD)")
    def spent(self, job: Job) -> str:
        return f"{services.job_spent(job.pk):.4f}"

    # --- The page ------------------------------------------------------------------------------

    def get_urls(self):
        own = [
            path(
                "<int:job_id>/progress/",
                self.admin_site.admin_view(self.progress_view),
                name="debates_job_progress",
            ),
            path(
                "<int:job_id>/do/<str:verb>/",
                self.admin_site.admin_view(self.verb_view),
                name="debates_job_verb",
            ),
        ]
        return own + super().get_urls()

    def progress_view(self, request, job_id: int):
        job = get_object_or_404(Job, pk=job_id)
        if not self.has_view_permission(request, job):
            return JsonResponse({"error": "forbidden"}, status=403)
        return JsonResponse(services.job_progress(job))

    def verb_view(self, request, job_id: int, verb: str):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        job = get_object_or_404(Job, pk=job_id)
        if verb not in self.actions or not self.has_change_permission(request, job):
            return redirect("admin:debates_job_change", job_id)
        getattr(self, verb)(request, Job.objects.filter(pk=job_id))
        return redirect("admin:debates_job_change", job_id)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        job = self.get_object(request, object_id)
        extra = extra_context or {}
        if job is not None:
            kind = self._kind(request, job)
            items = list(job.items.order_by("pk")[:ITEMS_SHOWN])
            calls_url = reverse("admin:debates_llmcall_changelist")
            extra.update(
                progress=services.job_progress(job),
                progress_url=reverse("admin:debates_job_progress", args=[job.pk]),
                verbs=self._verbs(job),
                items=[(item, f"{calls_url}?job_item__id__exact={item.pk}") for item in items],
                items_more=max(0, job.items.count() - ITEMS_SHOWN),
                summary=kind.summary(job) if kind and job.items.exists() else [],
                links=kind.links(job) if kind else [],
                kind_label=kind.label if kind else job.kind,
            )
        return super().change_view(request, object_id, form_url, extra)

    def _verbs(self, job: Job) -> list[str]:
        status = Job.Status
        return {
            status.DRAFT: ["start"],
            status.RUNNING: ["pause", "cancel"],
            status.PAUSED: ["resume", "cancel"],
            status.BUDGET: ["resume", "cancel"],
        }.get(job.status, [])

    # --- The actions ---------------------------------------------------------------------------

    def _each(self, request, queryset, verb, done: str) -> None:
        for job in queryset:
            try:
                verb(job.pk)
            except services.JobError as error:
                self.message_user(request, f"{job}: {error}", messages.ERROR)
            except KeyError as error:  # a kind no longer registered
                self.message_user(request, f"{job}: {error}", messages.ERROR)
            else:
                self.message_user(request, f"{job}: {done}.", messages.SUCCESS)

    @admin.action(description="Start the selected jobs")
    def start(self, request, queryset):
        self._each(request, queryset, tasks.job_start, "running")

    @admin.action(description="Pause the selected jobs")
    def pause(self, request, queryset):
        self._each(request, queryset, tasks.job_pause, "paused (items running finish)")

    @admin.action(description="Resume the selected jobs")
    def resume(self, request, queryset):
        self._each(request, queryset, tasks.job_resume, "running")

    @admin.action(description="Cancel the selected jobs")
    def cancel(self, request, queryset):
        self._each(request, queryset, tasks.job_cancel, "cancelled")


@admin.register(JobItem)
class JobItemAdmin(admin.ModelAdmin):
    list_display = ["job", "key", "status", "attempts", "cost_usd", "finished_at"]
    list_filter = ["status", "job"]
    search_fields = ["key"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class PromptTemplateForm(forms.ModelForm):
    class Meta:
        model = PromptTemplate
        fields = ["name", "text", "note"]


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    form = PromptTemplateForm
    list_display = ["name", "version", "note", "used_at", "created_at"]
    list_filter = ["name"]
    search_fields = ["name", "text"]

    def get_readonly_fields(self, request, obj=None):
        return ["name", "version", "used_at", "created_at"] if obj else []

    def save_model(self, request, obj, form, change):
        if not change:
            last = PromptTemplate.objects.filter(name=obj.name).order_by("-version").first()
            obj.version = last.version + 1 if last else 1
            obj.save()
            return
        stored = PromptTemplate.objects.get(pk=obj.pk)
        saved = templates.template_save(template=stored, text=obj.text, note=obj.note)
        if saved.pk != stored.pk:
            obj.pk, obj.version, obj.used_at, obj.created_at = saved.pk, saved.version, None, saved.created_at
            self.message_user(
                request,
                f"Version {stored.version} produced data: the change is version {saved.version}.",
                messages.INFO,
            )
