"""A job's page in a real browser (headless Chromium against uvicorn): its progress bar and
counts move, polled without reloading the page, as the items are done, up to "Done". The
items run in the test process (the test-only kind lives here), gated by the test."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import connections
from playwright.sync_api import expect

from debates.jobs import services, tasks
from tests.debates.jobs import support
from tests.support.browser import new_context, signed_in
from tests.support.cast import experimenter_user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]


def test_the_progress_bar_moves_to_done_as_items_finish(server, browser, transactional_db, settings):
    settings.LLM_BACKEND = "offline"
    experimenter_user()
    job = support.new_job(3, concurrency=1)
    services.job_start(job_id=job.pk)  # planned and running; the items run below, one by one
    gates = {f"item-{n}": threading.Event() for n in (1, 2, 3)}

    async def gated(item):
        assert await asyncio.to_thread(gates[item.key].wait, 60)

    support.HOOKS["before"] = gated
    context = new_context(browser)
    page = signed_in(context, server)
    page.goto(f"{server}/admin/debates/job/{job.pk}/change/")
    box = page.locator("#job-progress")
    expect(box.locator("[data-field=percent]")).to_have_text("0")
    expect(box.locator("[data-field=status_label]")).to_have_text("Running")
    page.evaluate("window.notReloaded = true")

    def run() -> None:
        try:
            tasks.job_run_here(job.pk)
        finally:
            connections.close_all()

    runner = threading.Thread(target=run)
    runner.start()
    try:
        gates["item-1"].set()
        expect(box.locator("[data-field=done]")).to_have_text("1", timeout=30_000)
        expect(box.locator("[data-field=percent]")).to_have_text("33")
        assert box.locator("[data-field=fill]").get_attribute("style").count("width: 33%") == 1
        gates["item-2"].set()
        gates["item-3"].set()
        expect(box.locator("[data-field=status_label]")).to_have_text("Done", timeout=30_000)
        expect(box.locator("[data-field=percent]")).to_have_text("100")
        expect(box).to_have_attribute("data-status", "done")
        assert page.evaluate("window.notReloaded") is True  # polled, not reloaded
    finally:
        for gate in gates.values():
            gate.set()
        runner.join(60)
        context.close()
