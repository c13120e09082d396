"""Design C's statistics, checked against hand computations: outcome rates with Wilson
intervals, per-agent and human-versus-AI rates, move kinds, the logical Bradley-Terry ranking
(draws counted half or left out) and its agreement with the crowd's."""

import math

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import persuasion

COLUMNS = ["dialogue_id", "pairing", "pro_agent", "con_agent", "pro_participant_id", "con_participant_id"]


def dialogues(rows: list[tuple]) -> pd.DataFrame:
    """rows: (pro, con, status, winner[, end_reason]) where a side is an agent name or 'H<n>' for a
    participant with id n."""
    out = []
    for n, row in enumerate(rows, start=1):
        pro, con, status, winner = row[:4]
        reason = row[4] if len(row) > 4 else ("conceded" if winner else "turn_limit")
        sides = {}
        for side, who in (("pro", pro), ("con", con)):
            human = who.startswith("H")
            sides[f"{side}_agent"] = None if human else who
            sides[f"{side}_participant_id"] = int(who[1:]) if human else None
            sides[f"{side}_kind"] = "human" if human else "agent"
        kinds = {sides["pro_kind"], sides["con_kind"]}
        pairing = "ai_ai" if kinds == {"agent"} else "human_human" if kinds == {"human"} else "human_ai"
        out.append(
            {
                "dialogue_id": n,
                "topic": "t",
                "pairing": pairing,
                **sides,
                "status": status,
                "winner": winner or None,
                "end_reason": reason if status != "running" else None,
            }
        )
    return persuasion.typed("persuasion_dialogues", pd.DataFrame(out))


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def zermelo(wins: dict[tuple[str, str], float], names: list[str], iterations: int = 5000) -> dict[str, float]:
    """Maximum-likelihood Bradley-Terry log-strengths (mean 0) by Zermelo's fixed point."""
    p = {n: 1.0 for n in names}
    for _ in range(iterations):
        new = {}
        for i in names:
            w = sum(wins.get((i, j), 0) for j in names if j != i)
            denominator = sum(
                (wins.get((i, j), 0) + wins.get((j, i), 0)) / (p[i] + p[j]) for j in names if j != i
            )
            new[i] = w / denominator
        total = math.exp(np.mean([math.log(v) for v in new.values()]))
        p = {n: v / total for n, v in new.items()}
    return {n: math.log(v) for n, v in p.items()}


