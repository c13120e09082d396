"""An experimenter in a real browser previews a chosen claim through a chosen protocol (design
B) and a chosen pair (design D): the preview form offers them, and the preview shows them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from debates.demo import loader
from debates.models import Instance, LiveSession, StudyClaim
from participants.models import Participant
from tests.support.browser import new_context, screenshot, signed_in
from tests.support.cast import experimenter_user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]


def test_an_experimenter_previews_a_chosen_claim_protocol_and_pair(server, browser, transactional_db):
    claims, pairs = loader.claim_study(), loader.pairs_study()
    chosen = StudyClaim.objects.get(study=claims, claim__slug="cooked-tomatoes")
    item = Instance.objects.get(instance_set__slug="demo-pairs", number=4)
    experimenter_user()
    context = new_context(browser)
    page = signed_in(context, server)

    # Design B: from the first claim step, this claim, through a consultancy.
    page.goto(f"{server}/admin/studies/study/{claims.pk}/preview/")
    page.get_by_label("Start at").select_option("4")
    page.get_by_label("Claim").select_option(str(chosen.pk))
    page.get_by_label("Protocol").select_option("consultancy")
    screenshot(page, "preview-claim-choice")
    page.get_by_role("button", name="Open the preview").click()
    expect(page.locator(".claim-text")).to_have_text(chosen.claim.text)
    session = LiveSession.objects.get(participant__study=claims, participant__is_preview=True)
    assert (session.claim_id, session.protocol) == (chosen.claim_id, "consultancy")

    # Design D: this pair, the one comparison shown.
    page.goto(f"{server}/admin/studies/study/{pairs.pk}/preview/")
    page.get_by_label("Start at").select_option("2")
    page.get_by_label("Pairwise item").select_option(str(item.pk))
    page.get_by_role("button", name="Open the preview").click()
    expect(page.get_by_text("Comparison 1 of 1")).to_be_visible()
    first = item.excerpt_1.turns[0]["text"]
    expect(page.get_by_text(first[:60], exact=False).first).to_be_visible()
    preview = Participant.objects.get(study=pairs, is_preview=True)
    assert list(preview.comparisons.values_list("instance_id", flat=True)) == [item.pk]
    context.close()
