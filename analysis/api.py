"""The analysts' API (Django REST framework): read-only, token-authenticated access to the
studies a user may see, their live progress, their export tables, and their reports (with a
request to recompute). Its OpenAPI schema is at /api/v1/schema/."""

from __future__ import annotations

import re
from functools import wraps

from django.http import HttpResponsePermanentRedirect
from django.shortcuts import get_object_or_404
from django.urls import Resolver404, resolve, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import (
    api_view,
    content_negotiation_class,
    permission_classes,
    renderer_classes,
)
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse as api_reverse

from analysis.access import pseudonymise, sees_raw_ids, studies_visible_to
from analysis.configuration import study_configuration
from analysis.exports import TABLES, csv_lines
from analysis.models import Report
from analysis.overview import study_overview
from analysis.reports import latest_done_report, latest_report, report_request, study_design
from common.downloads import streamed_download
from studies.models import Study

PAGE_SIZE = 500
MAX_PAGE_SIZE = 5000


def _study(request: Request, slug: str) -> Study:
    found = get_object_or_404(studies_visible_to(request.user), slug=slug)
    request._request.rostrum_study = found  # for the X-Study-SHA256 header (see carries_hash)
    return found


def carries_hash(view):
    """Every response about a study says which frozen snapshot of it the data belong to."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        found = getattr(request, "rostrum_study", None)
        if found is not None:
            response["X-Study-SHA256"] = found.snapshot_sha256 or "none: the study has not gone live"
        return response

    return wrapper


def _design(study: Study) -> str | None:
    try:
        return study_design(study)
    except ValueError:
        return None


class StudySerializer(serializers.Serializer):
    slug = serializers.CharField()
    study_sha256 = serializers.CharField()
    title = serializers.CharField()
    status = serializers.CharField()
    design = serializers.CharField(allow_null=True)
    url = serializers.URLField()


def _study_summary(request: Request, study: Study) -> dict:
    return {
        "slug": study.slug,
        "title": study.title,
        "status": study.status,
        "study_sha256": study.snapshot_sha256,
        "design": _design(study),
        "url": api_reverse("api:study", args=[study.slug], request=request),
    }


@extend_schema(
    responses=StudySerializer(many=True), summary="The studies you may see", operation_id="studies_list"
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def studies(request: Request) -> Response:
    visible = studies_visible_to(request.user).order_by("-created_at")
    return Response([_study_summary(request, s) for s in visible])


@carries_hash
@extend_schema(
    responses=OpenApiTypes.OBJECT, summary="A study: its configuration and links", operation_id="study_detail"
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def study(request: Request, slug: str) -> Response:
    found = _study(request, slug)
    links = {
        name: api_reverse(f"api:{name}", args=[slug], request=request)
        for name in ("progress", "tables", "report")
    }
    return Response(
        {**_study_summary(request, found), "links": links, "configuration": study_configuration(found)}
    )


@carries_hash
@extend_schema(
    responses=OpenApiTypes.OBJECT,
    summary="Live progress: counts per step, fill, exclusions",
    operation_id="study_progress",
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def progress(request: Request, slug: str) -> Response:
    found = _study(request, slug)
    overview = study_overview(found)
    overview["study_sha256"] = found.snapshot_sha256
    overview["now"] = overview["now"].isoformat()
    overview["pairs"] = [{**row, "pool": row["pool"].slug} for row in overview["pairs"]]
    return Response(overview)


@carries_hash
@extend_schema(
    responses=OpenApiTypes.OBJECT,
    summary="The study's export tables and their columns",
    operation_id="study_tables",
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def tables(request: Request, slug: str) -> Response:
    _study(request, slug)
    return Response(
        [
            {
                "name": name,
                "description": table.description,
                "columns": [{"name": c.name, "description": c.description} for c in table.columns],
                "json": api_reverse("api:table", args=[slug, name], request=request),
                "csv": api_reverse("api:table_csv", args=[slug, name], request=request),
            }
            for name, table in TABLES.items()
        ]
    )


@carries_hash
@extend_schema(
    parameters=[
        OpenApiParameter("page", int, description="1, 2, … (default 1)"),
        OpenApiParameter(
            "page_size", int, description=f"rows per page (default {PAGE_SIZE}, at most {MAX_PAGE_SIZE})"
        ),
    ],
    responses=OpenApiTypes.OBJECT,
    summary="One export table as JSON, a page of rows at a time",
    operation_id="study_table_json",
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def table(request: Request, slug: str, name: str) -> Response:
    found, chosen = _study(request, slug), _table(name)
    page, size = _positive(request, "page", 1), min(_positive(request, "page_size", PAGE_SIZE), MAX_PAGE_SIZE)
    raw = sees_raw_ids(request.user)
    # One row past the page says whether there is a next one.
    rows = chosen.rows_for(found, slice((page - 1) * size, page * size + 1))
    shown = []
    for row in rows:
        if not raw:
            pseudonymise(row, found)
        shown.append({c.name: _json(c.get(row)) for c in chosen.columns})
    more = len(shown) > size
    url = api_reverse("api:table", args=[slug, name], request=request)
    return Response(
        {
            "table": name,
            "study_sha256": found.snapshot_sha256,
            "page": page,
            "page_size": size,
            "next": f"{url}?page={page + 1}&page_size={size}" if more else None,
            "previous": f"{url}?page={page - 1}&page_size={size}" if page > 1 else None,
            "rows": shown[:size],
        }
    )


class CSVWhateverAccepted(BaseContentNegotiation):
    """The CSV view answers CSV whatever the Accept header asks for, and its errors as JSON:
    DRF's negotiation knows only its JSON and HTML renderers, so `Accept: text/csv` was a 406."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


