"""The experimenter's path in a real browser (headless Chromium, uvicorn, a real Celery
worker, the offline model): add a generation job from its form, press Start, watch the
progress reach Done without reloading, read the results, open a built dialogue with its
scores, and offer a dialogue that failed the quality check anyway."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from debates.demo import loader
from debates.models import Dialogue, Job
from tests.support.browser import new_context, signed_in
from tests.support.cast import experimenter_user
from tests.support.servers import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]


def test_an_experimenter_builds_dialogues_from_the_admin_and_overrides_a_failed_one(
    server, browser, transactional_db
):
    experimenter_user()
    loader.demo_cases()
    context = new_context(browser)
    page = signed_in(context, server)

    page.goto(f"{server}/admin/debates/job/add/?kind=generate_dialogues")
    page.fill("#id_name", "orchard-built")
    page.select_option("#id_config__cases", ["orchard-recital"])
    page.select_option("#id_config__conditions", ["1", "10", "14"])
    page.fill("#id_budget_usd", "5")
    page.get_by_role("button", name="Save and continue editing").click()
    job = Job.objects.get(name="orchard-built")
    box = page.locator("#job-progress")
    expect(box.locator("[data-field=status_label]")).to_have_text("Not started")
    page.evaluate("window.notReloaded = true")

    with celery_worker(LLM_BACKEND="offline"):
        page.get_by_role("button", name="Start").click()
        expect(page.locator(".messagelist")).to_contain_text("running")
        page.evaluate("window.notReloaded = true")
        expect(box.locator("[data-field=status_label]")).to_have_text("Done", timeout=60_000)
    assert page.evaluate("window.notReloaded") is True  # the bar moved by polling
    expect(box.locator("[data-field=done]")).to_have_text("5")  # two reasons, three dialogues

    page.reload()
    results = page.locator("#job-summary")
    expect(results).to_contain_text("Pro-jargon, Active vs. Baseline, V1")
    expect(results.locator("tbody tr")).to_have_count(3)

    built = Dialogue.objects.filter(provenance__job="orchard-built")
    assert built.count() == 3
    failed = built.filter(quality_passed=False).first() or built.first()
    Dialogue.objects.filter(pk=failed.pk).update(quality_passed=False)  # as a failed check leaves it
    page.goto(f"{server}/admin/debates/dialogue/{failed.pk}/change/")
    expect(page.locator("body")).to_contain_text("Pass mark: 27 of 30")
    expect(page.locator("body")).to_contain_text("orchard-built")
    page.get_by_label("Offer despite the quality check").check()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("changed successfully")
    failed.refresh_from_db()
    assert failed.quality_override is True and failed.kept_out is False
    context.close()
    job.refresh_from_db()
    assert job.status == Job.Status.DONE
