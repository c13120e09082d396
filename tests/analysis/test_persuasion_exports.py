"""Design C's exports: persuasion_dialogues and persuasion_moves for a study (pseudonyms, each
dialogue once, previews left out) and for a model-versus-model batch (`export_csv --batch`)."""

import csv
import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis.access import pseudonym
from analysis.exports import TABLES, codebook_lines, csv_lines
from analysis.exports.persuasion import PERSUASION_DIALOGUES, PERSUASION_MOVES, batch_csv_lines
from tests.support import persuasion_data as pd_
from tests.support.cast import logged_in
from tests.support.downloads import streamed_body

AWKWARD = 'Uniforms cost "a lot", say parents,\nand = fairness matters'


def rows(lines) -> list[dict]:
    return list(csv.DictReader(io.StringIO("".join(lines))))


@pytest.fixture
def study(db):
    return pd_.persuasion_study()


@pytest.fixture
def human_ai(study):
    """A participant (pro) beats an agent (con) who concedes; one sentence of free text with a
    comma, quotes, a newline and a leading '=', one since with premises, one refused move."""
    alice = pd_.person(study, "PROLIFIC-ALICE")
    bot = pd_.agent("bot-a", template_version=3)
    d = pd_.dialogue(pro=alice, con=bot, study=study, winner="pro", delay_min_s=1.5, delay_max_s=4.0)
    d.state = {"moves": [{}, {}, {}, {}, {}], "stores": {"pro": ["A", "B, and C"], "con": ["X"]}}
    d.save()
    t1 = pd_.turn(
        d,
        1,
        "pro",
        [
            pd_.sentence(AWKWARD, "claim"),
            pd_.sentence(
                "Uniforms help because they are cheap.",
                "since",
                proposition="Uniforms help",
                premises=["they are cheap", "they | last"],
            ),
            pd_.sentence(
                "=1+1, I retract nothing.", "retract", legal=False, reason="You are not committed to that."
            ),
        ],
        stores_after={"pro": ["A", AWKWARD], "con": ["X"]},
    )
    t2 = pd_.turn(
        d, 2, "con", [pd_.sentence("I concede.", "concede", target=0, fallback=True)], fallback=True
    )
    pd_.call(d, "0.0125", turn_=t2, template_version=2)
    pd_.call(d, "0.0010", turn_=t1, role="persuasion_classify")
    pd_.call(d, None, error_kind="timeout")
    return d


