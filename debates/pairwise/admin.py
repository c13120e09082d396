"""Design D's admin: instance sets (built from dialogues or live debates, imported,
exported) and the comparisons annotators made."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.http import Http404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from common.downloads import streamed_download
from debates.admin_base import ImportForm, InUseAdmin, ReadOnlyAdmin, import_page
from debates.formats import format_urls
from debates.models import Comparison, Dialogue, InstanceSet, LiveSession, PersuasionDialogue
from debates.pairwise.imports import set_csv_lines, set_import, set_json_lines
from debates.pairwise.sampler import (
    instance_set_build,
    instance_set_from_dialogues,
    live_excerpts,
    persuasion_excerpts,
)
from debates.pairwise.services import instance_set_new_version, instance_set_studies

# Other apps add views of a set (e.g. its ranking, in `analysis`): callables (set) ->
# [(label, url)] for the links on its row, and callables (admin_site) -> [path] for the views.
instance_set_links: list[Callable[[InstanceSet], list[tuple[str, str]]]] = []
instance_set_urls: list[Callable] = []


class InstanceSetImportForm(ImportForm):
    file = forms.FileField(
        help_text="A rostrum.instances/1 JSON file, or a CSV file of instances (the format is linked above)."
    )
    into = forms.ModelChoiceField(
        queryset=InstanceSet.objects.all(),
        required=False,
        help_text="CSV files only: the set the instances go into (a JSON file names its own set). A CSV file "
        "holds instances only: create the empty set first (Instance sets → Add), with its title, slug "
        "and annotations per instance, then choose it here.",
    )


@admin.register(InstanceSet)
class InstanceSetAdmin(InUseAdmin):
    list_display = ["slug", "title", "instance_count", "per_pair", "annotations_per_instance", "links"]
    readonly_fields = ["shortfall_table", "created_at"]
    exclude = ["shortfalls"]
    actions = ["build_from_dialogues", "build_from_live_debates", "build_from_persuasion"]
    change_list_template = "admin/debates/instanceset/change_list.html"
    studies_using = staticmethod(instance_set_studies)
    new_version = staticmethod(lambda pool: instance_set_new_version(pool=pool))

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("import/", wrap(self.import_view), name="debates_instanceset_import"),
            *format_urls(self.admin_site, "instances"),
            path("<int:set_id>/export.<str:fmt>", wrap(self.export_view), name="debates_instanceset_export"),
            *[url for factory in instance_set_urls for url in factory(self.admin_site)],
            *super().get_urls(),
        ]

    @admin.display(description="Pairs with too few candidates")
    def shortfall_table(self, pool: InstanceSet) -> str:
        """The sampler's shortfalls (pair of interlocutors × stance: wanted, found), as a table."""
        if not pool.shortfalls:
            return "None: every pair of interlocutors got its instances."
        rows = (
            (" × ".join(s.get("pair", [])), s.get("stance", ""), s.get("wanted", ""), s.get("found", ""))
            for s in pool.shortfalls
        )
        return format_html(
            "<table><thead><tr><th>Interlocutors</th><th>Stance</th><th>Wanted</th><th>Found</th></tr>"
            "</thead><tbody>{}</tbody></table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="Instances")
    def instance_count(self, pool: InstanceSet) -> int:
        return pool.instances.count()

    @admin.display(description="")
    def links(self, pool: InstanceSet) -> str:
        items = [label_url for factory in instance_set_links for label_url in factory(pool)]
        items += [
            ("JSON", reverse("admin:debates_instanceset_export", args=[pool.pk, "json"])),
            ("CSV", reverse("admin:debates_instanceset_export", args=[pool.pk, "csv"])),
        ]
        return format_html_join(" · ", '<a href="{}">{}</a>', ((url, label) for label, url in items))

    @admin.action(description="Build the instances from all pre-generated dialogues (seeded)")
    def build_from_dialogues(self, request, queryset):
        dialogues = list(Dialogue.objects.select_related("case"))
        for pool in queryset:
            if instance_set_studies(pool).exists():
                self.message_user(
                    request,
                    f"{pool.slug}: a study that has gone live uses it; make a new version.",
                    messages.ERROR,
                )
                continue
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

    @admin.action(
        description="Build the instances from finished model-versus-model persuasion dialogues (seeded)"
    )
    def build_from_persuasion(self, request, queryset):
        dialogues = list(
            PersuasionDialogue.objects.filter(
                pairing="ai_ai", status__in=("finished", "abandoned")
            ).select_related("topic", "pro_agent", "con_agent")
        )
        for pool in queryset:
            if instance_set_studies(pool).exists():
                self.message_user(
                    request,
                    f"{pool.slug}: a study that has gone live uses it; make a new version.",
                    messages.ERROR,
                )
                continue
            try:
                sample = instance_set_build(
                    instance_set=pool, excerpts=persuasion_excerpts(dialogues, pool.excerpt_turns)
                )
            except ValueError as error:
                self.message_user(request, f"{pool.slug}: {error}", messages.ERROR)
                continue
            self.message_user(
                request, f"{pool.slug}: {len(sample.pairs)} instances from {len(dialogues)} dialogues."
            )

    @admin.action(description="Build the instances from finished live debates (seeded)")
    def build_from_live_debates(self, request, queryset):
        sessions = list(
            LiveSession.objects.filter(protocol="debate", chat_ended_at__isnull=False).select_related(
                "claim", "debater_a", "debater_b"
            )
        )
        for pool in queryset:
            if instance_set_studies(pool).exists():
                self.message_user(
                    request,
                    f"{pool.slug}: a study that has gone live uses it; make a new version.",
                    messages.ERROR,
                )
                continue
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
            fmt="instances",
        )

    def export_view(self, request, set_id: int, fmt: str):
        pool = InstanceSet.objects.filter(pk=set_id).first()
        if pool is None or fmt not in ("json", "csv") or not self.has_view_permission(request):
            raise Http404
        if fmt == "csv":
            return streamed_download(set_csv_lines(pool), f"{pool.slug}.csv")
        return streamed_download(set_json_lines(pool), f"{pool.slug}.json", "application/json")


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
