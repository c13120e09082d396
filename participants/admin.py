"""Admin for participants: status and step at a glance, flags beside the attention and timing
evidence, exclusions that can be undone."""

from __future__ import annotations

from collections import Counter

from django.contrib import admin, messages
from django.db.models import Count, Exists, OuterRef, Prefetch
from django.utils import timezone
from django.utils.html import format_html

from participants import services
from participants.admin_exclusions import exclude_with_reason
from participants.models import Exclusion, Flag, Participant, Response, StepVisit, TextEntry
from studies.services import study_steps


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ExclusionInline(ReadOnlyInline):
    model = Exclusion
    fk_name = "participant"
    fields = ["reason", "detail", "created_at", "created_by", "revoked_at", "revoked_by", "revoke_note"]
    readonly_fields = fields


class FlagInline(ReadOnlyInline):
    model = Flag
    verbose_name_plural = "Flags (evidence for review, never an exclusion by themselves)"
    fields = ["position", "step_kind", "kind", "field", "detail", "value", "threshold", "created_at"]
    readonly_fields = fields


class TextEntryInline(ReadOnlyInline):
    model = TextEntry
    verbose_name_plural = "How free text was written (browser counts, never the keystrokes)"
    fields = [
        "position",
        "field",
        "key",
        "chars",
        "keys",
        "pastes",
        "pasted_chars",
        "typing_ms",
        "page_ms",
        "created_at",
    ]
    readonly_fields = fields


class ResponseInline(ReadOnlyInline):
    model = Response
    fields = ["position", "step_kind", "key", "value", "value_num", "is_check", "passed", "created_at"]
    readonly_fields = fields


class StepVisitInline(ReadOnlyInline):
    model = StepVisit
    fields = [
        "position",
        "step_kind",
        "shown_at",
        "submitted_at",
        "server_ms",
        "client_active_ms",
        "client_hidden_ms",
        "client_blurs",
    ]
    readonly_fields = fields


class StepFilter(admin.SimpleListFilter):
    title = "current step"
    parameter_name = "position"

    def lookups(self, request, model_admin):
        study_id = request.GET.get("study__id__exact")
        if not study_id or not study_id.isdigit():
            return []  # shown once a study is chosen: "Step 1" to "Step 15" fitted no study's steps
        from studies.models import Study

        study = Study.objects.filter(pk=study_id).first()
        return [(str(s.position), str(s)) for s in study_steps(study)] if study else []

    def queryset(self, request, queryset):
        if self.value() and self.value().isdigit():
            return queryset.filter(position=int(self.value()), status=Participant.Status.ACTIVE)
        return queryset


class FlagFilter(admin.SimpleListFilter):
    title = "flags"
    parameter_name = "flag"

    def lookups(self, request, model_admin):
        return [("any", "Any flag"), ("none", "No flag"), *Flag.Kind.choices]

    def queryset(self, request, queryset):
        value = self.value()
        flags = Flag.objects.filter(participant=OuterRef("pk"))
        if value == "any":
            return queryset.filter(Exists(flags))
        if value == "none":
            return queryset.exclude(Exists(flags))
        if value in Flag.Kind.values:
            return queryset.filter(Exists(flags.filter(kind=value)))
        return queryset


class PilotFilter(admin.SimpleListFilter):
    """Real participants (analysed: neither pilots nor previews) or pilots (simulated)."""

    title = "pilot / real"
    parameter_name = "who"

    def lookups(self, request, model_admin):
        return [
            ("real", "Real participants"),
            ("pilot", "Pilots (simulated participants)"),
            ("preview", "Previews (staff walking the study)"),
        ]

    def queryset(self, request, queryset):
        if self.value() == "real":
            return queryset.filter(is_pilot=False, is_preview=False)
        if self.value() == "pilot":
            return queryset.filter(is_pilot=True)
        if self.value() == "preview":
            return queryset.filter(is_preview=True)
        return queryset


def flags_text(flags) -> str:
    """'honeypot, fast_page ×2': the kinds of a participant's flags, most frequent first."""
    counts = Counter(f.kind for f in flags)
    return ", ".join(kind if n == 1 else f"{kind} ×{n}" for kind, n in counts.most_common()) or "—"


