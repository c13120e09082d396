"""The experimenter translates a study in the admin: one page per language with every text
participants read beside the study's own, plain fields only, frozen with the study."""

from __future__ import annotations

import pytest
from django.test import Client

from studies.models import StepTranslation, StudyTranslation
from studies.services import study_set_status
from tests.support.cast import entry_url
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

CHOICE_STEP = {
    "kind": "questionnaire",
    "title": "Colours",
    "questions": [
        {"key": "colour", "kind": "single_choice", "text": "Pick a colour", "options": ["Red", "Blue"]}
    ],
}


@pytest.fixture
def draft(db):
    return build_study([CONSENT_STEP, CHOICE_STEP, DEBRIEF_STEP], status="draft")


def german_page(study, **fields) -> dict:
    return {
        "study": study.pk,
        "language": "de",
        "title": "Eine Studie",
        "screened_out_message": "",
        "failed_check_message": "",
        "s1_title": "Einwilligung",
        "s1_config_text": "Bitte stimmen Sie zu.",
        "s2_title": "Farben",
        "s2_q_colour_text": "Wählen Sie eine Farbe",
        "s2_q_colour_options": "Rot\nBlau",
        **fields,
    }


def test_the_study_page_links_to_adding_a_language(experimenter, draft):
    html = experimenter.get(f"/admin/studies/study/{draft.pk}/change/").content.decode()
    assert f"/admin/studies/studytranslation/add/?study={draft.pk}" in html


def test_the_language_page_shows_every_text_beside_the_studys_own(experimenter, draft):
    html = experimenter.get(f"/admin/studies/studytranslation/add/?study={draft.pk}").content.decode()
    for name in (
        "s1_config_text",
        "s1_config_agree_label",
        "s2_q_colour_text",
        "s2_q_colour_options",
        "s3_title",
    ):
        assert f'name="{name}"' in html
    assert "Own text: Please agree." in html and "Red / Blue" in html
    assert 'value="en"' not in html.split('name="language"')[1].split("</select>")[0]


def test_saving_the_page_stores_the_texts_participants_then_read(experimenter, draft):
    response = experimenter.post(f"/admin/studies/studytranslation/add/?study={draft.pk}", german_page(draft))
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert StudyTranslation.objects.get(study=draft).title == "Eine Studie"
    colours = StepTranslation.objects.get(step__study=draft, step__position=2, language="de")
    assert colours.texts["questions"]["colour"] == {
        "text": "Wählen Sie eine Farbe",
        "help_text": "",
        "options": ["Rot", "Blau"],
    }
    study_set_status(study=draft, status="live")
    client = Client()
    location = client.get(entry_url(draft) + "&lang=de")["Location"]
    assert "Bitte stimmen Sie zu." in client.get(location).content.decode()


def test_options_of_another_count_are_refused(experimenter, draft):
    data = german_page(draft, s2_q_colour_options="Rot\nBlau\nGrün")
    response = experimenter.post(f"/admin/studies/studytranslation/add/?study={draft.pk}", data)
    assert response.status_code == 200
    assert "Give 2 options, one per line, or none." in response.content.decode()
    assert not StudyTranslation.objects.exists()


def test_the_studys_own_language_cannot_be_added_as_a_translation(experimenter, draft):
    response = experimenter.post(
        f"/admin/studies/studytranslation/add/?study={draft.pk}", german_page(draft, language="en")
    )
    assert response.status_code == 200 and not StudyTranslation.objects.exists()


def test_a_live_study_s_texts_are_frozen(experimenter, draft):
    experimenter.post(f"/admin/studies/studytranslation/add/?study={draft.pk}", german_page(draft))
    row = StudyTranslation.objects.get(study=draft)
    study_set_status(study=draft, status="live")
    html = experimenter.get(f"/admin/studies/study/{draft.pk}/change/").content.decode()
    assert "Add a language" not in html and f"/admin/studies/studytranslation/{row.pk}/change/" in html
    experimenter.post(f"/admin/studies/studytranslation/{row.pk}/change/", german_page(draft, title="Anders"))
    assert StudyTranslation.objects.get(pk=row.pk).title == "Eine Studie"
    assert (
        experimenter.post(
            f"/admin/studies/studytranslation/add/?study={draft.pk}", german_page(draft)
        ).status_code
        == 403
    )
