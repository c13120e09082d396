"""Admin for cases and dialogues, their import, and the dialogues offered in a study."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, Sum
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from analysis.pairwise import bradley_terry, win_matrix
from debates.claims_import import claims_import
from debates.importing import ImportInvalid, cases_import, decode
from debates.models import (
    BiasReport,
    Case,
    Claim,
    Comparison,
    DebaterConfig,
    Dialogue,
    DialogueAssignment,
    InstanceSet,
    Judgement,
    LiveSession,
    LiveTurn,
    LLMCall,
    StudyClaim,
    StudyDialogue,
    Turn,
)
from debates.pairwise import (
    instance_set_build,
    instance_set_from_dialogues,
    live_excerpts,
    valid_comparisons,
    valid_per_instance,
)
from debates.pairwise_io import set_csv_lines, set_import, set_json
from debates.prompts import PromptError, check_template
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


def import_page(model_admin, request, *, perm: str, title: str, form_class, run, done: str):
    """An upload page: `run(form.cleaned_data, upload_text)` imports and returns the success
    message, or raises ImportInvalid, whose problems (with their lines) are listed."""
    if not request.user.has_perm(perm):
        return redirect("admin:index")
    form = form_class(request.POST or None, request.FILES or None)
    problems = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            message = run(form.cleaned_data, decode(upload.read()), upload.name)
        except ImportInvalid as invalid:
            problems = invalid.problems
        else:
            model_admin.message_user(request, message, messages.SUCCESS)
            return redirect(done)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": title,
        "form": form,
        "problems": problems,
    }
    return TemplateResponse(request, "admin/debates/case/import.html", context)


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
        return import_page(
            self,
            request,
            perm="debates.add_dialogue",
            title="Import cases and dialogues",
            form_class=ImportForm,
            run=lambda data, text, name: f"Imported: {cases_import(text=text)}.",
            done="admin:debates_case_changelist",
        )


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


# --- Live debates (design B) ---------------------------------------------------------------


class StudyClaimInline(admin.TabularInline):
    model = StudyClaim
    extra = 0
    autocomplete_fields = ["claim"]
    verbose_name = "claim offered in this study"
    verbose_name_plural = "Study claims (balanced over screening group × protocol × claim)"


studies_admin.study_inlines.append(StudyClaimInline)


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = ["slug", "text", "truth", "domain", "source_counts"]
    list_filter = ["domain", "truth"]
    search_fields = ["slug", "text"]
    readonly_fields = ["imported_at"]
    change_list_template = "admin/debates/claim/change_list.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [path("import/", view, name="debates_claim_import"), *super().get_urls()]

    @admin.display(description="Sources (true / false)")
    def source_counts(self, claim: Claim) -> str:
        return f"{len(claim.sources_true)} / {len(claim.sources_false)}"

    def import_view(self, request):
        return import_page(
            self,
            request,
            perm="debates.add_claim",
            title="Import claims",
            form_class=ClaimImportForm,
            run=lambda data, text, name: f"Imported: {claims_import(text=text, filename=name)}.",
            done="admin:debates_claim_changelist",
        )


class ClaimImportForm(ImportForm):
    file = forms.FileField(help_text="A rostrum.claims/1 JSON or CSV file (see docs/claim-format.md).")


class DebaterConfigForm(forms.ModelForm):
    class Meta:
        model = DebaterConfig
        fields = "__all__"

    def clean_system_prompt(self):
        template = self.cleaned_data["system_prompt"]
        try:
            check_template(template)
        except PromptError as error:
            raise forms.ValidationError(str(error)) from None
        return template


@admin.register(DebaterConfig)
class DebaterConfigAdmin(admin.ModelAdmin):
    form = DebaterConfigForm
    list_display = ["name", "model", "temperature", "max_tokens", "seed", "template_version"]
    readonly_fields = ["template_version"]

    def save_model(self, request, obj, form, change):
        if change and "system_prompt" in form.changed_data:
            obj.template_version += 1  # every recorded call names the template version it used
        super().save_model(request, obj, form, change)


class LiveTurnInline(admin.TabularInline):
    model = LiveTurn
    extra = 0
    can_delete = False
    fields = [
        "seq",
        "round",
        "speaker",
        "target",
        "status",
        "attempts",
        "text",
        "error",
        "started_at",
        "finished_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LiveSession)
class LiveSessionAdmin(ReadOnlyAdmin):
    list_display = ["participant", "claim", "protocol", "group", "phase", "current_turn", "last_activity_at"]
    list_filter = ["phase", "protocol", "group", "participant__study"]
    search_fields = ["participant__prolific_pid", "claim__slug"]
    list_select_related = ["participant", "claim"]
    inlines = [LiveTurnInline]

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.has_perm("debates.view_livesession")

    @admin.display(description="Turn now")
    def current_turn(self, session: LiveSession) -> str:
        if session.phase != LiveSession.Phase.CHAT:
            return "—"
        last = session.turns.order_by("-seq").first()
        if last is None:
            return "starting"
        return f"#{last.seq} {last.get_speaker_display()} ({last.get_status_display().lower()})"


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "study",
        "role",
        "model",
        "tokens_in",
        "tokens_out",
        "ttft_ms",
        "total_ms",
        "attempts",
        "error_kind",
        "cost_usd",
    ]
    list_filter = ["study", "role", "backend", "model", "error_kind"]
    search_fields = ["prompt_hash", "output"]
    date_hierarchy = "created_at"

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        if hasattr(response, "context_data") and "cl" in response.context_data:
            queryset = response.context_data["cl"].queryset
            response.context_data["totals"] = llm_totals(queryset)
        return response


def llm_totals(queryset) -> list[dict]:
    """Calls, failures, tokens and cost per study, over the filtered calls."""
    rows = (
        queryset.order_by()
        .values("study__slug")
        .annotate(
            calls=Count("id"),
            failed=Count("id", filter=~Q(error_kind="")),
            tokens_in=Sum("tokens_in"),
            tokens_out=Sum("tokens_out"),
            cost=Sum("cost_usd"),
        )
        .order_by("study__slug")
    )
    return list(rows)


# --- Pairwise comparisons (design D) ---------------------------------------------------------


class InstanceSetImportForm(ImportForm):
    into = forms.ModelChoiceField(
        queryset=InstanceSet.objects.all(),
        required=False,
        help_text="CSV files only: the set the instances go into (a JSON file names its own set).",
    )


@admin.register(InstanceSet)
class InstanceSetAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "instance_count", "per_pair", "annotations_per_instance", "links"]
    readonly_fields = ["shortfalls", "created_at"]
    actions = ["build_from_dialogues", "build_from_live_debates"]
    change_list_template = "admin/debates/instanceset/change_list.html"

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("import/", wrap(self.import_view), name="debates_instanceset_import"),
            path("<int:set_id>/export.<str:fmt>", wrap(self.export_view), name="debates_instanceset_export"),
            path("<int:set_id>/ranking/", wrap(self.ranking_view), name="debates_instanceset_ranking"),
            *super().get_urls(),
        ]

    @admin.display(description="Instances")
    def instance_count(self, pool: InstanceSet) -> int:
        return pool.instances.count()

    @admin.display(description="")
    def links(self, pool: InstanceSet) -> str:
        return format_html(
            '<a href="{}">Ranking</a> · <a href="{}">JSON</a> · <a href="{}">CSV</a>',
            reverse("admin:debates_instanceset_ranking", args=[pool.pk]),
            reverse("admin:debates_instanceset_export", args=[pool.pk, "json"]),
            reverse("admin:debates_instanceset_export", args=[pool.pk, "csv"]),
        )

    @admin.action(description="Build the instances from all pre-generated dialogues (seeded)")
    def build_from_dialogues(self, request, queryset):
        dialogues = list(Dialogue.objects.select_related("case"))
        for pool in queryset:
            try:
                sample = instance_set_from_dialogues(instance_set=pool, dialogues=dialogues)
            except ValueError as error:
                self.message_user(request, f"{pool.slug}: {error}", messages.ERROR)
                continue
            note = (
                f"; {len(sample.shortfalls)} pair/stance cells had too few candidates"
                if sample.shortfalls
                else ""
            )
            self.message_user(request, f"{pool.slug}: {len(sample.pairs)} instances{note}.")

    @admin.action(description="Build the instances from finished live debates (seeded)")
    def build_from_live_debates(self, request, queryset):
        sessions = list(
            LiveSession.objects.filter(protocol="debate", chat_ended_at__isnull=False).select_related(
                "claim", "debater_a", "debater_b"
            )
        )
        for pool in queryset:
            try:
                sample = instance_set_build(
                    instance_set=pool, excerpts=live_excerpts(sessions, pool.excerpt_turns)
                )
            except ValueError as error:
                self.message_user(request, f"{pool.slug}: {error}", messages.ERROR)
                continue
            self.message_user(
                request, f"{pool.slug}: {len(sample.pairs)} instances from {len(sessions)} debates."
            )

    def import_view(self, request):
        def run(data, text, name) -> str:
            pool = set_import(text=text, filename=name, into=data["into"])
            return f"Imported {pool.slug!r}: {pool.instances.count()} instances."

        return import_page(
            self,
            request,
            perm="debates.add_instanceset",
            title="Import an instance set",
            form_class=InstanceSetImportForm,
            run=run,
            done="admin:debates_instanceset_changelist",
        )

    def export_view(self, request, set_id: int, fmt: str):
        pool = InstanceSet.objects.filter(pk=set_id).first()
        if pool is None or fmt not in ("json", "csv") or not self.has_view_permission(request):
            raise Http404
        if fmt == "json":
            response = HttpResponse(set_json(pool), content_type="application/json")
        else:
            response = StreamingHttpResponse(set_csv_lines(pool), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{pool.slug}.{fmt}"'
        return response

    def ranking_view(self, request, set_id: int):
        pool = InstanceSet.objects.filter(pk=set_id).first()
        if pool is None or not self.has_view_permission(request):
            raise Http404
        outcomes = valid_outcomes(pool)
        labels, wins = win_matrix(
            outcomes,
            sorted(
                {i.interlocutor_1 for i in pool.instances.all()}
                | {i.interlocutor_2 for i in pool.instances.all()}
            ),
        )
        ranking = bradley_terry(labels, wins)
        valid = valid_per_instance(pool)
        instances = pool.instances.count()
        complete = sum(1 for n in valid.values() if n >= pool.annotations_per_instance)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Ranking: {pool.title}",
            "pool": pool,
            "comparisons": len(outcomes),
            "complete": complete,
            "instances": instances,
            "rows": [
                {
                    "label": label,
                    "strength": strength,
                    "wins": [wins[labels.index(label), j] for j in range(len(labels))],
                }
                for label, strength in ranking.ordered()
            ],
            "labels": labels,
        }
        return TemplateResponse(request, "admin/debates/instanceset/ranking.html", context)


def valid_outcomes(pool: InstanceSet) -> list[tuple[str, str, str]]:
    """(interlocutor 1, interlocutor 2, winner) of every answer that counts."""
    rows = valid_comparisons(pool).select_related("instance")
    return [(c.instance.interlocutor_1, c.instance.interlocutor_2, c.winner) for c in rows]


@admin.register(Comparison)
class ComparisonAdmin(ReadOnlyAdmin):
    list_display = [
        "participant",
        "instance",
        "order",
        "is_check",
        "choice",
        "confidence",
        "check_passed",
        "answered_at",
    ]
    list_filter = ["instance__instance_set", "is_check", "check_passed", "participant__study"]
    search_fields = ["participant__prolific_pid"]
    list_select_related = ["participant", "instance__instance_set"]
