"""Design C's report: results.json sections, tables and plots; `manage.py analyze <study>` on a
study with a persuasion step and `analyze --from-csv DIR --design C` agree; data the report
has never seen (no dialogues, only draws, one agent, no comparisons.csv) give a section that
says so instead of a crash."""

import csv
import io
import json

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis.exports import csv_lines
from analysis.exports.persuasion import PERSUASION_DIALOGUES, PERSUASION_MOVES, batch_csv_lines
from analysis.metrics import report
from tests.support import persuasion_data as pd_

C_KEYS = {
    "design",
    "settings",
    "n",
    "exclusion_flow",
    "fill",
    "outcomes",
    "agents",
    "human_vs_ai",
    "moves",
    "logical_ranking",
    "crowd_ranking",
    "ranking_agreement",
    "self_play",
    "skipped",
    "warnings",
    "tables",
}
C_TABLES = {
    "fill",
    "outcomes_by_pairing",
    "end_reasons",
    "outcomes_by_agent",
    "human_vs_ai",
    "move_kinds",
    "logical_ranking",
    "logical_win_matrix",
    "logical_vs_crowd",
}


def frame(lines) -> pd.DataFrame:
    return pd.read_csv(io.StringIO("".join(lines)), dtype=str, keep_default_na=False, na_values=[""])


def mvm_rows(outcomes: list[tuple[str, str, str]]) -> pd.DataFrame:
    """Model-versus-model dialogues as the export writes them: (pro, con, winner side or '')."""
    return pd.DataFrame(
        [
            {
                "dialogue_id": str(n),
                "batch": "b",
                "topic": "t",
                "pairing": "ai_ai",
                "pro_kind": "agent",
                "con_kind": "agent",
                "pro_agent": pro,
                "con_agent": con,
                "status": "finished",
                "outcome": "win" if winner else "draw",
                "winner": winner,
                "end_reason": "conceded" if winner else "turn_limit",
            }
            for n, (pro, con, winner) in enumerate(outcomes, start=1)
        ]
    )


def crowd(order: list[str]) -> pd.DataFrame:
    rows = []
    for i, better in enumerate(order):
        for worse in order[i + 1 :]:
            for _ in range(3):
                rows.append(
                    {
                        "participant_id": str(len(rows) + 1),
                        "participant_status": "completed",
                        "excluded": "0",
                        "valid": "1",
                        "is_check": "0",
                        "instance_set": "s",
                        "instance": str(len(rows) + 1),
                        "interlocutor_1": better,
                        "interlocutor_2": worse,
                        "winner": "1",
                    }
                )
    return pd.DataFrame(rows)


def table(results: dict, key: str) -> dict:
    return next(t for t in results["tables"] if t["key"] == key)


