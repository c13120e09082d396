"""The pilot job from the admin: the study's "Pilot this study" creates a draft pilot job of the
study, prefilled with this server as the one to walk, and opens the job's page; the kind's plan
(one item a simulated participant) and what it refuses; a server that cannot be reached fails
the items instead of passing for a page of the study."""

from __future__ import annotations

import pytest
from django.urls import reverse

from debates.jobs import services as job_services
from debates.jobs import tasks
from debates.models import Job
from pilots import jobs
from studies.models import Study
from tests.support.servers import free_port

pytestmark = pytest.mark.django_db


def test_the_study_page_offers_a_pilot_that_makes_a_draft_job_and_opens_its_page(experimenter, mystery_study):
    Study.objects.filter(pk=mystery_study.pk).update(status=Study.Status.DRAFT)
    pilot_url = reverse("admin:studies_study_pilot", args=[mystery_study.pk])
    study_page = experimenter.get(reverse("admin:studies_study_change", args=[mystery_study.pk]))
    assert pilot_url in study_page.content.decode() and "Pilot this study" in study_page.content.decode()
    page = experimenter.get(pilot_url)
    assert page.status_code == 200 and "http://testserver" in page.content.decode()
    assert not Job.objects.exists()  # showing the page makes nothing
    response = experimenter.post(pilot_url)
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "admin:debates_job_change", args=[job.pk]
    )
    assert job.kind == "pilot" and job.status == Job.Status.DRAFT and job.concurrency == 4
    assert (
        job.config["study"] == mystery_study.slug and job.config["participants"] == jobs.DEFAULT_PARTICIPANTS
    )
    assert job.config["policy"] == "scripted" and job.config["base_url"] == "http://testserver"
    job_page = experimenter.get(response["Location"]).content.decode()
    assert 'name="config__base_url"' in job_page and 'value="http://testserver"' in job_page
    assert "A pilot job, not started yet" in job_page and 'form="job-start"' in job_page


def test_only_draft_and_live_studies_offer_a_pilot_and_only_to_who_may_add_jobs(
    experimenter, staff_without_permissions, mystery_study
):
    pilot_url = reverse("admin:studies_study_pilot", args=[mystery_study.pk])
    assert staff_without_permissions.get(pilot_url).status_code == 403
    assert staff_without_permissions.post(pilot_url).status_code == 403
    Study.objects.filter(pk=mystery_study.pk).update(status=Study.Status.CLOSED)
    study_page = experimenter.get(reverse("admin:studies_study_change", args=[mystery_study.pk]))
    assert pilot_url not in study_page.content.decode()
    experimenter.post(pilot_url)
    assert not Job.objects.exists()


def test_the_plan_is_one_item_a_simulated_participant(mystery_study):
    job = jobs.pilot_job_create(study=mystery_study, base_url="http://web:8000", participants=12)
    job_services.job_plan(job=job)
    assert list(job.items.order_by("pk").values_list("key", flat=True)) == [f"p{n:03d}" for n in range(1, 13)]
    assert job.items.get(key="p012").payload == {"n": 12}


def test_a_job_that_cannot_run_says_why_when_started(mystery_study):
    no_model = jobs.pilot_job_create(study=mystery_study, base_url="http://web:8000", policy="llm")
    with pytest.raises(job_services.JobError, match="needs a model"):
        job_services.job_start(job_id=no_model.pk)
    closed = jobs.pilot_job_create(study=mystery_study, base_url="http://web:8000")
    Study.objects.filter(pk=mystery_study.pk).update(status=Study.Status.CLOSED)
    with pytest.raises(job_services.JobError, match="closed: pilots run on draft or live studies"):
        job_services.job_start(job_id=closed.pk)
    assert not closed.items.exists()


def test_a_bad_address_is_refused_by_the_config_form(mystery_study):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="like http://127.0.0.1:8000"):
        jobs.pilot_job_create(study=mystery_study, base_url="ftp://example.org")


def test_a_server_that_cannot_be_reached_fails_the_items_rather_than_a_page(mystery_study, settings):
    settings.JOB_ITEM_ATTEMPTS = 2
    job = jobs.pilot_job_create(
        study=mystery_study, base_url=f"http://127.0.0.1:{free_port()}", participants=2
    )
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    for item in job.items.all():
        assert item.status == "failed" and item.attempts == 2
        assert "cannot be reached: the server did not answer" in item.error
    rows = jobs.PilotKind().summary(job)
    assert len(rows) == 1 and "2 item(s) failed" in rows[0]["Why"]