def _short_time(moment) -> str:
    """'12-05 07:20' in the admin's time zone (the year only when not this one): the full
    date and time took three lines a cell."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    return local.strftime("%m-%d %H:%M" if local.year == timezone.localtime().year else "%Y-%m-%d %H:%M")


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = [
        "prolific_pid",
        "study_slug",
        "status",
        "current_step",
        "excluded_text",
        "failed_checks",
        "flag_list",
        "pilot",
        "started",
        "last_seen",
    ]
    list_filter = ["study", PilotFilter, "status", StepFilter, "excluded", FlagFilter]
    search_fields = ["prolific_pid", "prolific_session_id"]
    date_hierarchy = "started_at"
    list_select_related = ["study"]
    inlines = [ExclusionInline, FlagInline, StepVisitInline, TextEntryInline, ResponseInline]
    actions = ["mark_returned", "exclude_manually", "revoke_exclusions"]
    exclude = ["token"]

    def get_queryset(self, request):
        flags = Flag.objects.only("participant_id", "kind")
        return (
            super()
            .get_queryset(request)
            .annotate(flag_count=Count("flags", distinct=True))
            .prefetch_related(Prefetch("flags", queryset=flags, to_attr="flag_rows"))
        )

    def get_readonly_fields(self, request, obj=None):
        fields = [f.name for f in Participant._meta.fields if f.name != "token"]
        after = fields.index("attention_failures") + 1  # flags beside the attention evidence
        return [*fields[:after], "flag_list", *fields[after:]]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="Study", ordering="study__slug")
    def study_slug(self, participant: Participant) -> str:
        # The slug, the title on hover: "Title (slug)" made the list scroll sideways at 1280 px.
        return format_html('<span title="{}">{}</span>', participant.study.title, participant.study.slug)

    # Short headings and one-line times: the list fits a laptop's width with both sidebars open.
    @admin.display(description="Failed checks", ordering="attention_failures")
    def failed_checks(self, participant: Participant) -> int:
        return participant.attention_failures

    # Words, not the admin's green tick and red cross: a green tick for "excluded" read as "fine",
    # a red cross for "kept" as a problem (the researcher walk).
    @admin.display(description="Excluded", ordering="excluded")
    def excluded_text(self, participant: Participant) -> str:
        return "excluded" if participant.excluded else "—"

    @admin.display(description="Pilot", ordering="is_pilot")
    def pilot(self, participant: Participant) -> str:
        return "pilot" if participant.is_pilot else ("preview" if participant.is_preview else "—")

    @admin.display(description="Started", ordering="started_at")
    def started(self, participant: Participant) -> str:
        return _short_time(participant.started_at)

    @admin.display(description="Last seen", ordering="last_seen_at")
    def last_seen(self, participant: Participant) -> str:
        return _short_time(participant.last_seen_at)

    @admin.display(description="Flags", ordering="flag_count")
    def flag_list(self, participant: Participant) -> str:
        return flags_text(participant.flag_rows)

    @admin.display(description="Current step")
    def current_step(self, participant: Participant) -> str:
        if participant.status != Participant.Status.ACTIVE:
            return "—"
        step = services.participant_current_step(participant)
        return str(step) if step else "—"

    @admin.action(description="Mark as returned on Prolific (frees their place)")
    def mark_returned(self, request, queryset):
        for participant in queryset.select_related("study"):
            services.participant_mark_returned(participant=participant)
        self.message_user(request, "Marked as returned where they were in progress or timed out.")

    @admin.action(description="Exclude from analysis (by the experimenter, with a reason)")
    def exclude_manually(self, request, queryset):
        return exclude_with_reason(self, request, queryset)

    @admin.action(description="Revoke all their exclusions (count them again)")
    def revoke_exclusions(self, request, queryset):
        exclusions = Exclusion.objects.filter(participant__in=queryset, revoked_at__isnull=True)
        for exclusion in exclusions:
            services.exclusion_revoke(exclusion=exclusion, by=request.user, note="revoked in the admin")
        self.message_user(request, "Revoked their exclusions.", messages.SUCCESS)


@admin.register(Exclusion)
class ExclusionAdmin(admin.ModelAdmin):
    list_display = ["participant", "reason", "detail", "created_at", "revoked_at"]
    list_filter = ["reason", "participant__study", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["participant__prolific_pid"]
    actions = ["revoke", "reinstate"]
    list_select_related = ["participant"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Exclusion._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Revoke (include the participant in analysis again)")
    def revoke(self, request, queryset):
        for exclusion in queryset.filter(revoked_at__isnull=True):
            services.exclusion_revoke(exclusion=exclusion, by=request.user, note="revoked in the admin")
        self.message_user(request, "Revoked.")

    @admin.action(description="Reinstate (exclude again for the same reason)")
    def reinstate(self, request, queryset):
        for exclusion in queryset.filter(revoked_at__isnull=False).select_related("participant"):
            services.exclusion_add(
                participant=exclusion.participant,
                reason=exclusion.reason,
                detail=exclusion.detail,
                by=request.user,
            )
        self.message_user(request, "Reinstated.")


@admin.display(description="Participants")
def study_participant_counts(study) -> str:
    """The study list's column of real participants by status, and the pilots apart
    (registered in `ready()`)."""
    rows = Participant.objects.filter(study=study, is_preview=False).values_list("status", "is_pilot")
    counts = [status for status, is_pilot in rows if not is_pilot]
    pilots = len(rows) - len(counts)
    done = sum(1 for s in counts if s == Participant.Status.COMPLETED)
    active = sum(1 for s in counts if s == Participant.Status.ACTIVE)
    text = f"{done} completed, {active} in progress, {len(counts)} in all"
    return f"{text}; {pilots} pilot{'s' if pilots != 1 else ''}" if pilots else text