class TestOutcomes:
    def test_counts_and_wilson_rates_over_ended_dialogues(self):
        rows = [("H1", "bot", "finished", "pro")] * 6 + [("H2", "bot", "finished", "")] * 3
        rows += [("H3", "bot", "abandoned", "", "partner_left"), ("H4", "bot", "running", "")]
        summary = persuasion.outcome_summary(dialogues(rows))
        overall = summary["overall"]
        assert (overall["dialogues"], overall["ended"], overall["win"], overall["draw"]) == (11, 10, 6, 3)
        assert (overall["abandoned"], overall["open"]) == (1, 1)
        win = overall["rates"]["win"]
        assert (win["k"], win["n"], win["p"]) == (6, 10, 0.6)
        assert (win["lo"], win["hi"]) == pytest.approx(wilson_by_hand(6, 10))
        assert (win["lo"], win["hi"]) == pytest.approx((0.3127, 0.8318), abs=1e-4)  # published value
        reasons = {r["end_reason"]: r["dialogues"] for r in summary["by_reason"]}
        assert reasons == {"conceded": 6, "turn_limit": 3, "partner_left": 1}
        assert [p["pairing"] for p in summary["by_pairing"]] == ["human_ai"]

    def test_outcome_is_derived_from_status_and_winner_without_the_column(self):
        df = dialogues([("a", "b", "finished", "con"), ("a", "b", "finished", ""), ("a", "b", "waiting", "")])
        assert persuasion.outcomes(df).tolist() == ["win", "draw", "open"]

    def test_human_win_rate_per_agent_and_seats_per_agent(self):
        rows = [
            ("H1", "bot", "finished", "pro"),  # the human beats bot
            ("bot", "H2", "finished", "con"),  # the human beats bot
            ("bot", "H3", "finished", "pro"),  # bot wins
            ("H4", "bot", "finished", ""),  # draw
            ("H5", "bot", "abandoned", "", "partner_left"),
            ("H6", "sage", "finished", "con"),  # sage wins
            ("bot", "bot", "finished", "pro"),  # self-play: one win and one loss for bot
        ]
        df = dialogues(rows)
        (bot, sage) = persuasion.human_vs_ai(df)
        assert bot["agent"] == "bot" and (bot["dialogues"], bot["decided"], bot["abandoned"]) == (5, 4, 1)
        assert (bot["human_wins"], bot["agent_wins"], bot["draws"]) == (2, 1, 1)
        assert bot["human_win_rate"]["p"] == 0.5
        assert (bot["human_win_rate"]["lo"], bot["human_win_rate"]["hi"]) == pytest.approx(
            wilson_by_hand(2, 4)
        )
        assert (sage["human_wins"], sage["agent_wins"], sage["human_win_rate"]["p"]) == (0, 1, 0.0)
        agents = {a["agent"]: a for a in persuasion.per_agent(df)}
        assert agents["bot"]["appearances"] == 7 and agents["bot"]["against_agents"] == 2
        assert (agents["bot"]["won"], agents["bot"]["lost"], agents["bot"]["draw"]) == (2, 3, 1)
        assert agents["bot"]["win_rate"]["p"] == pytest.approx(2 / 6)

    def test_no_dialogues_at_all(self):
        empty = dialogues([])
        summary = persuasion.outcome_summary(empty)
        assert summary["overall"]["ended"] == 0 and summary["overall"]["rates"]["win"]["p"] is None
        assert persuasion.per_agent(empty) == [] and persuasion.human_vs_ai(empty) == []
        assert persuasion.logical_ranking(empty, replicates=0) is None


class TestMoves:
    def test_kind_shares_among_legal_sentences_per_author(self):
        moves = pd.DataFrame(
            {
                "dialogue_id": [1] * 7,
                "turn": [1, 1, 1, 2, 2, 3, 3],
                "author": ["human", "human", "human", "agent", "agent", "human", "human"],
                "kind": ["claim", "why", "claim", "since", "concede", "claim", None],
                "legal": ["1", "1", "0", "1", "1", "1", "0"],
                "fallback": ["0", "0", "0", "0", "1", "0", "1"],
            }
        )
        stats = persuasion.move_distribution(persuasion.typed("persuasion_moves", moves))
        by = {a["author"]: a for a in stats["by_author"]}
        assert [a["author"] for a in stats["by_author"]] == ["human", "agent"]
        human = by["human"]
        assert (human["sentences"], human["legal"], human["refused"], human["unclassified"]) == (5, 3, 2, 1)
        assert (human["turns"], human["fallback"]) == (2, 1)
        kinds = {(k["author"], k["kind"]): k for k in stats["kinds"]}
        assert (kinds["human", "claim"]["k"], kinds["human", "claim"]["n"]) == (2, 3)
        assert kinds["human", "why"]["p"] == pytest.approx(1 / 3)
        assert kinds["human", "retract"]["k"] == 0
        assert kinds["agent", "concede"]["p"] == 0.5 and by["agent"]["fallback"] == 1

    def test_no_moves(self):
        assert persuasion.move_distribution(None) == {"by_author": [], "kinds": []}