class TestAnalyzeDesignC:
    def test_model_versus_model_ranking_beside_the_crowd(self):
        dialogues = mvm_rows(
            [("alpha", "beta", "pro")] * 3
            + [("beta", "gamma", "pro")] * 3
            + [("alpha", "gamma", "pro")] * 2
            + [("gamma", "alpha", "")]
        )
        results = report.analyze(
            {"persuasion_dialogues": dialogues, "comparisons": crowd(["beta", "alpha", "gamma"])},
            "C",
            bootstrap=50,
        )
        assert set(results) >= C_KEYS and {t["key"] for t in results["tables"]} == C_TABLES
        assert results["logical_ranking"]["ranking"] == ["alpha", "beta", "gamma"]
        assert results["logical_ranking"]["draws_counted"] == 1
        assert results["crowd_ranking"]["ranking"] == ["beta", "alpha", "gamma"]
        agreement = results["ranking_agreement"]
        assert agreement["n"] == 3 and agreement["kendall_tau_distance"] == pytest.approx(1 / 3)
        assert "Kendall" in table(results, "logical_vs_crowd")["note"]
        assert results["outcomes"]["overall"]["win"] == 8 and results["outcomes"]["overall"]["draw"] == 1
        json.dumps(results)  # JSON-safe
        assert results == report.analyze(
            {"persuasion_dialogues": dialogues, "comparisons": crowd(["beta", "alpha", "gamma"])},
            "C",
            bootstrap=50,
        )
        pictures = report.figures(results)
        assert {"outcomes", "strengths"} <= set(pictures)
        assert all(png.startswith(b"\x89PNG") for png in pictures.values())

    def test_draws_left_out_by_option(self):
        dialogues = mvm_rows([("alpha", "beta", "pro"), ("alpha", "beta", ""), ("beta", "alpha", "")])
        results = report.analyze(
            {"persuasion_dialogues": dialogues}, "C", bootstrap=0, options={"draws": "exclude"}
        )
        assert results["settings"]["options"]["draws"] == "exclude"
        assert results["logical_ranking"]["dialogues"] == 1
        with pytest.raises(ValueError, match="draws"):
            report.analyze({"persuasion_dialogues": dialogues}, "C", options={"draws": "maybe"})

    @pytest.mark.parametrize(
        ("dialogues", "skipped"),
        [
            (pd.DataFrame(columns=["dialogue_id", "pairing", "status", "winner"]), "logical_ranking"),
            (mvm_rows([("alpha", "beta", "")] * 2), "crowd_ranking"),
            (mvm_rows([("alpha", "alpha", "pro")] * 2), "logical_ranking"),
        ],
        ids=["no dialogues", "only draws", "one agent"],
    )
    def test_data_never_seen_gives_sections_that_say_so(self, dialogues, skipped):
        results = report.analyze({"persuasion_dialogues": dialogues}, "C", bootstrap=20)
        assert skipped in results["skipped"]
        assert "crowd_ranking" in results["skipped"] and results["ranking_agreement"] is None
        assert {t["key"] for t in results["tables"]} == C_TABLES
        assert table(results, "logical_vs_crowd")["note"].startswith("No comparison")
        report.figures(results)
        json.dumps(results)

    @pytest.mark.parametrize("column", ["topic", "pairing"])
    def test_a_dialogues_table_without_a_descriptive_column_is_analysed(self, column):
        """An analyst's own table may lack the topic or the pairing (a merged or trimmed file):
        the fill table shows it blank; it was a KeyError."""
        dialogues = mvm_rows([("alpha", "beta", "pro")] * 3 + [("beta", "alpha", "")])
        assert column in dialogues.columns
        whole = report.analyze({"persuasion_dialogues": dialogues}, "C", bootstrap=10)
        results = report.analyze(
            {"persuasion_dialogues": dialogues.drop(columns=[column])}, "C", bootstrap=10
        )
        assert [f[column] for f in results["fill"]] == [""]
        counts = [(f["dialogues"], f["ended"]) for f in results["fill"]]
        assert counts == [(f["dialogues"], f["ended"]) for f in whole["fill"]] == [(4, 4)]
        assert results["logical_ranking"] == whole["logical_ranking"]

    def test_only_draws_with_draws_left_out_says_why(self):
        results = report.analyze(
            {"persuasion_dialogues": mvm_rows([("alpha", "beta", "")] * 2)},
            "C",
            options={"draws": "exclude"},
        )
        assert "draws are left out" in results["skipped"]["logical_ranking"]
        assert results["logical_ranking"] is None

    def test_the_dialogues_table_is_required(self):
        with pytest.raises(ValueError, match="persuasion_dialogues"):
            report.analyze({"comparisons": crowd(["a", "b"])}, "C")


