"""The study overview page and the CSV exports, reached from the study admin."""

from __future__ import annotations

from itertools import islice

from asgiref.sync import sync_to_async
from django.contrib import admin
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from analysis.exports import TABLES, codebook_lines, csv_lines
from analysis.overview import study_overview
from studies import admin as studies_admin
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


studies_admin.study_links.append(study_links)
studies_admin.study_urls.append(study_urls)


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


async def _aiter_lines(lines, batch: int = 500):
    """Serve a synchronous line generator (it reads the database) without buffering it
    all: each batch is produced in the request's sync thread."""
    take = sync_to_async(lambda: "".join(islice(lines, batch)), thread_sensitive=True)
    while True:
        chunk = await take()
        if not chunk:
            return
        yield chunk


def _csv_response(lines, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_aiter_lines(lines), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


def export_csv_view(request, study_id: int, table: str):
    study = _study_for(request, study_id)
    if table not in TABLES:
        raise Http404("No such table")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    return _csv_response(csv_lines(TABLES[table], study), f"{study.slug}-{table}-{stamp}.csv")


def codebook_view(request):
    if not request.user.has_perm("studies.view_study"):
        raise Http404
    return _csv_response(codebook_lines(), "rostrum-codebook.csv")
