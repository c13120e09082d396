"""The report on a pilot job's pilots: asked from the job's page ("Report on these pilots"),
computed in the background on the data of the job's simulated participants only, shown with
its progress as the study's report is, and kept apart from the study's own reports (its page,
the API, the nightly reports, pruning). The end-to-end tests run a pilot job on uvicorn as
tests/pilots/test_job.py does; the browser's report is computed by a real Celery worker."""

from __future__ import annotations

import csv
import io
import threading
import zipfile
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from analysis.access import pseudonym
from analysis.models import Report
from analysis.reports import latest_report, report_request, report_run, reports_nightly, reports_prune
from debates.demo import loader
from debates.jobs import kinds, tasks
from debates.jobs import services as job_services
from debates.models import Job, JobItem
from participants.models import Participant
from participants.services import pilot_token
from pilots import jobs, services
from pilots.walker import Outcome
from studies.models import Study
from tests.support.browser import new_context, signed_in
from tests.support.cast import Walker, entry_url, experimenter_user, logged_in, user_with_password
from tests.support.servers import asgi_server, celery_worker


@pytest.fixture(scope="module")
def server(django_db_setup) -> Iterator[str]:
    with asgi_server(DJANGO_ALLOW_ASYNC_UNSAFE="", STUDY_CACHE_SECONDS="0", LLM_BACKEND="offline") as base:
        yield base


def computed(report: Report) -> Report:
    """The report once computed: by the embedded default's thread (waited for), or here where a
    Celery worker would compute it (on Redis, no worker runs in this test)."""
    for thread in threading.enumerate():
        if thread.name == "rostrum-report":
            thread.join()
    report_run(report_id=report.pk)  # nothing to do when the thread took it
    report.refresh_from_db()
    return report


def data_rows(report: Report, table: str) -> list[dict]:
    """A table of the data the report used (its data.zip)."""
    content = bytes(report.files.get(name="data.zip").content)
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return list(csv.DictReader(io.StringIO(archive.read(f"{table}.csv").decode())))


