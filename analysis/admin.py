"""The analyst's pages in the admin: a study's live overview and its CSV exports (linked
from the study), and an instance set's win matrix and ranking (linked from the set). The
links and URLs are registered in `AnalysisConfig.ready()`."""

from __future__ import annotations

from django.contrib import admin
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from analysis.exports import TABLES, codebook_lines, csv_lines
from analysis.metrics.ranking import bradley_terry, win_matrix
from analysis.overview import study_overview
from common.downloads import streamed_download
from debates.models import InstanceSet
from debates.pairwise.services import valid_comparisons, valid_per_instance
from studies.models import Study


def study_links(study: Study) -> list[tuple[str, str]]:
    return [
        ("Overview", reverse("admin:studies_study_overview", args=[study.pk])),
        ("Export", reverse("admin:studies_study_exports", args=[study.pk])),
    ]


def study_urls(site) -> list:
    return [
        path("<int:study_id>/overview/", site.admin_view(overview_view), name="studies_study_overview"),
        path("<int:study_id>/export/", site.admin_view(exports_view), name="studies_study_exports"),
        path(
            "<int:study_id>/export/<str:table>.csv",
            site.admin_view(export_csv_view),
            name="studies_study_export_csv",
        ),
        path("export/codebook.csv", site.admin_view(codebook_view), name="studies_study_codebook"),
    ]


def _study_for(request, study_id: int) -> Study:
    if not request.user.has_perm("studies.view_study"):
        raise Http404
    return get_object_or_404(Study, pk=study_id)


def overview_view(request, study_id: int):
    study = _study_for(request, study_id)
    context = {
        **admin.site.each_context(request),
        "title": f"Overview: {study.title}",
        "study": study,
        "opts": Study._meta,
        "overview": study_overview(study),
        "links": study_links(study),
    }
    template = (
        "admin/analysis/overview_body.html"
        if request.headers.get("HX-Request")
        else "admin/analysis/overview.html"
    )
    return TemplateResponse(request, template, context)


def exports_view(request, study_id: int):
    study = _study_for(request, study_id)
    context = {
        **admin.site.each_context(request),
        "title": f"Export: {study.title}",
        "study": study,
        "opts": Study._meta,
        "tables": [
            {
                "name": t.name,
                "description": t.description,
                "url": reverse("admin:studies_study_export_csv", args=[study.pk, t.name]),
                "columns": t.columns,
            }
            for t in TABLES.values()
        ],
        "codebook_url": reverse("admin:studies_study_codebook"),
    }
    return TemplateResponse(request, "admin/analysis/exports.html", context)


def export_csv_view(request, study_id: int, table: str):
    study = _study_for(request, study_id)
    if table not in TABLES:
        raise Http404("No such table")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    return streamed_download(csv_lines(TABLES[table], study), f"{study.slug}-{table}-{stamp}.csv")


def codebook_view(request):
    if not request.user.has_perm("studies.view_study"):
        raise Http404
    return streamed_download(codebook_lines(), "rostrum-codebook.csv")


# --- Instance sets (design D) ------------------------------------------------------------


def instance_set_links(pool: InstanceSet) -> list[tuple[str, str]]:
    return [("Ranking", reverse("admin:debates_instanceset_ranking", args=[pool.pk]))]


def instance_set_urls(site) -> list:
    return [path("<int:set_id>/ranking/", site.admin_view(ranking_view), name="debates_instanceset_ranking")]


def valid_outcomes(pool: InstanceSet) -> list[tuple[str, str, str]]:
    """(interlocutor 1, interlocutor 2, winner) of every answer that counts."""
    rows = valid_comparisons(pool).select_related("instance")
    return [(c.instance.interlocutor_1, c.instance.interlocutor_2, c.winner) for c in rows]


def ranking_view(request, set_id: int):
    if not request.user.has_perm("debates.view_instanceset") and not request.user.has_perm(
        "debates.change_instanceset"
    ):
        raise Http404
    pool = get_object_or_404(InstanceSet, pk=set_id)
    outcomes = valid_outcomes(pool)
    instances = list(pool.instances.all())
    labels, wins = win_matrix(
        outcomes, sorted({i.interlocutor_1 for i in instances} | {i.interlocutor_2 for i in instances})
    )
    ranking = bradley_terry(labels, wins)
    valid = valid_per_instance(pool)
    context = {
        **admin.site.each_context(request),
        "opts": InstanceSet._meta,
        "title": f"Ranking: {pool.title}",
        "pool": pool,
        "comparisons": len(outcomes),
        "complete": sum(1 for n in valid.values() if n >= pool.annotations_per_instance),
        "instances": len(instances),
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
    return TemplateResponse(request, "admin/analysis/ranking.html", context)
