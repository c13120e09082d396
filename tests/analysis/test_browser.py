"""The analyst's pages in a real browser (headless Chromium against uvicorn, a Celery worker
computing the report): the report page in the admin, and the API with a token."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from rest_framework.authtoken.models import Token

from debates.demo import loader
from tests.support.browser import new_context, signed_in
from tests.support.cast import Walker, experimenter_user, user_with_password
from tests.support.servers import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]


@pytest.fixture
def study(transactional_db):
    study = loader.mystery_study()
    for _ in range(6):
        w = Walker(study)
        w.enter()
        w.walk()
    return study


def test_the_experimenter_computes_a_report_and_reads_it_in_the_admin(server, browser, study):
    experimenter_user()
    context = new_context(browser)
    page = signed_in(context, server)
    page.goto(f"{server}/admin/studies/study/{study.pk}/report/")
    expect(page.get_by_text("No report has been computed for this study yet")).to_be_visible()
    with celery_worker():
        page.get_by_role("button", name="Compute the report").click()
        expect(page.get_by_role("status")).to_contain_text("Computing the report")  # progress, polled
        frame_element = page.locator("iframe")
        expect(frame_element).to_be_visible(timeout=60_000)  # the page reloads when it is done
    frame = page.frame_locator("iframe")
    expect(frame.locator("h1")).to_have_text(study.title)
    expect(frame.get_by_role("heading", name=re.compile("Table 39"))).to_be_visible()
    plot = frame.locator("img[alt='accuracy.png']")
    expect(plot).to_be_visible()
    assert plot.evaluate("img => img.naturalWidth") > 100  # the PNG loaded, under the page's CSP
    # The frame is as tall as the report: it was a box 720 px high that ended at the sample flow.
    tall = "f => f.getBoundingClientRect().height >= f.contentDocument.documentElement.scrollHeight"
    page.wait_for_function(f"() => ({tall})(document.querySelector('iframe'))")
    assert frame_element.evaluate("f => f.getBoundingClientRect().height") > 2000
    expect(page.get_by_role("link", name="results.json").first).to_be_visible()
    context.close()


def test_an_analyst_browses_the_api_with_a_token(server, browser, study):
    analyst = user_with_password("analyst", is_staff=True, is_superuser=True)
    token = Token.objects.create(user=analyst).key
    anonymous = new_context(browser)
    page = anonymous.new_page()
    page.goto(f"{server}/api/v1/studies/")
    expect(page.get_by_text("Authentication credentials were not provided.")).to_be_visible()
    anonymous.close()
    context = new_context(browser, extra_http_headers={"Authorization": f"Token {token}"})
    page = context.new_page()
    page.goto(f"{server}/api/v1/studies/")
    expect(page.locator("h1")).to_contain_text("Studies")  # DRF's browsable page
    expect(page.get_by_label("response info")).to_contain_text(study.slug)
    page.goto(f"{server}/api/v1/studies/{study.slug}/tables/judgements/?page_size=2")
    expect(page.get_by_label("response info")).to_contain_text('"page_size": 2')
    expect(page.get_by_label("response info")).to_contain_text(study.slug)
    response = page.request.get(f"{server}/api/v1/studies/{study.slug}/tables/judgements.csv")
    assert response.ok and response.text().splitlines()[0].startswith("study,study_sha256,participant_id")
    assert response.headers["x-study-sha256"] == study.snapshot_sha256
    assert len(response.text().splitlines()) == 7  # a header and six judgements
    schema = page.request.get(f"{server}/api/v1/schema/?format=json").json()
    assert "/api/v1/studies/{slug}/report/" in schema["paths"]
    context.close()