def report_page(study: Study, job: Job) -> str:
    return reverse("admin:studies_study_pilot_report", args=[study.pk, job.pk])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_pilot_jobs_report_reads_its_pilots_only_and_is_never_the_studys_report(server):
    study = loader.mystery_study()
    real = [Walker(study) for _ in range(2)]
    for walker in real:
        walker.enter()
        walker.walk()
    job = jobs.pilot_job_create(study=study, base_url=server, participants=3, attentive=1.0, concurrency=3)
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    experimenter = logged_in(experimenter_user())
    url = report_page(study, job)
    job_page = experimenter.get(reverse("admin:debates_job_change", args=[job.pk])).content.decode()
    assert f'href="{url}"' in job_page and "Report on these pilots" in job_page
    assert "No report on these pilots has been computed yet" in experimenter.get(url).content.decode()

    response = experimenter.post(url)
    assert response.status_code == 302 and response["Location"] == url
    report = computed(Report.objects.get())
    pilots = Participant.objects.filter(study=study, is_pilot=True)
    assert report.status == Report.Status.DONE, report.error
    assert report.pilots == sorted(pilots.values_list("pk", flat=True)) and pilots.count() == 3
    assert report.results["n"]["participants"] == 3 == job.items.count()
    used = sorted(row["prolific_pid"] for row in data_rows(report, "participants"))
    assert used == sorted(pseudonym(study, jobs.participant_pid(item)) for item in job.items.all())
    assert not {pseudonym(study, walker.pid) for walker in real} & set(used)  # no real participant's data

    page = experimenter.get(url).content.decode()
    shown = reverse("admin:studies_study_report_page", args=[study.pk, report.pk])
    assert "<iframe" in page and shown in page
    assert "Showing the report on 3 pilots" in page
    last = kinds.get("pilot").summary(job)[-1]
    assert last["Page"] == "Report on these pilots"
    assert last["Why"].startswith("computed ") and last["Why"].endswith(f"on 3 pilots: {url}")

    # The study's own report is of its real participants: the pilot report is none of its pages.
    study_page = experimenter.get(reverse("admin:studies_study_report", args=[study.pk])).content.decode()
    assert "No report has been computed for this study yet" in study_page
    assert f"/report/{report.pk}/" not in study_page
    assert latest_report(study) is None
    assert experimenter.get(f"/api/v1/studies/{study.slug}/report/").status_code == 404
    nightly = [r for r in reports_nightly() if r.study_id == study.pk]
    assert len(nightly) == 1 and nightly[0].pk != report.pk and not nightly[0].of_pilots
    own = computed(nightly[0])
    assert own.results["n"]["participants"] == 2  # the real ones
    assert experimenter.get(f"/api/v1/studies/{study.slug}/report/").json()["report"]["id"] == own.pk


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.browser
def test_the_experimenter_asks_for_it_on_the_job_page_and_watches_it_computed(
    server, browser, transactional_db
):
    study = loader.mystery_study()
    job = jobs.pilot_job_create(study=study, base_url=server, participants=2, attentive=1.0, concurrency=2)
    ended = []

    def run() -> None:  # not in this thread: Playwright's loop runs here
        try:
            ended.append(tasks.job_run_here(job.pk))
        finally:
            connections.close_all()

    runner = threading.Thread(target=run)
    runner.start()
    runner.join()
    assert ended == [Job.Status.DONE]
    experimenter_user()
    context = new_context(browser)
    page = signed_in(context, server)
    page.goto(f"{server}{reverse('admin:debates_job_change', args=[job.pk])}")
    expect(page.locator("#job-summary")).to_contain_text("All 2 simulated participants")
    page.get_by_role("link", name="Report on these pilots").click()
    expect(page.get_by_text("No report on these pilots has been computed yet")).to_be_visible()
    with celery_worker():
        page.get_by_role("button", name="Compute the report").click()
        expect(page.get_by_role("status")).to_contain_text("Computing the report on 2 pilots")  # polled
        expect(page.locator("iframe")).to_be_visible(timeout=60_000)  # the page reloads when it is done
    expect(page.frame_locator("iframe").locator("h1")).to_have_text(study.title)
    expect(page.get_by_text("Showing the report on 2 pilots")).to_be_visible()
    page.get_by_role("link", name=str(job)).click()  # back to the job, by the breadcrumbs
    expect(page.locator("#job-summary")).to_contain_text(f"on 2 pilots: {report_page(study, job)}")
    context.close()


# --- Who may ask, and what the job's page offers (no server: items marked done here) ----------


@pytest.fixture
def pilot_job(mystery_study) -> Job:
    """A pilot job of the demo study whose first item is done (its pilot entered the study)."""
    job = jobs.pilot_job_create(study=mystery_study, base_url="http://web:8000", participants=2)
    job_services.job_plan(job=job)
    first = job.items.get(key="p001")
    pilot_enters(mystery_study, first)
    record = services.pilot_record(mystery_study, Outcome(pid=jobs.participant_pid(first), pages=1))
    job.items.filter(pk=first.pk).update(status="done", result=record)
    return job


def pilot_enters(study: Study, item: JobItem) -> None:
    """The item's simulated participant enters the study, as its walk begins: the study's link
    with the item's PROLIFIC_PID and a pilot token."""
    response = Client().get(f"{entry_url(study, jobs.participant_pid(item))}&pilot={pilot_token(study)}")
    assert response.status_code == 302


def staff_with(username: str, *codenames: str) -> User:
    user = user_with_password(username, is_staff=True)
    for codename in codenames:
        app, name = codename.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=name))
    return user


