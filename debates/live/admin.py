"""Design B's admin: claims and their import, the claims a study offers, debater
configurations, and live sessions with their transcripts."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.urls import path

from debates.admin_base import ImportForm, InUseAdmin, ReadOnlyAdmin, import_page
from debates.formats import format_urls
from debates.live import services
from debates.live.imports import claims_import
from debates.live.prompts import PromptError, check_template
from debates.models import Claim, DebaterConfig, LiveSession, LiveTurn, StudyClaim


class StudyClaimInline(admin.TabularInline):
    model = StudyClaim
    extra = 0
    autocomplete_fields = ["claim"]
    verbose_name = "claim offered in this study"
    verbose_name_plural = "Study claims (balanced over screening group × protocol × claim)"


@admin.register(Claim)
class ClaimAdmin(InUseAdmin):
    list_display = ["slug", "text", "truth", "domain", "source_counts"]
    list_filter = ["domain", "truth"]
    search_fields = ["slug", "text"]
    readonly_fields = ["imported_at"]
    change_list_template = "admin/debates/claim/change_list.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [
            path("import/", view, name="debates_claim_import"),
            *format_urls(self.admin_site, "claims"),
            *super().get_urls(),
        ]

    studies_using = staticmethod(services.claim_studies)
    new_version = staticmethod(lambda claim: services.claim_new_version(claim=claim))

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
            fmt="claims",
        )


class ClaimImportForm(ImportForm):
    file = forms.FileField(help_text="A rostrum.claims/1 JSON or CSV file (its format is linked above).")


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
class DebaterConfigAdmin(InUseAdmin):
    form = DebaterConfigForm
    studies_using = staticmethod(services.debater_config_studies)
    new_version = staticmethod(lambda config: services.debater_config_new_version(config=config))
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
