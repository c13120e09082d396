"""Design C's admin: topics, agent configurations (versioned, locked while a running study
uses them), model-versus-model batches with their progress, budget and start / pause
actions, and the dialogues with every turn and how its sentences were read."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html_join

from debates.admin_base import InUseAdmin, ReadOnlyAdmin
from debates.models import AgentConfig, PersuasionBatch, PersuasionDialogue, PersuasionTurn, Topic
from debates.persuasion import batches, content
from debates.persuasion.services import PersuasionError
from debates.persuasion.tasks import turns_start


@admin.register(Topic)
class TopicAdmin(InUseAdmin):
    list_display = ["slug", "text", "pro_claim", "con_claim"]
    search_fields = ["slug", "text"]
    studies_using = staticmethod(content.topic_studies)
    new_version = staticmethod(lambda topic: content.topic_new_version(topic=topic))


@admin.register(AgentConfig)
class AgentConfigAdmin(InUseAdmin):
    list_display = ["name", "model", "temperature", "max_tokens", "seed", "template_version"]
    readonly_fields = ["template_version"]
    search_fields = ["name", "model"]
    studies_using = staticmethod(content.agent_studies)
    new_version = staticmethod(lambda agent: content.agent_new_version(agent=agent))

    def save_model(self, request, obj, form, change):
        if change and {"prompt_template", "persona"} & set(form.changed_data):
            obj.template_version += 1  # every recorded call names the template version it used
        super().save_model(request, obj, form, change)


class PersuasionBatchForm(forms.ModelForm):
    class Meta:
        model = PersuasionBatch
        fields = "__all__"

    def clean(self):
        data = super().clean()
        agents, topics = data.get("agents"), data.get("topics")
        if agents is not None and topics is not None:  # editable: not planned yet
            if not topics:
                self.add_error("topics", "Choose at least one topic.")
            if len(agents) < (1 if data.get("self_play") else 2):
                self.add_error("agents", "Choose at least two agent configurations (or one, with self-play).")
        return data


@admin.register(PersuasionBatch)
class PersuasionBatchAdmin(admin.ModelAdmin):
    form = PersuasionBatchForm
    list_display = ["name", "status", "progress", "spent", "budget_usd", "created_at"]
    list_filter = ["status"]
    filter_horizontal = ["topics", "agents"]
    readonly_fields = ["status", "note", "started_at", "finished_at", "progress", "spent", "wins"]
    actions = ["start", "pause"]

    def get_readonly_fields(self, request, obj=None):
        fixed = list(self.readonly_fields)
        if obj is not None and obj.dialogues.exists():  # planned: its design is fixed
            fixed += ["topics", "agents", "repeats", "self_play", "max_turns", "classifier_model"]
        return fixed

    @admin.display(description="Dialogues done / running / to start")
    def progress(self, batch: PersuasionBatch) -> str:
        p = batches.batch_progress(batch)
        if not p["total"]:
            return (
                f"not planned ({len(batches.batch_pairings(batch))} dialogues when started)"
                if batch.pk
                else "—"
            )
        return f"{p['done']} of {p['total']} done · {p['running']} running · {p['waiting']} to start"

    @admin.display(description="Spent (USD)")
    def spent(self, batch: PersuasionBatch) -> str:
        return f"{batches.batch_spent(batch.pk):.4f}"

    @admin.display(description="Outcomes per agent")
    def wins(self, batch: PersuasionBatch):
        rows = batches.win_table(batch)
        if not rows:
            return "—"
        return format_html_join(
            "",
            "<div>{}: {} won, {} lost, {} drawn, {} abandoned of {}</div>",
            ((r["agent"], r["won"], r["lost"], r["drawn"], r["abandoned"], r["dialogues"]) for r in rows),
        )

    @admin.action(description="Start or resume the selected batches")
    def start(self, request, queryset):
        for batch in queryset:
            try:
                turns_start(batches.batch_start(batch_id=batch.pk))
            except PersuasionError as error:
                self.message_user(request, f"{batch}: {error}", messages.ERROR)
                continue
            self.message_user(request, f"{batch}: running.", messages.SUCCESS)

    @admin.action(description="Pause the selected batches (turns being written finish)")
    def pause(self, request, queryset):
        for batch in queryset:
            batches.batch_pause(batch_id=batch.pk)
        self.message_user(request, "Paused.", messages.SUCCESS)


class PersuasionTurnInline(admin.TabularInline):
    model = PersuasionTurn
    extra = 0
    can_delete = False
    fields = [
        "seq",
        "speaker",
        "author",
        "status",
        "text",
        "moves",
        "stores_after",
        "fallback",
        "attempts",
        "error",
    ]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Moves")
    def moves(self, turn: PersuasionTurn):
        return format_html_join(
            "",
            "<div><b>{}</b> {}{}</div>",
            (
                (
                    s.get("kind") or "—",
                    s.get("text", ""),
                    "" if s.get("legal") else f" (did not count: {s.get('reason')})",
                )
                for s in turn.sentences
            ),
        )


@admin.register(PersuasionDialogue)
class PersuasionDialogueAdmin(ReadOnlyAdmin):
    list_display = [
        "pk",
        "topic",
        "pairing",
        "pro",
        "con",
        "status",
        "winner",
        "end_reason",
        "turns_played",
        "created_at",
    ]
    list_filter = ["status", "pairing", "end_reason", "study", "batch"]
    search_fields = ["pro_participant__prolific_pid", "con_participant__prolific_pid", "topic__slug"]
    list_select_related = ["topic", "pro_agent", "con_agent", "pro_participant", "con_participant"]
    inlines = [PersuasionTurnInline]
    exclude = ["state"]

    @admin.display(description="For")
    def pro(self, d: PersuasionDialogue) -> str:
        return str(d.pro_agent or d.pro_participant or "—")

    @admin.display(description="Against")
    def con(self, d: PersuasionDialogue) -> str:
        return str(d.con_agent or d.con_participant or "—")