class TestLogicalRanking:
    def test_two_agents_log_strength_gap_is_log_of_the_win_ratio(self):
        df = dialogues([("alpha", "beta", "finished", "pro")] * 2 + [("beta", "alpha", "finished", "con")])
        df = pd.concat([df, dialogues([("beta", "alpha", "finished", "pro")])], ignore_index=True)
        result = persuasion.logical_ranking(df, replicates=0)
        s = result["strengths"]
        # alpha beat beta 3 times, beta beat alpha once: the maximum-likelihood θα − θβ = log 3;
        # I-LSR's regularisation (0.01) pulls it towards 0 by a little (log 3 = 1.0986).
        gap = s["alpha"]["strength"] - s["beta"]["strength"]
        assert gap == pytest.approx(math.log(3), abs=0.02) and gap < math.log(3)
        assert s["alpha"]["strength"] + s["beta"]["strength"] == pytest.approx(0, abs=1e-9)
        assert result["ranking"] == ["alpha", "beta"]
        assert np.asarray(result["win_matrix"]).tolist() == [[0, 3], [1, 0]]

    def test_three_agents_match_an_independent_maximum_likelihood_fit(self):
        table = {("a", "b"): 2, ("b", "a"): 1, ("b", "c"): 3, ("c", "b"): 1, ("a", "c"): 2, ("c", "a"): 1}
        rows = []
        for (winner, loser), n in table.items():
            rows += [(winner, loser, "finished", "pro")] * n
        expected = zermelo(table, ["a", "b", "c"])
        result = persuasion.logical_ranking(dialogues(rows), replicates=0)
        for name in "abc":
            assert result["strengths"][name]["strength"] == pytest.approx(expected[name], abs=0.02)
        assert result["ranking"] == ["a", "b", "c"]
        assert result["strengths"]["a"]["rank"] == 1 and result["strengths"]["a"]["wins"] == 4

    def test_draws_count_half_or_are_left_out(self):
        rows = [
            ("alpha", "beta", "finished", "pro"),
            ("alpha", "beta", "finished", ""),
            ("beta", "alpha", "finished", ""),
        ]
        df = dialogues(rows)
        half = persuasion.logical_ranking(df, draws="half", replicates=0)
        assert np.asarray(half["win_matrix"]).tolist() == [[0, 2], [1, 0]]
        assert (half["dialogues"], half["wins"], half["draws_counted"]) == (3, 1, 2)
        gap = half["strengths"]["alpha"]["strength"] - half["strengths"]["beta"]["strength"]
        assert gap == pytest.approx(math.log(2), abs=0.02)
        left_out = persuasion.logical_ranking(df, draws="exclude", replicates=0)
        assert np.asarray(left_out["win_matrix"]).tolist() == [[0, 1], [0, 0]]
        assert (left_out["dialogues"], left_out["draws_counted"]) == (1, 0)
        with pytest.raises(ValueError, match="draws must be"):
            persuasion.logical_ranking(df, draws="third")

    def test_only_finished_dialogues_between_two_different_agents_count(self):
        rows = [
            ("alpha", "beta", "finished", "pro"),
            ("alpha", "alpha", "finished", "pro"),  # self-play
            ("alpha", "beta", "abandoned", "", "agent_failed"),
            ("alpha", "beta", "running", ""),
            ("H1", "beta", "finished", "pro"),  # a person, not a model-versus-model outcome
        ]
        df = dialogues(rows)
        counted = persuasion.logical_outcomes(df)
        assert counted.to_dict("records") == [
            {"interlocutor_1": "alpha", "interlocutor_2": "beta", "winner": "1"}
        ]
        assert persuasion.self_play(df) == 1

    def test_too_little_to_rank(self):
        only_self = dialogues([("alpha", "alpha", "finished", "pro")])
        assert persuasion.logical_ranking(only_self, replicates=0) is None
        only_draws = dialogues([("alpha", "beta", "finished", "")] * 3)
        assert persuasion.logical_ranking(only_draws, draws="exclude", replicates=0) is None
        tied = persuasion.logical_ranking(
            only_draws, draws="half", replicates=10, rng=np.random.default_rng(1)
        )
        assert tied["strengths"]["alpha"]["strength"] == pytest.approx(0, abs=1e-9)
        assert tied["strengths"]["alpha"]["rank"] == tied["strengths"]["beta"]["rank"] == 1.5

    def test_bootstrap_intervals_cover_the_point_and_are_reproducible(self):
        rows = [("a", "b", "finished", "pro")] * 6 + [("b", "a", "finished", "pro")] * 2
        rows += [("b", "c", "finished", "pro")] * 5 + [("c", "b", "finished", "pro")] * 3
        df = dialogues(rows)
        one = persuasion.logical_ranking(df, replicates=200, rng=np.random.default_rng(7))
        two = persuasion.logical_ranking(df, replicates=200, rng=np.random.default_rng(7))
        for name, s in one["strengths"].items():
            assert s["lo"] <= s["strength"] <= s["hi"]
            assert s == two["strengths"][name]


