"""The experimenter's preview can choose any item: a design-B claim and protocol (debate or
consultancy) for the first claim step from the chosen start on, and a design-D pair for the
first pairwise step; what is not chosen is assigned as a participant's would be, and the
preview then shows the choice."""

from __future__ import annotations

import pytest
from django.urls import reverse

from debates.models import Comparison, Excerpt, Instance, LiveSession, RandomDraw, StudyClaim
from devtools.formparse import default_answers, parse_step
from participants.models import Participant


def preview_url(study) -> str:
    return reverse("admin:studies_study_preview", args=[study.pk])


def the_preview(study) -> Participant:
    return Participant.objects.get(study=study, is_preview=True)


def answer(client, preview: Participant, overrides: dict):
    """Answer the preview's current page as its form asks (hidden fields included)."""
    url = reverse("step", args=[preview.token])
    form = parse_step(client.get(url).content.decode())
    return client.post(url, default_answers(form, overrides), follow=True)


@pytest.mark.django_db
class TestAClaimAndAProtocol:
    def test_the_page_offers_the_studys_claims_and_the_protocols_its_steps_run(
        self, experimenter, claim_study
    ):
        html = experimenter.get(preview_url(claim_study)).content.decode()
        assert 'name="claim"' in html and 'name="protocol"' in html and 'name="item"' not in html
        assert '<option value="consultancy">Consultancy</option>' in html
        assert "the claim to judge and the protocol (debate or consultancy)" in html

    def test_the_chosen_claim_and_protocol_are_what_the_preview_judges(self, experimenter, claim_study):
        chosen = StudyClaim.objects.get(study=claim_study, claim__slug="frozen-vegetables")
        form = {"step": 4, "group": "skeptical", "claim": chosen.pk, "protocol": "consultancy"}
        page = experimenter.post(preview_url(claim_study), form, follow=True)
        session = LiveSession.objects.get(participant=the_preview(claim_study))
        assert (session.position, session.claim.slug, session.protocol, session.group) == (
            4,
            "frozen-vegetables",
            "consultancy",
            "skeptical",
        )
        assert session.consultant_side in ("true", "false") and session.debater_a is not None
        assert chosen.claim.text in page.content.decode()
        draw = RandomDraw.objects.get(participant=the_preview(claim_study), purpose="claim_cell")
        assert draw.outcome["chosen_by_preview"] is True

    def test_a_protocol_alone_leaves_the_claim_to_assignment(self, experimenter, claim_study):
        experimenter.post(preview_url(claim_study), {"step": 1, "protocol": "debate"})
        session = LiveSession.objects.get(participant=the_preview(claim_study))
        assert session.position == 4 and session.protocol == "debate" and session.side_a in ("true", "false")
        active = set(StudyClaim.objects.filter(study=claim_study).values_list("claim_id", flat=True))
        assert session.claim_id in active

    def test_the_preview_walks_on_to_the_chosen_protocols_exchange(self, experimenter, claim_study):
        chosen = StudyClaim.objects.get(study=claim_study, claim__slug="ocean-heat")
        experimenter.post(preview_url(claim_study), {"step": 4, "claim": chosen.pk, "protocol": "debate"})
        html = answer(
            experimenter, the_preview(claim_study), {"answer": "true", "confidence": "60"}
        ).content.decode()
        assert "Two AI debaters discuss the claim" in html and chosen.claim.text in html

    def test_a_claim_needs_a_claim_step_at_or_after_the_start(self, experimenter, claim_study):
        chosen = StudyClaim.objects.filter(study=claim_study).first()
        html = experimenter.post(preview_url(claim_study), {"step": 6, "claim": chosen.pk}).content.decode()
        assert "No claim step comes at or after the chosen step: start earlier." in html
        assert not Participant.objects.filter(study=claim_study).exists()


@pytest.mark.django_db
class TestAPairwiseItem:
    def test_the_chosen_pair_is_the_one_comparison_shown(self, experimenter, pairs_study):
        item = Instance.objects.get(instance_set__slug="demo-pairs", number=5)
        html = experimenter.get(preview_url(pairs_study)).content.decode()
        assert f'<option value="{item.pk}">demo-pairs no. 5: {item.stance}' in html
        page = experimenter.post(preview_url(pairs_study), {"step": 2, "item": item.pk}, follow=True)
        preview = the_preview(pairs_study)
        shown = Comparison.objects.get(participant=preview)
        assert (shown.position, shown.instance, shown.is_check, shown.swapped) == (2, item, False, False)
        first = Excerpt.objects.get(pk=item.excerpt_1_id)
        html = page.content.decode()
        assert first.turns[0]["text"][:40] in html and "Comparison 1 of 1" in html

    def test_answering_it_ends_the_step(self, experimenter, pairs_study):
        item = Instance.objects.get(instance_set__slug="demo-pairs", number=2)
        experimenter.post(preview_url(pairs_study), {"step": 1, "item": item.pk})
        preview = the_preview(pairs_study)
        assert Comparison.objects.get(participant=preview).position == 2
        answer(experimenter, preview, {"consent": "yes"})  # the consent, then the comparison
        answer(experimenter, preview, {"choice": "equal", "confidence": "3"})
        preview.refresh_from_db()
        assert preview.position == 3

    def test_an_item_needs_a_pairwise_step_at_or_after_the_start(self, experimenter, pairs_study):
        item = Instance.objects.get(instance_set__slug="demo-pairs", number=1)
        html = experimenter.post(preview_url(pairs_study), {"step": 3, "item": item.pk}).content.decode()
        assert "No pairwise step of this instance set comes at or after the chosen step." in html
