"""The CSV exports: tidy rows per design, previews left out, formulas defused, a codebook."""

import csv
import io
import json
import zipfile

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client

from analysis.exports import TABLES
from debates.models import DialogueAssignment
from participants.services import participant_preview
from tests.support.cast import Walker, user_with_password
from tests.support.downloads import streamed_body
from tests.support.studies import build_study


def fetch(client: Client, study, table: str) -> list[dict]:
    response = client.get(f"/admin/studies/study/{study.pk}/export/{table}.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response.streaming
    return list(csv.DictReader(io.StringIO(streamed_body(response))))


def finish(study, answers=None) -> Walker:
    w = Walker(study)
    w.enter()
    w.walk(answers=answers or {})
    return w


@pytest.mark.django_db
class TestExports:
    def test_the_judgement_row_carries_design_choice_and_detection(self, experimenter, mystery_study):
        w = Walker(mystery_study)
        w.enter()
        w.walk(stop_before="Your judgement")
        a = DialogueAssignment.objects.select_related("dialogue").get()
        d = a.dialogue
        w.walk(
            answers={
                "Your judgement": {
                    "side": "B",
                    "confidence": "64",
                    "reasoning": "Side B, because of the ledger.",
                },
                "About the debate": {"present": "yes", "side": "A", "bias_type": "verbosity"},
                "One more question about the debate": {"answer": d.case.recall["answer"]},
            }
        )
        (row,) = fetch(experimenter, mystery_study, "judgements")
        assert row["prolific_pid"] == w.pid
        assert row["dialogue"] == d.slug and row["condition"] == d.condition
        assert row["chosen_side"] == "B" and row["chose_a"] == "0"
        assert row["correct"] == ("1" if d.culprit_side == "B" else "0")
        assert row["confidence"] == "64"
        assert row["signed_active_side"] == str(d.signed_active_side)
        assert row["bias_present"] == "yes" and row["bias_type"] == "verbosity"
        assert row["bias_presence_correct"] == ("1" if d.active_side_letter else "0")
        assert row["recall_passed"] == "1"
        assert row["participant_status"] == "completed"

    def test_participants_and_responses_tables(self, experimenter, questionnaire_study):
        w = finish(questionnaire_study, {"Page two": {"check_1": "Agree"}})
        (p,) = fetch(experimenter, questionnaire_study, "participants")
        assert p["status"] == "completed" and p["excluded"] == "1" and p["exclusion_reasons"] == "attention"
        assert float(p["duration_s"]) >= 0
        responses = fetch(experimenter, questionnaire_study, "responses")
        keys = [r["key"] for r in responses]
        assert keys == ["consent", "colour", "agree", "check_1", "check_2", "age", "warmth", "why"]
        check = next(r for r in responses if r["key"] == "check_1")
        assert (check["is_check"], check["passed"], check["value"]) == ("1", "0", "Agree")
        steps = fetch(experimenter, questionnaire_study, "step_times")
        assert [s["position"] for s in steps] == ["1", "2", "3", "4", "5"]
        assert all(s["participant_id"] == p["participant_id"] for s in steps)
        assert w.exit_url.endswith("CDONE")

    def test_previews_are_never_exported(self, experimenter, questionnaire_study):
        participant_preview(study=questionnaire_study)
        assert fetch(experimenter, questionnaire_study, "participants") == []

    def test_formula_like_text_is_neutralised_for_spreadsheets(self, experimenter, questionnaire_study):
        finish(
            questionnaire_study,
            {"Page three": {"why": '=HYPERLINK("http://x")'}, "Page two": {"check_1": "Disagree"}},
        )
        why = next(r for r in fetch(experimenter, questionnaire_study, "responses") if r["key"] == "why")
        assert why["value"] == '\'=HYPERLINK("http://x")'

    def test_the_codebook_describes_every_column(self, experimenter, questionnaire_study):
        response = experimenter.get("/admin/studies/study/export/codebook.csv")
        rows = list(csv.DictReader(io.StringIO(streamed_body(response))))
        described = {(r["table"], r["column"]) for r in rows if r["column"]}
        expected = {(t.name, c.name) for t in TABLES.values() for c in t.columns}
        assert described == expected
        assert all(r["description"] for r in rows)
        (guard,) = [r["description"] for r in rows if r["table"] == "(every table)"]
        assert "apostrophe" in guard and "=, +, -, @" in guard  # the defused formulas, explained
        # Descriptions are guarded as data: one starting "+1 bias" read #NAME? in a spreadsheet.
        signed = [r for r in rows if r["column"] == "signed_active_side"]
        assert signed and all(r["description"].startswith("'+1") for r in signed)
        assert not any(r["description"][:1] in "=+-@" for r in rows)

    def test_the_command_writes_the_same_csv(self, questionnaire_study, tmp_path):
        finish(questionnaire_study, {"Page two": {"check_1": "Disagree"}})
        out = tmp_path / "participants.csv"
        call_command("export_csv", "participants", "--study", questionnaire_study.slug, "--out", str(out))
        rows = list(csv.DictReader(out.open()))
        assert len(rows) == 1 and rows[0]["status"] == "completed"


@pytest.mark.django_db
class TestStudyExports:
    def test_every_table_starts_with_the_study_and_participants_carry_group_and_browser(
        self, experimenter, questionnaire_study
    ):
        finish(questionnaire_study, {"Page two": {"check_1": "Disagree"}})
        for name in TABLES:
            response = experimenter.get(f"/admin/studies/study/{questionnaire_study.pk}/export/{name}.csv")
            header = next(csv.reader(io.StringIO(streamed_body(response))))
            assert header[0] == "study", name
        (p,) = fetch(experimenter, questionnaire_study, "participants")
        assert p["study"] == questionnaire_study.slug
        assert p["group"] == "" and "user_agent" in p  # no screening step, and the test client's agent
        assert all(
            r["study"] == questionnaire_study.slug
            for r in fetch(experimenter, questionnaire_study, "responses")
        )

    def test_the_study_codebook_explains_its_own_items(self, experimenter, questionnaire_study):
        response = experimenter.get(f"/admin/studies/study/{questionnaire_study.pk}/export/codebook.csv")
        rows = list(csv.DictReader(io.StringIO(streamed_body(response))))
        items = {r["column"]: r["description"] for r in rows if r["table"] == "responses"}
        assert "1 = No; 2 = Meh; 3 = Yes" in items["agree"]  # Likert: the numeric coding
        assert "Red; Blue" in items["colour"]
        assert "attention check, passed when the answer is one of: Disagree" in items["check_1"]
        assert "18 to 99" in items["age"] and "at least 10 characters" in items["why"]
        assert "yes if the participant agreed" in items["consent"]

    def test_the_codebook_names_the_text_a_specify_option_opens(self, experimenter):
        """responses.csv held `gender_specify` rows the codebook never mentioned (the researcher walk)."""
        gender = {
            "key": "gender",
            "kind": "single_choice",
            "text": "Gender?",
            "options": ["Woman", "Man", "Prefer to self-describe"],
            "specify_option": "Prefer to self-describe",
        }
        study = build_study([{"kind": "questionnaire", "title": "About you", "questions": [gender]}])
        response = experimenter.get(f"/admin/studies/study/{study.pk}/export/codebook.csv")
        rows = list(csv.DictReader(io.StringIO(streamed_body(response))))
        items = {r["column"]: r["description"] for r in rows if r["table"] == "responses"}
        assert list(items)[-2:] == ["gender", "gender_specify"]
        assert "the box 'Prefer to self-describe' of 'gender' opens" in items["gender_specify"]

    def test_the_bundle_holds_every_table_the_codebook_and_the_configuration(
        self, experimenter, mystery_study, tmp_path
    ):
        finish(mystery_study)
        response = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/export/bundle.zip")
        assert response["Content-Type"] == "application/zip" and response.streaming
        body = b"".join(
            async_to_sync(_collect)(response) if response.is_async else response.streaming_content
        )
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            names = set(archive.namelist())
            assert names == {f"{t}.csv" for t in TABLES} | {"codebook.csv", "study.json"}
            judgements = list(csv.DictReader(io.StringIO(archive.read("judgements.csv").decode())))
            config = json.loads(archive.read("study.json"))
        assert len(judgements) == 1 and judgements[0]["study"] == mystery_study.slug
        assert config["slug"] == mystery_study.slug and len(config["dialogues"]) == 10
        assert [s["kind"] for s in config["steps"]][:4] == ["consent", "instructions", "story", "dialogue"]
        out = tmp_path / "bundle.zip"
        call_command("export_csv", "--bundle", "--study", mystery_study.slug, "--out", str(out))
        with zipfile.ZipFile(out) as archive:
            assert set(archive.namelist()) == names

    def test_without_the_permission_prolific_ids_are_pseudonyms_that_still_join(self, mystery_study):
        analyst = user_with_password("analyst", is_staff=True)
        analyst.user_permissions.add(Permission.objects.get(codename="view_study"))
        client = Client()
        client.force_login(analyst)
        w = finish(mystery_study)
        participants, judgements = (
            fetch(client, mystery_study, "participants"),
            fetch(client, mystery_study, "judgements"),
        )
        assert participants[0]["prolific_pid"] != w.pid and participants[0]["prolific_pid"].startswith("p-")
        assert participants[0]["prolific_pid"] == judgements[0]["prolific_pid"]  # the same pseudonym
        assert w.pid not in streamed_body(
            client.get(f"/admin/studies/study/{mystery_study.pk}/export/participants.csv")
        )
        analyst.user_permissions.add(Permission.objects.get(codename="view_prolific_ids"))
        client.force_login(User.objects.get(pk=analyst.pk))
        assert fetch(client, mystery_study, "participants")[0]["prolific_pid"] == w.pid

    def test_pseudonyms_outlive_a_new_secret_key_when_their_own_key_is_set(self, mystery_study, settings):
        """Rotating SECRET_KEY (after a leak) gave every participant a new pseudonym: downloads
        made before and after no longer joined."""
        from analysis.access import pseudonym

        settings.PSEUDONYM_KEY = settings.SECRET_KEY
        before = pseudonym(mystery_study, "PID1")
        settings.SECRET_KEY = "another-" + settings.SECRET_KEY
        assert pseudonym(mystery_study, "PID1") == before
        settings.PSEUDONYM_KEY = "a-key-of-its-own-" + "x" * 40
        assert pseudonym(mystery_study, "PID1") not in (before, "")

    def test_a_viewer_of_one_study_sees_only_that_study(self, mystery_study, questionnaire_study):
        viewer = user_with_password("viewer", is_staff=True)
        questionnaire_study.viewers.add(viewer)
        client = Client()
        client.force_login(viewer)
        assert (
            client.get(f"/admin/studies/study/{questionnaire_study.pk}/export/participants.csv").status_code
            == 200
        )
        assert client.get(f"/admin/studies/study/{questionnaire_study.pk}/overview/").status_code == 200
        assert (
            client.get(f"/admin/studies/study/{mystery_study.pk}/export/participants.csv").status_code == 404
        )
        assert client.get(f"/admin/studies/study/{mystery_study.pk}/overview/").status_code == 404


async def _collect(response) -> list[bytes]:
    return [chunk async for chunk in response.streaming_content]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "study_fixture, names",
    [
        ("mystery_study", ["participants", "responses", "step_times", "judgements", "draws"]),
        ("pairs_study", ["comparisons"]),
    ],
)
def test_a_window_of_a_table_holds_the_rows_of_the_whole_table_cut_the_same_way(
    request, study_fixture, names
):
    """The API's pages read a window of these tables with LIMIT and OFFSET (`Table.windowed`)."""
    study = request.getfixturevalue(study_fixture)
    for _ in range(3):
        finish(study)
    for name in names:
        table = TABLES[name]
        assert table.windowed, name
        whole = [[c.get(r) for c in table.columns] for r in table.rows_for(study)]
        n = len(whole)
        assert n >= 3, name
        for window in [
            slice(0, 2),
            slice(1, n - 1),
            slice(n - 2, n + 5),
            slice(n, n + 1),
            slice(n + 3, n + 9),
        ]:
            assert [[c.get(r) for c in table.columns] for r in table.rows_for(study, window)] == whole[window]


@pytest.mark.django_db
def test_the_export_page_puts_the_studys_own_tables_first(experimenter):
    """Every design's tables were listed alike for every study, headers only for most (the
    researcher walk): the others are folded away below, still downloadable."""
    from debates.demo import loader

    for study, ours, others in [
        (
            loader.mystery_study(),
            {"participants", "responses", "judgements", "llm_judgements"},
            {"comparisons"},
        ),
        (loader.pairs_study(), {"participants", "comparisons", "draws"}, {"judgements", "claim_judgements"}),
        (
            loader.claim_study(),
            {"claim_judgements", "live_turns", "llm_persona_judgements"},
            {"persuasion_moves"},
        ),
    ]:
        page = experimenter.get(f"/admin/studies/study/{study.pk}/export/").content.decode()
        main, folded = page.split('<details id="other-designs">')
        for name in ours:
            assert f"{name}.csv</a></h2>" in main, (study.slug, name)
        for name in others:
            assert f"{name}.csv</a>" in folded and f"{name}.csv</a></h2>" not in main, (study.slug, name)
