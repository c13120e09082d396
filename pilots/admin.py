"""The study admin's "Pilot this study" (linked from the study's page and the study list, in
`PilotsConfig.ready()`): a page saying what a pilot does, whose button creates a draft
"pilot" job of the study, prefilled, and opens the job's page to check it and start it.

The server to walk is the one serving this admin (the address the experimenter reached it
by): the natural target, and the job's page lets them change it before starting.

"Report on these pilots" (the job page's link, `PilotKind.links`): the report on the data of
the job's pilots, its progress while it computes (as the study's report page shows it), and
the button that asks for it. It is a pilot report (`analysis.reports`, `pilots=`): never the
study's report."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from analysis.access import studies_visible_to
from analysis.models import Report
from analysis.reports import pilot_reports, report_request
from debates.models import Job
from participants.services import PILOT_STUDY_STATUSES
from pilots import jobs
from studies.models import Study


def study_links(study: Study) -> list[tuple[str, str]]:
    if study.status not in PILOT_STUDY_STATUSES:
        return []
    return [("Pilot this study", reverse("admin:studies_study_pilot", args=[study.pk]))]


def study_urls(site) -> list:
    return [
        path("<int:study_id>/pilot/", site.admin_view(pilot_view), name="studies_study_pilot"),
        path(
            "<int:study_id>/pilot/<int:job_id>/report/",
            site.admin_view(pilot_report_view),
            name="studies_study_pilot_report",
        ),
    ]


def pilot_view(request, study_id: int):
    study = get_object_or_404(Study, pk=study_id)
    if not (request.user.has_perm("debates.add_job") and request.user.has_perm("studies.view_study")):
        raise PermissionDenied
    base_url = request.build_absolute_uri("/").rstrip("/")
    if request.method == "POST":
        if study.status not in PILOT_STUDY_STATUSES:
            messages.error(request, "Pilots run on draft or live studies.")
            return redirect("admin:studies_study_change", study.pk)
        try:
            job = jobs.pilot_job_create(study=study, base_url=base_url)
        except ValidationError as error:
            messages.error(request, f"The pilot job could not be made: {' '.join(error.messages)}")
            return redirect("admin:studies_study_change", study.pk)
        messages.success(
            request, "A pilot job, not started yet: check its settings below, save any change, then Start."
        )
        return redirect("admin:debates_job_change", job.pk)
    context = {
        **admin.site.each_context(request),
        "title": f"Pilot: {study.title}",
        "opts": Study._meta,
        "study": study,
        "pilotable": study.status in PILOT_STUDY_STATUSES,
        "base_url": base_url,
        "participants": jobs.DEFAULT_PARTICIPANTS,
    }
    return TemplateResponse(request, "admin/pilots/pilot_study.html", context)


def pilot_report_view(request, study_id: int, job_id: int):
    """The report on a pilot job's pilots: GET shows it (its progress while it computes), POST
    asks for it (with 'Can add report') and comes back here."""
    study, job = _pilot_job_for(request, study_id, job_id)
    pilots = jobs.job_pilots(job)
    if request.method == "POST":
        if not request.user.has_perm("analysis.add_report"):
            raise PermissionDenied
        try:
            report_request(study=study, trigger=Report.Trigger.ADMIN, user=request.user, pilots=pilots)
        except ValueError as error:
            messages.error(request, str(error))
        return redirect("admin:studies_study_pilot_report", study.pk, job.pk)
    context = _report_context(request, study, job, pilots)
    if not request.headers.get("HX-Request"):
        return TemplateResponse(request, "admin/pilots/pilot_report.html", context)
    if not context["busy"]:  # finished: show the report itself, not only its status
        return HttpResponse(status=204, headers={"HX-Refresh": "true"})
    return TemplateResponse(request, "admin/pilots/pilot_report_status.html", context)


def _pilot_job_for(request, study_id: int, job_id: int) -> tuple[Study, Job]:
    """The study and its pilot job, for who may see LLM jobs (403 otherwise) and the study's
    data (404 otherwise, as for a study that does not exist)."""
    if not (request.user.has_perm("debates.view_job") or request.user.has_perm("debates.change_job")):
        raise PermissionDenied
    study = get_object_or_404(studies_visible_to(request.user), pk=study_id)
    return study, get_object_or_404(Job, pk=job_id, kind=jobs.KIND, config__study=study.slug)


def _report_context(request, study: Study, job: Job, pilots: list[int]) -> dict:
    reports = pilot_reports(study, pilots=pilots)
    report = reports.first()
    return {
        **admin.site.each_context(request),
        "title": f"Report on the pilots of {job.name}",
        "opts": Job._meta,
        "study": study,
        "job": job,
        "pilots": len(pilots),
        "report": report,
        "shown": reports.filter(status=Report.Status.DONE).first(),
        "busy": report is not None and report.status in (Report.Status.QUEUED, Report.Status.RUNNING),
        "may_request": request.user.has_perm("analysis.add_report") and bool(pilots),
        "history": reports[:10],
    }