@carries_hash
@extend_schema(
    responses={(200, "text/csv"): OpenApiTypes.STR},
    summary="One export table as CSV, streamed",
    operation_id="study_table_csv",
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
@renderer_classes([JSONRenderer])
@content_negotiation_class(CSVWhateverAccepted)
def table_csv(request: Request, slug: str, name: str):
    found, chosen = _study(request, slug), _table(name)
    lines = csv_lines(chosen, found, pseudonyms=not sees_raw_ids(request.user))
    if request.method == "HEAD":
        lines = iter(())  # the same headers, without reading the whole table for no body
    return streamed_download(lines, f"{found.slug}-{name}.csv")


NAME_SHOWN = 80  # characters of an unknown table's name repeated in the 404


def _table(name: str):
    if name not in TABLES:
        shown = name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "…"
        raise NotFound(f"No table {shown!r}; the tables are: {', '.join(TABLES)}.")
    return TABLES[name]


MAX_PAGE = 10**9  # far past any table's last page


def _positive(request: Request, name: str, default: int) -> int:
    """A whole number from 1 to MAX_PAGE, in ASCII digits (`str.isdigit` also takes "²", which
    `int` refuses; a page past a platform integer overflowed the row slice: both were 500s)."""
    raw = request.query_params.get(name, "")
    if not raw:
        return default
    if not re.fullmatch(r"[0-9]{1,10}", raw) or not 1 <= int(raw) <= MAX_PAGE:
        raise serializers.ValidationError({name: f"must be a whole number from 1 to {MAX_PAGE:,}"})
    return int(raw)


def _json(value):
    return None if value == "" else value


def _report_status(request: Request, report: Report) -> dict:
    study_pk, pk = report.study_id, report.pk
    done = report.status == Report.Status.DONE
    return {
        "id": pk,
        "study": report.study.slug,
        "design": report.design,
        "status": report.status,
        "progress": report.progress,
        "stage": report.stage,
        "trigger": report.trigger,
        "seed": report.seed,
        "created_at": report.created_at.isoformat(),
        "finished_at": report.finished_at.isoformat() if report.finished_at else None,
        "error": report.error,
        "url": api_reverse("api:report_status", args=[pk], request=request),
        "html": request.build_absolute_uri(reverse("admin:studies_study_report_page", args=[study_pk, pk]))
        if done
        else None,
    }


@carries_hash
@extend_schema(
    methods=["GET"],
    responses=OpenApiTypes.OBJECT,
    summary="The latest report's results.json, with its status",
    operation_id="study_report",
)
@extend_schema(
    methods=["POST"],
    request=None,
    responses=OpenApiTypes.OBJECT,
    summary="Recompute the report",
    operation_id="study_report_request",
)
@api_view(["GET", "HEAD", "POST"])
@permission_classes([IsAuthenticated])
def report(request: Request, slug: str) -> Response:
    found = _study(request, slug)
    if request.method == "POST":
        if not request.user.has_perm("analysis.add_report"):
            raise PermissionDenied("Recomputing a report needs the permission 'Can add report'.")
        try:
            queued = report_request(study=found, trigger=Report.Trigger.API, user=request.user)
        except ValueError as error:
            raise NotFound(str(error)) from None
        return Response(_report_status(request, queued), status=status.HTTP_202_ACCEPTED)
    done = latest_done_report(found)
    newest = latest_report(found)
    if done is None:
        detail = "No report has been computed for this study yet; POST here to compute one."
        raise NotFound(detail)
    return Response(
        {
            "report": _report_status(request, done),
            "newest": _report_status(request, newest) if newest and newest.pk != done.pk else None,
            "results": done.results,
        }
    )


@extend_schema(
    responses=OpenApiTypes.OBJECT, summary="A report's status and progress", operation_id="report_status"
)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def report_status(request: Request, report_id: int) -> Response:
    # One query for "there is none" and "not yours": the two 404s had different words, so the
    # reports of other experimenters' studies could be counted.
    found = get_object_or_404(
        Report.objects.select_related("study").filter(study__in=studies_visible_to(request.user)),
        pk=report_id,
    )
    return Response(_report_status(request, found))


@extend_schema(exclude=True)
@api_view(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@permission_classes([IsAuthenticated])
def nowhere(request: Request):
    """Any address under /api/v1/ the API does not have: a JSON 404 (Django's HTML page was no
    answer for a client of the API), after the same authentication as the rest. An address
    that is one of the API's without its last slash is redirected there, as Django's
    APPEND_SLASH did before this route matched every address."""
    path = request.path_info
    if not path.endswith("/"):
        try:
            named = resolve(path + "/").url_name is not None  # this route has no name
        except Resolver404:
            named = False
        if named:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    raise NotFound("No such address in the API; its root lists what there is.")


@extend_schema(exclude=True)
@api_view(["GET", "HEAD"])
@permission_classes([IsAuthenticated])
def root(request: Request) -> Response:
    return Response(
        {
            "studies": api_reverse("api:studies", request=request),
            "schema": api_reverse("api:schema", request=request),
        }
    )