@pytest.mark.django_db
class TestStudyExports:
    def test_a_dialogue_row_carries_sides_outcome_limits_and_cost(self, study, human_ai):
        (row,) = rows(csv_lines(PERSUASION_DIALOGUES, study, pseudonyms=True))
        assert row["study"] == study.slug and row["dialogue_id"] == str(human_ai.id)
        assert (row["pairing"], row["pro_kind"], row["con_kind"]) == ("human_ai", "human", "agent")
        assert row["pro_participant_id"] == str(human_ai.pro_participant_id)
        assert row["pro_participant"] == pseudonym(study, "PROLIFIC-ALICE")
        assert row["con_participant"] == "" and row["con_agent"] == "bot-a"
        # The version the calls used (2), not the configuration's current one (3).
        assert row["con_template_version"] == "2"
        assert (row["status"], row["outcome"], row["winner"], row["winner_kind"]) == (
            "finished",
            "win",
            "pro",
            "human",
        )
        assert row["loser_agent"] == "bot-a" and row["winner_agent"] == ""
        assert row["end_reason"] == "conceded" and row["turns_played"] == "0"
        assert row["duration_s"] == "120.0" and row["moves"] == "3"
        assert (row["delay_min_s"], row["delay_max_s"]) == ("1.5", "4.0")
        assert row["fallback_turns"] == "1"
        assert (row["llm_calls"], row["llm_failed_calls"]) == ("3", "1")
        assert row["llm_cost_usd"] == "0.013500"  # 0.0125 + 0.0010; the failed call has no cost
        assert (row["tokens_in"], row["tokens_out"]) == ("300", "60")
        assert json.loads(row["pro_store_final"]) == ["A", "B, and C"]

    def test_moves_round_trip_through_a_csv_reader_with_awkward_text(self, study, human_ai):
        moves = rows(csv_lines(PERSUASION_MOVES, study, pseudonyms=True))
        assert [(m["turn"], m["sentence"], m["kind"]) for m in moves] == [
            ("1", "1", "claim"),
            ("1", "2", "since"),
            ("1", "3", "retract"),
            ("2", "1", "concede"),
        ]
        first, since, refused, concede = moves
        assert first["text"] == first["proposition"] == AWKWARD  # commas, quotes, a newline
        assert refused["text"] == "'=1+1, I retract nothing."  # a formula is defused
        assert json.loads(first["pro_store_after"]) == ["A", AWKWARD]
        assert since["premises"] == "they are cheap | they | last"
        assert json.loads(since["premises_json"]) == ["they are cheap", "they | last"]
        assert (refused["legal"], refused["reason"]) == ("0", "You are not committed to that.")
        assert (first["author"], first["participant"], first["agent"]) == (
            "human",
            pseudonym(study, "PROLIFIC-ALICE"),
            "",
        )
        assert (concede["author"], concede["agent"], concede["fallback"], concede["turn_fallback"]) == (
            "agent",
            "bot-a",
            "1",
            "1",
        )
        assert concede["target"] == "0" and first["target"] == "1"
        assert "PROLIFIC-ALICE" not in "".join(csv_lines(PERSUASION_MOVES, study, pseudonyms=False))

    def test_a_human_human_dialogue_is_one_row_and_previews_never_appear(self, study):
        a, b = pd_.person(study, "P-A"), pd_.person(study, "P-B")
        d = pd_.dialogue(
            pro=a, con=b, study=study, status="abandoned", end_reason="partner_left", ended_by="con"
        )
        preview = pd_.person(study, "P-PREVIEW", preview=True)
        pd_.dialogue(pro=preview, con=pd_.agent("bot-a"), study=study, position=3)
        other = pd_.persuasion_study()
        pd_.dialogue(pro=pd_.person(other), con=pd_.agent("bot-a"), study=other)
        (row,) = rows(csv_lines(PERSUASION_DIALOGUES, study, pseudonyms=True))
        assert row["dialogue_id"] == str(d.id) and row["pairing"] == "human_human"
        assert (row["pro_participant"], row["con_participant"]) == (
            pseudonym(study, "P-A"),
            pseudonym(study, "P-B"),
        )
        assert (row["outcome"], row["winner"], row["ended_by"], row["ended_by_kind"]) == (
            "abandoned",
            "",
            "con",
            "human",
        )

    def test_without_the_permission_a_viewer_sees_the_pseudonym_not_the_prolific_id(self, study, human_ai):
        from tests.support.cast import staff_user_without_permissions

        user = staff_user_without_permissions()
        user.user_permissions.add(Permission.objects.get(codename="view_study"))
        client = logged_in(user)
        for name in ("persuasion_dialogues", "persuasion_moves"):
            response = client.get(f"/admin/studies/study/{study.pk}/export/{name}.csv")
            assert response.status_code == 200, name
            body = streamed_body(response)
            assert "PROLIFIC-ALICE" not in body
            assert pseudonym(study, "PROLIFIC-ALICE") in body

    def test_the_tables_are_registered_and_in_the_codebook(self, study, human_ai):
        assert TABLES["persuasion_dialogues"] is PERSUASION_DIALOGUES
        assert TABLES["persuasion_moves"] is PERSUASION_MOVES
        book = rows(codebook_lines())
        described = {(r["table"], r["column"]) for r in book if r["column"]}
        for table in (PERSUASION_DIALOGUES, PERSUASION_MOVES):
            assert {(table.name, c.name) for c in table.columns} <= described
            header = next(csv.reader(io.StringIO(next(csv_lines(table, study)))))
            assert header[:2] == ["study", "study_sha256"]
            assert len(header) == len(set(header))

    def test_an_empty_study_exports_only_the_header(self, study):
        assert len(rows(csv_lines(PERSUASION_DIALOGUES, study))) == 0
        assert len(rows(csv_lines(PERSUASION_MOVES, study))) == 0


@pytest.mark.django_db
class TestBatchExports:
    def test_a_batch_exports_its_dialogues_and_no_other(self, tmp_path):
        run = pd_.batch("mvm-1")
        a, b = pd_.agent("alpha"), pd_.agent("beta")
        d1 = pd_.dialogue(pro=a, con=b, batch=run, winner="con", repeat=1)
        d2 = pd_.dialogue(pro=b, con=a, batch=run, repeat=2)  # a draw
        pd_.dialogue(pro=a, con=b, batch=pd_.batch("mvm-2"), winner="pro")
        pd_.turn(d1, 1, "pro", [pd_.sentence("Why, exactly?", "why")])
        found = rows(batch_csv_lines(PERSUASION_DIALOGUES, run))
        assert [r["dialogue_id"] for r in found] == [str(d1.id), str(d2.id)]
        first, second = found
        assert (first["study"], first["batch"], first["pairing"]) == ("", "mvm-1", "ai_ai")
        assert (first["winner_agent"], first["loser_agent"], first["winner_kind"]) == (
            "beta",
            "alpha",
            "agent",
        )
        assert (second["outcome"], second["end_reason"], second["repeat"]) == ("draw", "turn_limit", "2")
        assert second["llm_cost_usd"] == "" and second["llm_calls"] == "0"

        out = tmp_path / "moves.csv"
        call_command("export_csv", "persuasion_moves", "--batch", "mvm-1", "--out", str(out))
        (move,) = list(csv.DictReader(out.open(encoding="utf-8")))
        assert (move["dialogue_id"], move["kind"], move["agent"], move["batch"]) == (
            str(d1.id),
            "why",
            "alpha",
            "mvm-1",
        )

    def test_the_command_refuses_a_wrong_batch_request(self):
        pd_.batch("mvm-1")
        with pytest.raises(CommandError, match="no model-versus-model batch"):
            call_command("export_csv", "persuasion_dialogues", "--batch", "nope")
        with pytest.raises(CommandError, match="--batch exports one of"):
            call_command("export_csv", "participants", "--batch", "mvm-1")
