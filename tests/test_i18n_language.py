"""A participant's language: chosen at entry (the link's `lang`, else the browser's languages,
else the study's), kept for the whole session; the study's texts in it, falling back to the
study's own; answers stored as the study's own options; translations frozen and copied with
the study."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import translation

from participants.forms import QuestionForm
from participants.i18n import entry_language, participant_language
from participants.models import Participant, Response
from studies import registry
from studies.models import SCREENED_OUT_MESSAGE, StepTranslation, Study, StudyTranslation
from studies.services import study_duplicate
from studies.snapshot import study_snapshot
from studies.texts import step_title, study_languages, study_text
from tests.support.cast import Walker, entry_url, pid
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

QUESTION_STEP = {
    "kind": "questionnaire",
    "title": "Page one",
    "config": {"intro": "Some questions.", "button_label": "Next page"},
    "questions": [
        {"key": "colour", "kind": "single_choice", "text": "Pick a colour", "options": ["Red", "Blue"]},
        {"key": "warmth", "kind": "slider", "text": "How warm?", "options": ["Cold", "Hot"]},
    ],
}
GERMAN = {
    "de": {
        "study": {"title": "Eine Teststudie"},
        "steps": {
            "1": {"title": "Einwilligung", "texts": {"config": {"text": "Bitte zustimmen."}}},
            "2": {
                "title": "Seite eins",
                "texts": {
                    "config": {"intro": "Einige Fragen."},
                    "questions": {"colour": {"text": "Wählen Sie eine Farbe", "options": ["Rot", "Blau"]}},
                },
            },
        },
    }
}


@pytest.fixture
def german_study(db) -> Study:
    """A study in English with German texts for its first two steps (not its last)."""
    return build_study([CONSENT_STEP, QUESTION_STEP, DEBRIEF_STEP], translations=GERMAN)


def enter(study: Study, query: str = "", accept: str = "", prolific_pid: str | None = None) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=accept) if accept else Client()
    response = client.get(entry_url(study, prolific_pid) + query)
    assert response.status_code == 302
    client.step_url = response["Location"]
    return client


def language_of(study: Study, client: Client) -> str:
    return Participant.objects.get(token=client.step_url.strip("/").split("/")[-1]).language


class TestChoosingTheLanguage:
    def test_the_links_lang_wins_when_the_study_offers_it(self):
        assert entry_language(offered=["en", "de"], requested="de", accept="en-GB,en") == "de"

    def test_a_regional_variant_means_its_language(self):
        assert entry_language(offered=["en", "de"], requested="de-AT") == "de"
        assert entry_language(offered=["en", "de"], accept="de-CH;q=0.9,fr;q=1") == "de"

    def test_the_browsers_languages_count_in_their_order_of_preference(self):
        offered = ["en", "de"]
        assert entry_language(offered=offered, accept="fr;q=1,en;q=0.5,de;q=0.8") == "de"
        assert entry_language(offered=offered, accept="fr,en;q=0.9,de;q=0.8") == "en"

    def test_a_language_the_study_does_not_offer_is_ignored(self):
        assert entry_language(offered=["en", "de"], requested="fr", accept="fr,de;q=0.5") == "de"
        assert entry_language(offered=["en"], requested="de", accept="de") == "en"

    def test_without_any_match_the_study_keeps_its_own_language(self):
        assert entry_language(offered=["de", "en"], requested="", accept="") == "de"
        assert entry_language(offered=["de", "en"], accept="fr, *;q=0.1") == "de"

    def test_a_study_offers_its_own_language_then_each_translation(self, german_study):
        assert study_languages(german_study) == ["en", "de"]


class TestEntry:
    def test_the_link_chooses_german_and_every_page_keeps_it(self, german_study):
        client = enter(german_study, "&lang=de")
        assert language_of(german_study, client) == "de"
        html = client.get(client.step_url).content.decode()
        assert '<html lang="de">' in html and "Bitte zustimmen." in html and "Eine Teststudie" in html
        client.post(client.step_url, {"_position": "1", "consent": "yes"})
        html = client.get(client.step_url).content.decode()
        assert "Seite eins" in html and "Wählen Sie eine Farbe" in html and "Schritt 2 von 3" in html

    def test_the_browsers_language_is_used_when_the_link_names_none(self, german_study):
        client = enter(german_study, accept="de-DE,de;q=0.9,en;q=0.5")
        assert language_of(german_study, client) == "de"
        assert "Einwilligung" in client.get(client.step_url).content.decode()

    def test_the_language_is_fixed_at_the_first_entry(self, german_study):
        person = pid()
        first = enter(german_study, "&lang=de", prolific_pid=person)
        again = enter(german_study, "&lang=en", accept="en", prolific_pid=person)
        assert again.step_url == first.step_url
        assert language_of(german_study, again) == "de"
        assert "Bitte zustimmen." in again.get(again.step_url).content.decode()

    def test_a_study_without_translations_stays_in_its_language(self, db):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP])
        client = enter(study, "&lang=de", accept="de")
        assert language_of(study, client) == ""  # nothing to choose, nothing stored: the study's
        html = client.get(client.step_url).content.decode()
        assert '<html lang="en">' in html and "Schritt" not in html

    def test_an_entry_error_is_shown_in_the_chosen_language(self, german_study):
        response = Client().get(f"/s/{german_study.slug}/?lang=de")
        assert response.status_code == 400
        assert "Wir konnten die Studie nicht starten" in response.content.decode()

    def test_the_admin_stays_in_english(self, experimenter, german_study):
        enter(german_study, "&lang=de")
        html = experimenter.get("/admin/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
        assert '<html lang="en"' in html
        assert translation.get_language() == "en"

    def test_the_language_does_not_leak_to_the_next_request(self, german_study):
        client = enter(german_study, "&lang=de")
        client.get(client.step_url)
        assert translation.get_language() == "en"
        other = enter(german_study)
        assert '<html lang="en">' in other.get(other.step_url).content.decode()


class TestStudyTexts:
    def test_untranslated_texts_fall_back_to_the_studys_own(self, german_study):
        debrief = german_study.steps.get(position=3)
        with participant_language("de", "en"):
            assert step_title(debrief) == "Thanks"
            assert registry.get("debrief").config(debrief)["text"] == "Bye."
        StudyTranslation.objects.filter(study=german_study).update(title="")
        assert study_text(german_study, "title", "de") == "A test study"

    def test_a_built_in_button_reads_in_the_language_unless_translated(self, german_study):
        consent = german_study.steps.get(position=1)
        kind = registry.get("consent")
        with participant_language("de", "en"):
            config = kind.config(consent)
        assert config["text"] == "Bitte zustimmen."
        assert config["agree_label"] == "Ich bin mit der Teilnahme einverstanden"
        assert kind.config(consent)["agree_label"] == "I agree to take part"  # outside participant pages

    def test_a_built_in_exit_message_reads_in_the_participants_language(self, german_study):
        with participant_language("de", "en"):
            assert study_text(german_study, "screened_out_message", "de").startswith(
                "Vielen Dank für Ihre Antworten"
            )
        assert study_text(german_study, "screened_out_message", None) == SCREENED_OUT_MESSAGE
        Study.objects.filter(pk=german_study.pk).update(screened_out_message="Our own words.")
        german_study.refresh_from_db()
        with participant_language("de", "en"):
            assert study_text(german_study, "screened_out_message", "de") == "Our own words."

    def test_option_labels_are_translated_but_answers_are_the_studys_options(self, german_study):
        questions = list(german_study.steps.get(position=2).questions.all())
        with participant_language("de", "en"):
            form = QuestionForm(questions, data={"colour": "Blue", "warmth": "40", "warmth__touched": "1"})
            assert list(form.fields["colour"].choices) == [("Red", "Rot"), ("Blue", "Blau")]
            assert form.fields["colour"].label == "Wählen Sie eine Farbe"
            assert form.fields["warmth"].end_labels == ["Cold", "Hot"]  # not translated: the study's own
            assert form.is_valid(), form.errors
        assert [a.value for a in form.answers()] == ["Blue", "40"]

    def test_translated_options_of_another_count_are_not_used(self, german_study):
        row = StepTranslation.objects.get(step__study=german_study, step__position=2)
        row.texts["questions"]["colour"]["options"] = ["Rot"]
        row.save()
        questions = list(german_study.steps.get(position=2).questions.all())
        with participant_language("de", "en"):
            form = QuestionForm(questions)
        assert list(form.fields["colour"].choices) == [("Red", "Red"), ("Blue", "Blue")]

    def test_a_german_walker_stores_the_same_answers_as_an_english_one(self, german_study):
        walker = Walker(german_study)
        walker.client = Client(HTTP_ACCEPT_LANGUAGE="de")
        walker.enter()
        walker.walk({"Seite eins": {"colour": "Blue"}})
        stored = Response.objects.get(participant__prolific_pid=walker.pid, key="colour")
        assert stored.value == "Blue"

    def test_participant_free_text_stays_escaped_in_german(self, german_study):
        StepTranslation.objects.filter(step__study=german_study, step__position=1).update(
            title="<b>Titel</b>"
        )
        client = enter(german_study, "&lang=de")
        html = client.get(client.step_url).content.decode()
        assert "&lt;b&gt;Titel&lt;/b&gt;" in html and "<b>Titel</b>" not in html


class TestFrozenWithTheStudy:
    def test_the_snapshot_carries_the_translations(self, german_study):
        snapshot = study_snapshot(german_study)
        assert snapshot["translations"]["de"]["study"]["title"] == "Eine Teststudie"
        assert snapshot["translations"]["de"]["steps"]["2"]["texts"]["questions"]["colour"]["options"] == [
            "Rot",
            "Blau",
        ]

    def test_a_study_without_translations_keeps_the_snapshot_it_had(self, db):
        snapshot = study_snapshot(build_study([CONSENT_STEP, DEBRIEF_STEP]))
        assert "translations" not in snapshot and "language" not in snapshot["study"]

    def test_a_changed_translation_changes_the_snapshot(self, german_study):
        before = study_snapshot(german_study)
        StepTranslation.objects.filter(step__study=german_study, step__position=1).update(title="Zustimmung")
        assert study_snapshot(german_study) != before

    def test_a_duplicate_keeps_the_translations(self, german_study):
        copy = study_duplicate(study=german_study, slug=f"{german_study.slug}-v2")
        assert study_snapshot(copy)["translations"] == study_snapshot(german_study)["translations"]


def test_the_demo_prints_a_link_in_each_other_language_of_a_study(db):
    import io

    from debates.demo import loader
    from debates.management.commands.load_demo import Command

    study = loader.mystery_study()
    out = io.StringIO()
    Command(stdout=out).print_links("http://127.0.0.1:8000", [study])
    lines = [line for line in out.getvalue().splitlines() if "&lang=" in line]
    assert len(lines) == 1 and lines[0].strip().startswith("In de:") and lines[0].endswith("&lang=de")
