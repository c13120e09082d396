"""Leaving early: a screened-out or failed-check participant reads why and what happens next,
with a button to Prolific carrying the right code, on a page that stays the same on refresh."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from participants.models import Participant
from studies.models import FAILED_CHECK_MESSAGE, SCREENED_OUT_MESSAGE, Study
from tests.support.cast import Walker, entry_url
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

PROLIFIC = "https://app.prolific.com/submissions/complete?cc="
SCREENING_STEP = {
    "kind": "screening",
    "title": "About your views",
    "config": {"score_items": "belief", "groups": "low: 1 - 2\nhigh: 4 - 5"},
    "questions": [
        {"key": "belief", "kind": "likert", "text": "How much do you agree?", "options": list("12345")},
    ],
}
CHECK_STEP = {
    "kind": "attention_check",
    "title": "Check",
    "questions": [
        {
            "key": "c",
            "kind": "single_choice",
            "text": "Pick B",
            "options": ["A", "B"],
            "expected_answer": ["B"],
        }
    ],
}


@pytest.fixture
def screening_study(db) -> Study:
    return build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP])


@pytest.fixture
def check_study(db) -> Study:
    return build_study([CONSENT_STEP, CHECK_STEP, DEBRIEF_STEP], attention_failures_to_end=1)


def leave(study: Study, answers: dict) -> tuple[Walker, object]:
    """Walk until the study ends; return the walker and the response that ended it."""
    w = Walker(study)
    w.enter()
    w.submit()  # consent
    _, form = w.page()
    return w, w.submit(answers, form)


def paragraphs(html: str) -> list[str]:
    block = html[html.index('class="prose exit-message"') :]
    block = block[: block.index("</div>")]
    return [re.sub(r"\s+", " ", p).strip() for p in re.findall(r"<p>(.*?)</p>", block, re.S)]


def prolific_button(html: str) -> str:
    (href,) = re.findall(r'<a class="button primary" href="([^"]+)">Go to Prolific with this code</a>', html)
    return href


@pytest.mark.django_db
class TestLeavingEarly:
    def test_a_screened_out_participant_is_told_why_and_is_sent_on_with_the_screen_out_code(
        self, screening_study
    ):
        w, response = leave(screening_study, {"belief": "3"})
        assert response.status_code == 303 and response["Location"] == w.url  # our page, not Prolific yet
        assert Participant.objects.get(prolific_pid=w.pid).status == Participant.Status.SCREENED_OUT
        page = w.client.get(w.url)
        html = page.content.decode()
        assert "the study ends here for you" in html
        assert "fixed screen-out payment" in html and "Please do not return the study" in html
        assert len(paragraphs(html)) == 2
        assert "CSCREEN" in html and prolific_button(html) == PROLIFIC + "CSCREEN"

    def test_a_participant_who_failed_the_checks_is_told_plainly_they_may_be_rejected(self, check_study):
        w, response = leave(check_study, {"c": "A"})
        assert response["Location"] == w.url
        html = w.client.get(w.url).content.decode()
        assert "The study has ended" in html
        assert "your submission may be rejected and not paid" in html
        assert "return the study on Prolific instead" in html
        assert prolific_button(html) == PROLIFIC + "CFAIL"

    def test_the_page_and_its_code_are_the_same_on_refresh_and_through_the_study_link(self, screening_study):
        w, _ = leave(screening_study, {"belief": "3"})
        first = w.client.get(w.url).content.decode()
        assert w.client.get(w.url).content.decode() == first
        again = Client().get(entry_url(screening_study, w.pid))
        assert again["Location"] == w.url
        assert prolific_button(Client().get(w.url).content.decode()) == PROLIFIC + "CSCREEN"
        # A late submission of the old form changes nothing either.
        late = w.client.post(w.url, {"_position": "2", "belief": "1"})
        assert late.status_code == 200 and prolific_button(late.content.decode()) == PROLIFIC + "CSCREEN"
        assert Participant.objects.get(prolific_pid=w.pid).status == Participant.Status.SCREENED_OUT

    def test_the_study_sets_the_wording_which_is_escaped_and_kept_in_paragraphs(self, screening_study):
        Study.objects.filter(pk=screening_study.pk).update(
            screened_out_message="Thanks!\n\nYou will get <b>£0.50</b> & a bonus.\nSee you."
        )
        w, _ = leave(screening_study, {"belief": "3"})
        html = w.client.get(w.url).content.decode()
        assert paragraphs(html) == [
            "Thanks!",
            "You will get &lt;b&gt;£0.50&lt;/b&gt; &amp; a bonus.<br>See you.",
        ]
        assert "<b>£0.50</b>" not in html

    def test_an_empty_wording_falls_back_to_the_default(self, check_study):
        Study.objects.filter(pk=check_study.pk).update(failed_check_message="  ")
        w, _ = leave(check_study, {"c": "A"})
        html = w.client.get(w.url).content.decode()
        first_sentence = FAILED_CHECK_MESSAGE.split(". ")[0]
        assert first_sentence in html

    def test_new_studies_start_with_wording_that_follows_prolifics_rules(self, db):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP])
        assert study.screened_out_message == SCREENED_OUT_MESSAGE
        assert study.failed_check_message == FAILED_CHECK_MESSAGE

    def test_the_page_keeps_the_strict_csp_without_inline_scripts_or_styles(self, screening_study):
        w, _ = leave(screening_study, {"belief": "3"})
        page = w.client.get(w.url)
        html = page.content.decode()
        assert "script-src 'self'" in page["Content-Security-Policy"]
        assert "style-src 'self'" in page["Content-Security-Policy"]
        assert "no-store" in page["Cache-Control"]
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []
        assert "style=" not in html and "<style" not in html

    def test_declining_consent_and_completing_still_go_straight_to_prolific(self, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        assert w.submit({"consent": "no"})["Location"] == PROLIFIC + "CNOCON"

    def test_a_preview_shows_where_the_participant_would_go(self, screening_study, experimenter):
        Study.objects.filter(pk=screening_study.pk).update(status="draft")
        w = Walker(screening_study, client=experimenter)
        w.url = experimenter.get(f"/s/{screening_study.slug}/preview/")["Location"]
        w.submit()
        w.submit({"belief": "3"})
        html = experimenter.get(w.url).content.decode()
        assert "fixed screen-out payment" in html
        assert f"<code>{PROLIFIC}CSCREEN</code>" in html