@pytest.mark.django_db
class TestReports:
    def build(self):
        study = pd_.persuasion_study()
        bot, sage = pd_.agent("bot"), pd_.agent("sage")
        people = [pd_.person(study, f"PID-{n}") for n in range(5)]
        d1 = pd_.dialogue(pro=people[0], con=bot, study=study, winner="pro")
        pd_.turn(d1, 1, "pro", [pd_.sentence('Uniforms, "sadly", cost\nmoney.', "claim")])
        pd_.turn(d1, 2, "con", [pd_.sentence("Why?", "why"), pd_.sentence("I concede.", "concede", target=0)])
        pd_.dialogue(pro=bot, con=people[1], study=study, winner="pro")
        pd_.dialogue(pro=people[2], con=sage, study=study)
        pd_.dialogue(pro=people[3], con=people[4], study=study, winner="con")
        return study

    def test_a_study_report_and_the_same_analysis_of_its_csvs_agree(self, tmp_path):
        study = self.build()
        out = tmp_path / "report"
        call_command("analyze", study.slug, "--out", str(out), stdout=io.StringIO())
        results = json.loads((out / "results.json").read_text())
        assert results["design"] == "C" and results["n"]["dialogues"] == 4
        assert results["n"]["participants"] == 5 and results["n"]["sentences"] == 3
        bot = next(h for h in results["human_vs_ai"] if h["agent"] == "bot")
        assert (bot["human_wins"], bot["agent_wins"], bot["human_win_rate"]["p"]) == (1, 1, 0.5)
        assert "no finished model-versus-model" in results["skipped"]["logical_ranking"]
        page = (out / "report.html").read_text()
        assert "Formal persuasion dialogues" in page and 'src="figures/human_vs_ai.png"' in page
        assert "Human versus AI" in page
        assert {"persuasion_dialogues.csv", "persuasion_moves.csv"} <= {p.name for p in out.iterdir()}
        assert "PID-0" not in (out / "persuasion_dialogues.csv").read_text()
        again = tmp_path / "again"
        call_command(
            "analyze", "--from-csv", str(out), "--design", "C", "--out", str(again), stdout=io.StringIO()
        )
        assert (again / "results.json").read_text() == (out / "results.json").read_text()

    def test_a_batch_exported_and_analysed_with_a_crowd(self, tmp_path):
        run = pd_.batch("mvm")
        a, b, c = pd_.agent("a"), pd_.agent("b"), pd_.agent("c")
        for pro, con, winner in [(a, b, "pro"), (b, a, "con"), (b, c, "pro"), (c, b, "con"), (a, c, "pro")]:
            pd_.dialogue(pro=pro, con=con, batch=run, winner=winner)
        data = tmp_path / "data"
        data.mkdir()
        for t in (PERSUASION_DIALOGUES, PERSUASION_MOVES):
            (data / f"{t.name}.csv").write_text("".join(batch_csv_lines(t, run)), encoding="utf-8")
        crowd(["c", "b", "a"]).to_csv(data / "comparisons.csv", index=False)
        call_command(
            "analyze", "--from-csv", str(data), "--design", "C", "--out", str(data), stdout=io.StringIO()
        )
        results = json.loads((data / "results.json").read_text())
        assert results["logical_ranking"]["ranking"] == ["a", "b", "c"]
        assert results["crowd_ranking"]["ranking"] == ["c", "b", "a"]
        assert results["ranking_agreement"]["kendall_tau_distance"] == 1
        assert (data / "figures" / "strengths.png").read_bytes().startswith(b"\x89PNG")
        assert results["n"]["batches"] == ["mvm"]

    def test_an_empty_study_and_a_folder_without_dialogues(self, tmp_path):
        study = pd_.persuasion_study()
        out = tmp_path / "empty"
        call_command("analyze", study.slug, "--out", str(out), stdout=io.StringIO())
        results = json.loads((out / "results.json").read_text())
        assert results["n"]["dialogues"] == 0 and results["skipped"]["outcomes"] == "no dialogues"
        assert rows_of(csv_lines(PERSUASION_DIALOGUES, study)) == []
        nothing = tmp_path / "nothing"
        nothing.mkdir()
        with pytest.raises(CommandError, match="persuasion_dialogues"):
            call_command("analyze", "--from-csv", str(nothing), "--design", "C", stdout=io.StringIO())


def rows_of(lines) -> list[dict]:
    return list(csv.DictReader(io.StringIO("".join(lines))))


