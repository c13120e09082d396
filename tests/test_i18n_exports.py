"""The participants export says which language each participant took the study in (the
`language` column): the language fixed at entry, else the study's own; and the codebook
describes the column."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command
from django.test import Client

from analysis.exports import TABLES
from participants.models import Participant
from studies.models import StudyTranslation
from tests.support.cast import Walker, entry_url
from tests.support.downloads import streamed_body
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study


def export(client: Client, study, table: str) -> list[dict]:
    response = client.get(f"/admin/studies/study/{study.pk}/export/{table}.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(streamed_body(response))))


def entered(study, accept_language: str, lang: str = "") -> Walker:
    walker = Walker(study, client=Client(HTTP_ACCEPT_LANGUAGE=accept_language))
    if lang:
        response = walker.client.get(f"{entry_url(study, walker.pid)}&lang={lang}")
        assert response.status_code == 302
        walker.url = response["Location"]
    else:
        walker.enter()
    walker.walk(answers={"Page two": {"check_1": "Disagree"}})  # an attentive participant
    return walker


@pytest.mark.django_db
def test_the_participants_export_gives_each_participants_language(experimenter):
    study = build_study(QUESTIONNAIRE_STEPS)
    StudyTranslation.objects.create(study=study, language="de")
    by_browser = entered(study, "de-AT,de;q=0.9")
    by_link = entered(study, "en-GB", lang="de")
    english = entered(study, "en-US,en;q=0.8")
    before = entered(study, "de")
    Participant.objects.filter(prolific_pid=before.pid).update(language="")  # entered before languages
    rows = {r["prolific_pid"]: r for r in export(experimenter, study, "participants")}
    assert {pid: rows[pid]["language"] for pid in rows} == {
        by_browser.pid: "de",
        by_link.pid: "de",
        english.pid: "en",
        before.pid: "en",  # the study's own
    }
    assert all(r["status"] == "completed" for r in rows.values())
    # The answers are stored the same in either language.
    values = {
        r["prolific_pid"]: r["value"]
        for r in export(experimenter, study, "responses")
        if r["key"] == "consent"
    }
    assert len(set(values.values())) == 1


@pytest.mark.django_db
def test_a_study_in_one_language_exports_its_own(experimenter, tmp_path):
    study = build_study(QUESTIONNAIRE_STEPS, language="de")
    walker = entered(study, "en-GB")  # the browser's English is not offered: the study's German
    assert Participant.objects.get(prolific_pid=walker.pid).language == ""  # nothing stored
    (row,) = export(experimenter, study, "participants")
    assert row["language"] == "de"
    out = tmp_path / "participants.csv"
    call_command("export_csv", "participants", "--study", study.slug, "--out", str(out))
    assert [r["language"] for r in csv.DictReader(out.open())] == ["de"]


@pytest.mark.django_db
def test_the_codebook_describes_the_language_column(experimenter):
    assert "language" in [c.name for c in TABLES["participants"].columns]
    study = build_study(QUESTIONNAIRE_STEPS)
    response = experimenter.get(f"/admin/studies/study/{study.pk}/export/codebook.csv")
    rows = list(csv.DictReader(io.StringIO(streamed_body(response))))
    (described,) = [r for r in rows if (r["table"], r["column"]) == ("participants", "language")]
    assert "e.g. en, de" in described["description"]
