"""The pre-registration lock as an experimenter meets it in a real browser: a live study's
case cannot be edited (no form, a forged save refused), a new version can be made and changed,
and the study page shows its frozen hash and instrument."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from debates.demo import loader
from debates.models import Case
from tests.support.browser import new_context, signed_in
from tests.support.cast import experimenter_user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]


def test_the_case_of_a_live_study_is_locked_and_a_new_version_is_editable(server, browser, transactional_db):
    study = loader.mystery_study()
    experimenter_user()
    case = Case.objects.get(slug=study.study_dialogues.first().dialogue.case.slug)
    culprit, rival = case.culprit, case.rival
    context = new_context(browser)
    page = signed_in(context, server)

    page.goto(f"{server}/admin/debates/case/{case.pk}/change/")
    expect(page.locator(".errornote")).to_contain_text(f"{study.title} has gone live with this case")
    expect(page.locator("input[name='culprit']")).to_have_count(0)  # shown, not editable
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    forged = page.evaluate(
        """async (url) => {
            const token = document.querySelector("input[name=csrfmiddlewaretoken]").value;
            const body = new URLSearchParams({csrfmiddlewaretoken: token, culprit: "x", rival: "y"});
            const response = await fetch(url, {method: "POST", body});
            return response.status;
        }""",
        f"{server}/admin/debates/case/{case.pk}/change/",
    )
    assert forged == 403
    case.refresh_from_db()
    assert (case.culprit, case.rival) == (culprit, rival)

    page.get_by_role("button", name="Make a new version").click()
    expect(page.locator(".messagelist")).to_contain_text("Made a new version")
    copy = Case.objects.get(slug=f"{case.slug}-v2")
    assert page.url.endswith(f"/admin/debates/case/{copy.pk}/change/")
    page.locator("input[name='culprit']").fill(rival)
    page.locator("input[name='rival']").fill(culprit)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    copy.refresh_from_db()
    case.refresh_from_db()
    assert (copy.culprit, copy.rival) == (rival, culprit)
    assert (case.culprit, case.rival) == (culprit, rival)

    page.goto(f"{server}/admin/studies/study/{study.pk}/change/")
    expect(page.get_by_text(study.snapshot_sha256).first).to_be_visible()
    page.get_by_role("link", name="Instrument").click()
    expect(page.locator("h1")).to_contain_text("Instrument")
    expect(page.locator("code").first).to_have_text(study.snapshot_sha256)
    context.close()
