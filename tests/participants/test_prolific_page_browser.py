"""The study's Prolific page in a real browser, against our fake Prolific: Enter in a text box of
the review form approved the selected submissions (the form's first button is "Approve the
selected"; the review of the change)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from devtools.fakeprolific import FakeProlific
from participants import prolific
from participants.models import ProlificSubmission
from tests.participants.prolific_support import fake_fixture, on_prolific, prolific_server_fixture  # noqa: F401
from tests.support.browser import new_context, signed_in
from tests.support.cast import experimenter_user
from tests.support.servers import asgi_server
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study

pytestmark = [pytest.mark.postgres, pytest.mark.browser]


def test_enter_in_the_bonus_box_approves_nobody(
    transactional_db, browser, prolific_server, fake: FakeProlific
):
    study = build_study(QUESTIONNAIRE_STEPS)
    walker = on_prolific(fake, study)
    walker.walk(answers={"Page two": {"check_1": "Disagree"}})
    fake.submission_set(next(iter(fake.submissions)), "AWAITING_REVIEW")
    prolific.prolific_sync(study=study)
    submission_id = ProlificSubmission.objects.get(study=study).submission_id
    experimenter_user()
    env = {"PROLIFIC_API_TOKEN": prolific_server.app.token, "PROLIFIC_API_URL": prolific_server.api_url}
    with asgi_server(DJANGO_ALLOW_ASYNC_UNSAFE="", **env) as base:
        context = new_context(browser)
        page = signed_in(context, base)
        # The study's page: its panel "On Prolific" under the row of buttons, as wide as the form
        # (floated buttons had squeezed it into a column 50-85 px wide: the second researcher walk).
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{base}/admin/studies/study/{study.pk}/change/")
        panel = page.locator("fieldset.rostrum-prolific").bounding_box()
        tools = page.locator("#content-main > .object-tools").bounding_box()
        assert panel["width"] > 800 and panel["y"] >= tools["y"] + tools["height"], (panel, tools)
        page.goto(f"{base}/admin/studies/study/{study.pk}/prolific/")
        page.locator("#submissions tbody input[type=checkbox]").first.check()
        page.get_by_label("Bonus").fill("1.50")
        page.get_by_label("Bonus").press("Enter")
        page.get_by_label("Reason").press("Enter")
        page.wait_for_timeout(500)  # a submission would have navigated by now
        expect(page.locator(".messagelist")).to_have_count(0)
        assert fake.submissions[submission_id]["status"] == "AWAITING_REVIEW"
        page.get_by_role("button", name="Approve the selected").click()  # the button itself still does
        expect(page.locator(".messagelist")).to_contain_text("Approved 1 submission(s) on Prolific.")
        assert fake.submissions[submission_id]["status"] == "APPROVED"
        context.close()