class TestCrowdComparison:
    @staticmethod
    def comparisons(order: list[str], n: int = 4) -> pd.DataFrame:
        rows = []
        pid = 0
        for i, better in enumerate(order):
            for worse in order[i + 1 :]:
                for _ in range(n):
                    pid += 1
                    rows.append(
                        {
                            "participant_id": pid,
                            "interlocutor_1": worse,
                            "interlocutor_2": better,
                            "winner": "2",
                            "valid": "1",
                            "is_check": "0",
                        }
                    )
        return pd.DataFrame(rows)

    def logical(self, order: list[str]) -> dict:
        rows = []
        for i, better in enumerate(order):
            for worse in order[i + 1 :]:
                rows += [(better, worse, "finished", "pro")] * 3
        return persuasion.logical_ranking(dialogues(rows), replicates=0)

    def test_the_same_order_agrees_and_the_reverse_disagrees(self):
        logical = self.logical(["a", "b", "c", "d"])
        same = persuasion.crowd_ranking(self.comparisons(["a", "b", "c", "d"]), replicates=0)
        assert same["ranking"] == ["a", "b", "c", "d"] and same["comparisons"] == 24
        agreement = persuasion.ranking_agreement(logical, same)
        assert agreement["n"] == 4
        assert agreement["kendall_tau_distance"] == 0 and agreement["footrule_distance"] == 0
        assert agreement["alpha_ordinal"] == pytest.approx(1)
        reverse = persuasion.crowd_ranking(self.comparisons(["d", "c", "b", "a"]), replicates=0)
        disagreement = persuasion.ranking_agreement(logical, reverse)
        assert disagreement["kendall_tau_distance"] == 1 and disagreement["footrule_distance"] == 1

    def test_one_swap_by_hand(self):
        logical = self.logical(["a", "b", "c"])
        crowd = persuasion.crowd_ranking(self.comparisons(["b", "a", "c", "x"]), replicates=0)
        agreement = persuasion.ranking_agreement(logical, crowd)
        # On the common a, b, c: one discordant pair of three; footrule |1-2|+|2-1| = 2 of ⌊9/2⌋ = 4.
        assert agreement["kendall_tau_distance"] == pytest.approx(1 / 3)
        assert agreement["footrule_distance"] == pytest.approx(2 / 4)
        assert agreement["only_in_b"] == ["x"]

    def test_nothing_to_compare(self):
        assert persuasion.crowd_ranking(None) is None
        assert persuasion.ranking_agreement(None, None) is None


def test_dialogues_of_excluded_participants_are_left_out():
    df = dialogues(
        [("H1", "bot", "finished", "pro"), ("H2", "bot", "finished", "con"), ("a", "b", "finished", "pro")]
    )
    participants = pd.DataFrame(
        {"participant_id": ["1", "2"], "status": ["completed"] * 2, "excluded": ["1", "0"]}
    )
    from analysis.metrics import frames

    kept, dropped = persuasion.exclude_excluded(df, frames.typed("participants", participants))
    assert dropped == 1 and kept["dialogue_id"].tolist() == [2, 3]
    assert persuasion.exclude_excluded(df, None)[1] == 0
