"""The analyst's pages in the admin: a study's live overview and its CSV exports (linked
from the study), and an instance set's win matrix and ranking (linked from the set). The
links and URLs are registered in `AnalysisConfig.ready()`."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.views.decorators.clickjacking import xframe_options_sameorigin

from analysis.access import sees_raw_ids, studies_visible_to
from analysis.exports import TABLES, codebook_lines, csv_lines
from analysis.exports.bundle import bundle_chunks, bundle_name
from analysis.models import Report, ReportFile
from analysis.overview import study_overview
from analysis.reports import latest_done_report, latest_report, report_request, results_json, study_reports
from common.downloads import streamed_download
from debates.models import InstanceSet
from debates.pairwise.services import valid_comparisons, valid_per_instance
from studies.models import Study


def study_links(study: Study) -> list[tuple[str, str]]:
    return [
        ("Overview", reverse("admin:studies_study_overview", args=[study.pk])),
        ("Export", reverse("admin:studies_study_exports", args=[study.pk])),
        ("Report", reverse("admin:studies_study_report", args=[study.pk])),
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
        path("<int:study_id>/export/bundle.zip", site.admin_view(bundle_view), name="studies_study_bundle"),
        path("export/codebook.csv", site.admin_view(codebook_view), name="studies_study_codebook"),
        path("<int:study_id>/report/", site.admin_view(report_view), name="studies_study_report"),
        path(
            "<int:study_id>/report/<int:report_id>/",
            site.admin_view(report_page_view),
            name="studies_study_report_page",
        ),
        path(
            "<int:study_id>/report/<int:report_id>/<path:name>",
            site.admin_view(report_file_view),
            name="studies_study_report_file",
        ),
    ]


def _study_for(request, study_id: int) -> Study:
    """The study, if this user may see its data (404 otherwise, as for a study that does not
    exist)."""
    return get_object_or_404(studies_visible_to(request.user), pk=study_id)


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
    step_kinds = set(study.steps.values_list("kind", flat=True))
    tables = [
        {
            "name": t.name,
            "description": t.description,
            "url": reverse("admin:studies_study_export_csv", args=[study.pk, t.name]),
            "columns": t.columns,
            "ours": t.holds_rows_of(step_kinds),
        }
        for t in TABLES.values()
    ]
    context = {
        **admin.site.each_context(request),
        "title": f"Export: {study.title}",
        "study": study,
        "opts": Study._meta,
        # This study's design's tables first; the others (empty for it) after, folded away:
        # every table was listed alike, headers only for most (the researcher walk).
        "tables": [table for table in tables if table["ours"]],
        "other_tables": [table for table in tables if not table["ours"]],
        "codebook_url": reverse("admin:studies_study_export_csv", args=[study.pk, "codebook"]),
        "bundle_url": reverse("admin:studies_study_bundle", args=[study.pk]),
        "pseudonyms": not sees_raw_ids(request.user),
    }
    return TemplateResponse(request, "admin/analysis/exports.html", context)


def export_csv_view(request, study_id: int, table: str):
    study = _study_for(request, study_id)
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    if table == "codebook":
        return streamed_download(codebook_lines(study), f"{study.slug}-codebook-{stamp}.csv")
    if table not in TABLES:
        raise Http404("No such table")
    lines = csv_lines(TABLES[table], study, pseudonyms=not sees_raw_ids(request.user))
    return streamed_download(lines, f"{study.slug}-{table}-{stamp}.csv")


def bundle_view(request, study_id: int):
    study = _study_for(request, study_id)
    chunks = bundle_chunks(study, pseudonyms=not sees_raw_ids(request.user))
    return streamed_download(chunks, bundle_name(study), "application/zip", batch=1)


def codebook_view(request):
    if not studies_visible_to(request.user).exists():
        raise Http404
    return streamed_download(codebook_lines(), "rostrum-codebook.csv")


# --- Reports ------------------------------------------------------------------------------


def report_view(request, study_id: int):
    """The study's latest report: when it was computed, its progress while it runs, the page
    itself, and a button that recomputes it in the background."""
    study = _study_for(request, study_id)
    if request.method == "POST":
        if not request.user.has_perm("analysis.add_report"):
            raise PermissionDenied
        try:
            report_request(study=study, trigger=Report.Trigger.ADMIN, user=request.user)
        except ValueError as error:
            messages.error(request, str(error))
        return redirect("admin:studies_study_report", study.pk)
    report = latest_report(study)
    done = latest_done_report(study)
    context = {
        **admin.site.each_context(request),
        "title": f"Report: {study.title}",
        "study": study,
        "opts": Study._meta,
        "report": report,
        "shown": done,
        "busy": report is not None and report.status in (Report.Status.QUEUED, Report.Status.RUNNING),
        "may_recompute": request.user.has_perm("analysis.add_report"),
        "history": study_reports(study).order_by("-created_at")[:10],
    }
    if request.headers.get("HX-Request"):
        if not context["busy"]:  # finished: show the new report, not only its status
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"
            return response
        return TemplateResponse(request, "admin/analysis/report_status.html", context)
    return TemplateResponse(request, "admin/analysis/report.html", context)


def _report_for(request, study_id: int, report_id: int) -> Report:
    study = _study_for(request, study_id)
    return get_object_or_404(Report, pk=report_id, study=study)


@xframe_options_sameorigin
def report_page_view(request, study_id: int, report_id: int):
    """The report's own page (shown in the admin page's frame, or opened alone)."""
    report = _report_for(request, study_id, report_id)
    if report.status != Report.Status.DONE:
        raise Http404("This report has not been computed.")
    response = HttpResponse(report.html, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"
    return response


def report_file_view(request, study_id: int, report_id: int, name: str):
    report = _report_for(request, study_id, report_id)
    if name == "results.json" and report.status == Report.Status.DONE:
        response = HttpResponse(results_json(report.results), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{report.study.slug}-results.json"'
        return response
    found = get_object_or_404(ReportFile, report=report, name=name)
    response = HttpResponse(bytes(found.content), content_type=found.content_type)
    if not found.content_type.startswith("image/"):
        response["Content-Disposition"] = (
            f'attachment; filename="{report.study.slug}-{name.rsplit("/", 1)[-1]}"'
        )
    return response


# --- Instance sets (design D) ------------------------------------------------------------


def instance_set_links(pool: InstanceSet) -> list[tuple[str, str]]:
    return [("Ranking", reverse("admin:debates_instanceset_ranking", args=[pool.pk]))]


def instance_set_urls(site) -> list:
    return [path("<int:set_id>/ranking/", site.admin_view(ranking_view), name="debates_instanceset_ranking")]


def valid_outcomes(pool: InstanceSet) -> list[tuple[str, str, str]]:
    """(interlocutor 1, interlocutor 2, winner) of every answer that counts: not those of an
    interlocutor against itself (a set imported before such pairs were refused), which the
    report leaves out too."""
    rows = valid_comparisons(pool).select_related("instance")
    return [
        (c.instance.interlocutor_1, c.instance.interlocutor_2, c.winner)
        for c in rows
        if c.instance.interlocutor_1 != c.instance.interlocutor_2
    ]


def ranking_view(request, set_id: int):
    if not request.user.has_perm("debates.view_instanceset") and not request.user.has_perm(
        "debates.change_instanceset"
    ):
        raise Http404
    from analysis.metrics.ranking import bradley_terry, win_matrix  # NumPy and SciPy only when asked

    pool = get_object_or_404(InstanceSet, pk=set_id)
    outcomes = valid_outcomes(pool)
    instances = list(pool.instances.all())
    labels, wins = win_matrix(
        outcomes, sorted({i.interlocutor_1 for i in instances} | {i.interlocutor_2 for i in instances})
    )
    ranking = bradley_terry(labels, wins)
    valid = valid_per_instance(pool)
    # Rows and columns both in rank order, so that the matrix's empty diagonal is its diagonal
    # (columns were alphabetical, rows ranked: the researcher walk read "model-y: 4, 0").
    ordered = [label for label, _strength in ranking.ordered()]
    columns = [labels.index(label) for label in ordered]
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
                "wins": [wins[labels.index(label), j] for j in columns],
            }
            for label, strength in ranking.ordered()
        ],
        "labels": ordered,
    }
    return TemplateResponse(request, "admin/analysis/ranking.html", context)
