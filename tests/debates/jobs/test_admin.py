"""The jobs' admin: the progress endpoint (staff only), the job page with its items linking to
their calls and the kind's summary, the actions, the kind's config form, and prompt templates
that are never changed in place once they produced data."""

from decimal import Decimal

import pytest
from django.urls import reverse

from debates.jobs import services, tasks
from debates.jobs import templates as job_templates
from debates.models import Job, PromptTemplate
from tests.debates.jobs import support

pytestmark = pytest.mark.django_db


def progress_url(job: Job) -> str:
    return reverse("admin:debates_job_progress", args=[job.pk])


def test_the_progress_endpoint_needs_a_staff_login(client, outsider, staff_without_permissions):
    job = support.new_job(2)
    for anonymous in (client, outsider):
        response = anonymous.get(progress_url(job))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert staff_without_permissions.get(progress_url(job)).status_code == 403


def test_the_progress_endpoint_gives_the_counts_and_the_money(experimenter, openai_backend):
    job = support.new_job(3, budget_usd=Decimal(30), concurrency=1)
    tasks.job_run_here(job.pk)
    data = experimenter.get(progress_url(job)).json()
    assert data["status"] == "budget" and data["done"] == 2 and data["pending"] == 1
    assert data["spent_usd"] == "24.0000" and data["to_finish_usd"] == "12.0000"
    assert data["budget_usd"] == "30.00" and "Raise the budget" in data["note"]


def test_the_job_page_shows_progress_items_linked_to_their_calls_and_the_summary(
    experimenter, openai_backend
):
    job = support.new_job(2)
    tasks.job_run_here(job.pk)
    page = experimenter.get(reverse("admin:debates_job_change", args=[job.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="job-progress"' in html and progress_url(job) in html and "job_progress.js" in html
    item = job.items.get(key="item-1")
    link = f"{reverse('admin:debates_llmcall_changelist')}?job_item__id__exact={item.pk}"
    assert link in html.replace("&amp;", "&")
    assert 'id="job-summary"' in html and item.result["text"] in html
    calls = experimenter.get(link)
    assert calls.status_code == 200
    assert list(calls.context["cl"].queryset) == list(item.llm_calls.all())


def test_the_page_buttons_start_pause_resume_and_cancel(experimenter):
    job = support.new_job(2)
    verb = lambda name: experimenter.post(reverse("admin:debates_job_verb", args=[job.pk, name]))  # noqa: E731
    page = experimenter.get(reverse("admin:debates_job_change", args=[job.pk])).content.decode()
    assert 'form="job-start"' in page and 'form="job-pause"' not in page
    assert verb("start").status_code == 302
    assert Job.objects.get(pk=job.pk).status == "running" and job.items.count() == 2
    verb("pause")
    assert Job.objects.get(pk=job.pk).status == "paused"
    verb("resume")
    assert Job.objects.get(pk=job.pk).status == "running"
    verb("cancel")
    assert Job.objects.get(pk=job.pk).status == "cancelled"
    assert set(job.items.values_list("status", flat=True)) == {"cancelled"}
    assert experimenter.get(reverse("admin:debates_job_verb", args=[job.pk, "start"])).status_code == 405


def test_a_job_is_added_with_its_kinds_config_form(experimenter):
    url = reverse("admin:debates_job_add") + f"?kind={support.KEY}"
    form = experimenter.get(url)
    assert "config__items" in form.content.decode()
    data = {"name": "echo-five", "kind": support.KEY, "title": "", "concurrency": 2, "note": ""}
    bad = experimenter.post(url, {**data, "config__items": "0", "config__model": "fake"})
    assert bad.status_code == 200 and not Job.objects.filter(name="echo-five").exists()
    experimenter.post(url, {**data, "config__items": "5", "config__model": "fake", "config__as_json": "on"})
    job = Job.objects.get(name="echo-five")
    assert job.config == {"items": 5, "model": "fake", "as_json": True}
    assert len(services.job_start(job_id=job.pk)) == 2 and job.items.count() == 5


def template_change(client, template: PromptTemplate, text: str):
    return client.post(
        reverse("admin:debates_prompttemplate_change", args=[template.pk]), {"text": text, "note": "edited"}
    )


def test_a_template_is_edited_in_place_until_it_produced_data_then_saved_as_a_new_version(experimenter):
    first = job_templates.latest("judge", "Judge {dialogue}")
    assert (first.version, first.text) == (1, "Judge {dialogue}")
    assert job_templates.latest("judge", "ignored").pk == first.pk
    template_change(experimenter, first, "Judge this: {dialogue}")
    first.refresh_from_db()
    assert first.text == "Judge this: {dialogue}" and PromptTemplate.objects.count() == 1
    job_templates.template_mark_used(first.pk)  # a recorded call used it
    template_change(experimenter, first, "Judge carefully: {dialogue}")
    first.refresh_from_db()
    assert first.text == "Judge this: {dialogue}"  # what produced data is kept
    latest = job_templates.latest("judge", "ignored")
    assert (latest.version, latest.text, latest.used_at) == (2, "Judge carefully: {dialogue}", None)
    add = experimenter.post(
        reverse("admin:debates_prompttemplate_add"), {"name": "judge", "text": "Third", "note": ""}
    )
    assert add.status_code == 302
    assert job_templates.latest("judge", "ignored").version == 3