def test_a_crowd_file_that_cannot_be_used_skips_the_crowd_ranking_only():
    """comparisons.csv is optional in design C: without its winner column the crowd's ranking
    says why it was not computed, and the rest of the report is made (it stopped the report)."""
    dialogues = mvm_rows([("alpha", "beta", "pro")] * 3 + [("beta", "gamma", "pro")] * 3)
    broken = crowd(["alpha", "beta", "gamma"]).drop(columns=["winner"])
    results = report.analyze({"persuasion_dialogues": dialogues, "comparisons": broken}, "C", bootstrap=10)
    assert results["crowd_ranking"] is None and "'winner'" in results["skipped"]["crowd_ranking"]
    assert results["logical_ranking"]["ranking"] == ["alpha", "beta", "gamma"]


def moves_of(rows: list[tuple[str, str]]) -> pd.DataFrame:
    """Sentences as the export writes them: (author, kind), one turn each, all legal."""
    return pd.DataFrame(
        [
            {"dialogue_id": "1", "turn": str(n), "author": author, "kind": kind, "legal": "1"}
            for n, (author, kind) in enumerate(rows, start=1)
        ]
    )


def test_a_move_kind_the_export_never_writes_gets_its_row_in_the_table():
    """A hand-coded kind ('assert') used by one author only was a KeyError: the table has a
    row per kind and a column per author, and the other author had no cell for it."""
    moves = moves_of([("human", "claim"), ("human", "assert"), ("agent", "why"), ("agent", "claim")])
    results = report.analyze(
        {"persuasion_dialogues": mvm_rows([("alpha", "beta", "pro")]), "persuasion_moves": moves},
        "C",
        bootstrap=10,
    )
    kinds = table(results, "move_kinds")
    assert ["assert", "50.0", "0.0"] in [[str(c) for c in row] for row in kinds["rows"]]


def test_a_win_that_names_no_side_is_in_no_agents_record_and_no_ranking_and_is_said():
    """An outcome 'win' with a blank or foreign winner was a loss for both seats and a con win
    in the ranking."""
    known = [("alpha", "beta", "pro")] * 3 + [("beta", "alpha", "pro")] * 2
    whole = report.analyze({"persuasion_dialogues": mvm_rows(known)}, "C", bootstrap=10)
    odd = mvm_rows(known + [("alpha", "beta", "pro")] * 2)
    odd.loc[odd.index[-2:], "winner"] = ["", "proponent"]
    results = report.analyze({"persuasion_dialogues": odd}, "C", bootstrap=10)
    assert results["warnings"] == [
        "2 dialogues won without a side in `winner` (pro or con): counted as won in the outcomes, "
        "left out of every agent's record and of the rankings."
    ]
    records = {a["agent"]: (a["won"], a["lost"]) for a in results["agents"]}
    assert (
        records
        == {a["agent"]: (a["won"], a["lost"]) for a in whole["agents"]}
        == {
            "alpha": (3, 2),
            "beta": (2, 3),
        }
    )
    assert results["logical_ranking"] == whole["logical_ranking"]
    assert results["outcomes"]["overall"]["win"] == 7 and whole["warnings"] == []


@pytest.mark.parametrize(
    ("table_name", "rename", "message"),
    [
        ("persuasion_dialogues", {"outcome": "Outcome", "status": "Status"}, "there is 'Status'"),
        ("persuasion_moves", {"author": "Author"}, "'persuasion_moves' has no column 'author'"),
        ("persuasion_moves", {"kind": "move"}, "'persuasion_moves' has no column 'kind'"),
        # One seat's column without the other's counted every agent on the con side only.
        ("persuasion_dialogues", {"pro_agent": "dropped"}, "no column 'pro_agent'"),
    ],
)
def test_design_c_without_the_columns_its_figures_need_is_refused(table_name, rename, message):
    """Headers a spreadsheet re-capitalised made every dialogue open and every sentence of an
    unknown author, without a word; designs A, B and D refuse such files."""
    tables = {
        "persuasion_dialogues": mvm_rows([("alpha", "beta", "pro")]),
        "persuasion_moves": moves_of([("agent", "claim")]),
    }
    tables[table_name] = tables[table_name].rename(columns=rename)
    with pytest.raises(ValueError, match=message):
        report.analyze(tables, "C", bootstrap=10)