@pytest.mark.django_db
def test_the_job_page_links_the_report_once_a_pilot_has_walked(experimenter, mystery_study):
    job = jobs.pilot_job_create(study=mystery_study, base_url="http://web:8000", participants=2)
    job_services.job_plan(job=job)
    change = reverse("admin:debates_job_change", args=[job.pk])
    assert "Report on these pilots" not in experimenter.get(change).content.decode()
    job.items.filter(key="p002").update(status="done", result={})
    assert f'href="{report_page(mystery_study, job)}"' in experimenter.get(change).content.decode()


@pytest.mark.django_db
def test_the_report_reads_the_pilots_whose_walks_are_done(experimenter, pilot_job, mystery_study):
    pilot_enters(mystery_study, pilot_job.items.get(key="p002"))  # still walking
    Walker(mystery_study).enter()  # a real participant
    experimenter.post(report_page(mystery_study, pilot_job))
    first = Participant.objects.get(prolific_pid=jobs.participant_pid(pilot_job.items.get(key="p001")))
    report = Report.objects.get()
    assert report.pilots == [first.pk] and report.trigger == Report.Trigger.ADMIN
    busy = experimenter.get(report_page(mystery_study, pilot_job), HTTP_HX_REQUEST="true")
    assert "<progress" in busy.content.decode() and "<html" not in busy.content.decode()
    assert "being computed on 1 pilots" in jobs.PilotKind().summary(pilot_job)[-1]["Why"]
    experimenter.post(report_page(mystery_study, pilot_job))  # asked again while queued: the same one
    assert Report.objects.count() == 1


@pytest.mark.django_db
def test_staff_without_the_permissions_and_outsiders_are_refused(
    staff_without_permissions, outsider, pilot_job, mystery_study
):
    url = report_page(mystery_study, pilot_job)
    assert staff_without_permissions.get(url).status_code == 403
    assert staff_without_permissions.post(url).status_code == 403
    for response in (outsider.get(url), outsider.post(url)):
        assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))
    reader = logged_in(staff_with("reader", "debates.view_job", "studies.view_study"))
    page = reader.get(url)
    assert page.status_code == 200 and "Compute the report" not in page.content.decode()
    assert reader.post(url).status_code == 403
    no_study = logged_in(staff_with("stranger", "debates.view_job", "analysis.add_report"))
    assert no_study.get(url).status_code == 404  # a study whose data they may not see
    assert not Report.objects.exists()


@pytest.mark.django_db
def test_a_job_is_reported_only_under_its_own_study(experimenter, pilot_job, pairs_study):
    assert experimenter.get(report_page(pairs_study, pilot_job)).status_code == 404


# --- Pilot reports and the study's own reports, apart -----------------------------------------


@pytest.mark.django_db
def test_a_request_for_pilots_never_returns_the_studys_pending_report_nor_the_reverse(mystery_study):
    own = report_request(study=mystery_study, trigger="nightly")
    pilot = report_request(study=mystery_study, trigger="admin", pilots=[7, 3])
    assert pilot.pk != own.pk and pilot.pilots == [3, 7] and own.pilots is None
    assert report_request(study=mystery_study, trigger="admin", pilots=[3, 7]).pk == pilot.pk
    assert report_request(study=mystery_study, trigger="admin", pilots=[3]).pk not in (pilot.pk, own.pk)
    assert report_request(study=mystery_study, trigger="api").pk == own.pk
    with pytest.raises(ValueError, match="no pilot participants"):
        report_request(study=mystery_study, trigger="admin", pilots=[])


@pytest.mark.django_db
def test_pruning_keeps_the_last_reports_and_the_last_pilot_reports_apart(mystery_study, settings):
    settings.REPORTS_KEPT = 2
    now = timezone.now()
    for hours in range(4):
        for pilots in (None, [hours + 1]):
            Report.objects.create(
                study=mystery_study,
                design="A",
                trigger="admin",
                status="done",
                created_at=now - timedelta(hours=hours, minutes=30 if pilots else 0),
                pilots=pilots,
            )
    assert reports_prune(study=mystery_study) == 4
    kept = Report.objects.order_by("-created_at")
    assert [r.pilots for r in kept] == [None, [1], None, [2]]
