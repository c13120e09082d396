"""The claim study's overview shows the whole design grid: every screening group × protocol ×
claim cell with its target, filled or not, before anyone arrives."""

from __future__ import annotations

import re

import pytest

from analysis.overview import claim_fill_rows
from debates.models import LiveSession, StudyClaim
from tests.support.cast import Walker

SKEPTIC = {
    "belief_overstated": "Strongly agree",
    "belief_own_research": "Agree",
    "belief_trust": "Disagree",
    "age": "47",
    "education": "Vocational",
}


def grid(experimenter, study) -> list[tuple[str, ...]]:
    html = experimenter.get(f"/admin/studies/study/{study.pk}/overview/").content.decode()
    table = html.split("Claims: places per group × protocol × claim", 1)[1].split("</table>", 1)[0]
    cells = re.findall(
        r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>.*?>(\d+ / \d+)</td>", table, re.S
    )
    return [tuple(c) for c in cells]


@pytest.mark.django_db
def test_every_cell_of_the_design_is_shown_with_its_target_before_anyone_arrives(experimenter, claim_study):
    claims = sorted(StudyClaim.objects.filter(study=claim_study).values_list("claim__slug", flat=True))
    cells = grid(experimenter, claim_study)
    expected = [
        (group, protocol, claim, "0 / 3")
        for group in ("mainstream", "skeptical")
        for protocol in ("debate", "consultancy")
        for claim in claims
    ]
    assert cells == expected and len(cells) == 2 * 2 * 6


@pytest.mark.django_db
def test_a_claims_own_target_and_a_taken_place_show_in_its_cells(experimenter, claim_study):
    offered = StudyClaim.objects.filter(study=claim_study).select_related("claim").first()
    StudyClaim.objects.filter(pk=offered.pk).update(target=5)
    w = Walker(claim_study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2", answers={"About your views": SKEPTIC})
    w.page()  # the claim page assigns the cell
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    rows = {
        (r["group"], r["protocol"], r["claim__slug"]): r
        for r in claim_fill_rows(claim_study, session.created_at)
    }
    assert len(rows) == 24
    taken = rows[("skeptical", session.protocol, session.claim.slug)]
    assert (taken["leased"], taken["held"]) == (1, 1)
    assert all(r["target"] == 5 for (_, _, slug), r in rows.items() if slug == offered.claim.slug)
    assert sum(r["held"] for r in rows.values()) == 1
    assert (f"{session.protocol}", session.claim.slug) in {
        (c[1], c[2]) for c in grid(experimenter, claim_study)
    }


@pytest.mark.django_db
def test_a_cell_used_before_its_claim_was_withdrawn_stays_in_view(experimenter, claim_study):
    w = Walker(claim_study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2", answers={"About your views": SKEPTIC})
    w.page()
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    StudyClaim.objects.filter(study=claim_study, claim=session.claim).update(active=False)
    rows = claim_fill_rows(claim_study, session.created_at)
    assert len(rows) == 2 * 2 * 5 + 1
    assert rows[-1]["claim__slug"] == session.claim.slug and rows[-1]["in_design"] is False
    html = experimenter.get(f"/admin/studies/study/{claim_study.pk}/overview/").content.decode()
    assert f"{session.claim.slug} (no longer offered)" in html