def test_two_studies_moves_merged_count_each_studys_turns():
    """Dialogue ids start again in each study: turns were counted by (dialogue, turn) alone, so
    two studies' merged moves had half their turns."""
    moves = moves_of([("human", "claim"), ("agent", "why"), ("human", "claim")])
    one = report.analyze(
        {"persuasion_dialogues": mvm_rows([("alpha", "beta", "pro")]), "persuasion_moves": moves},
        "C",
        bootstrap=10,
    )
    both = report.analyze(
        {
            "persuasion_dialogues": pd.concat(
                [mvm_rows([("alpha", "beta", "pro")]).assign(study=s) for s in ("s1", "s2")],
                ignore_index=True,
            ),
            "persuasion_moves": pd.concat([moves.assign(study=s) for s in ("s1", "s2")], ignore_index=True),
        },
        "C",
        bootstrap=10,
    )
    turns = {a["author"]: a["turns"] for a in one["moves"]["by_author"]}
    assert turns == {"human": 2, "agent": 1}
    assert {a["author"]: a["turns"] for a in both["moves"]["by_author"]} == {"human": 4, "agent": 2}


def test_the_crowds_ranking_leaves_out_self_pairs_and_ranks_nobody_without_a_counted_comparison():
    """As design D's ranking does: an interlocutor compared with itself counted its own wins
    (the win matrix's diagonal), and one whose every comparison was invalid was ranked by the
    regularisation alone, shifting the others' ranks; both were silent."""
    dialogues = mvm_rows([("alpha", "beta", "pro")] * 3 + [("beta", "gamma", "pro")] * 3)
    clean = crowd(["alpha", "beta", "gamma"])
    extra = clean.head(4).copy()
    extra["interlocutor_1"] = ["beta", "beta", "zeta", "zeta"]
    extra["interlocutor_2"] = ["beta", "beta", "alpha", "gamma"]
    extra.loc[extra.index[2:], "valid"] = "0"
    mixed = pd.concat([clean, extra], ignore_index=True)
    whole = report.analyze({"persuasion_dialogues": dialogues, "comparisons": clean}, "C", bootstrap=10)
    results = report.analyze({"persuasion_dialogues": dialogues, "comparisons": mixed}, "C", bootstrap=10)
    assert results["crowd_ranking"]["labels"] == ["alpha", "beta", "gamma"]
    assert results["crowd_ranking"]["win_matrix"] == whole["crowd_ranking"]["win_matrix"]
    assert results["crowd_ranking"]["strengths"] == whole["crowd_ranking"]["strengths"]
    assert results["crowd_ranking"]["comparisons"] == whole["crowd_ranking"]["comparisons"] == len(clean)
    assert [w.split(":")[1].strip()[:20] for w in results["warnings"]] == [
        "2 comparison(s) of a",
        "Not ranked",
    ]
    assert "zeta" in results["warnings"][1] and whole["warnings"] == []


def test_no_agreement_is_computed_with_a_ranking_that_ties_everyone():
    """Every dialogue a draw: all agents tie, and the agreement with the crowd was reported as
    a disagreement (Kendall distance 0.5) of a ranking that has no order."""
    dialogues = mvm_rows([("alpha", "beta", ""), ("beta", "gamma", ""), ("gamma", "alpha", "")] * 2)
    tables = {"persuasion_dialogues": dialogues, "comparisons": crowd(["alpha", "beta", "gamma"])}
    results = report.analyze(tables, "C", bootstrap=10)
    ranks = {s["rank"] for s in results["logical_ranking"]["strengths"].values()}
    assert len(ranks) == 1 and results["crowd_ranking"] is not None
    assert results["ranking_agreement"] is None
    why = results["skipped"]["ranking_agreement"]
    assert why == "the logical ranking ties every agent: no order to compare"
