"""The per-design results: byte-stable, CSV round trip, optional columns, merged studies, plots."""

import json

import pandas as pd
import pytest

from analysis.metrics import frames, report, synthetic

SMALL = {
    "A": lambda seed=0, **kw: synthetic.synthetic_a(n_participants=160, seed=seed, baseline_share=0.2, **kw),
    "B": lambda seed=0, **kw: synthetic.synthetic_b(n_participants=120, seed=seed, **kw),
    "D": lambda seed=0, **kw: synthetic.synthetic_d(n_comparisons=600, n_interlocutors=6, seed=seed, **kw),
}
EXPECTED_KEYS = {
    "A": {
        "choose_a_by_location",
        "h1_regression",
        "per_bias",
        "joint_bootstrap",
        "detection_cascade",
        "detection_accuracy",
        "detection_following",
        "expertise",
        "accuracy",
        "items",
    },
    "B": {
        "accuracy",
        "protocol_comparison",
        "consultant_agreement",
        "transitions",
        "confidence_shift",
        "brier",
        "calibration",
        "mixed_models",
        "items",
    },
    "D": {"checks", "win_matrix", "strengths", "ranking", "reliability", "subgroups", "references", "items"},
}
EXPECTED_TABLES = {
    "A": {
        "table_35",
        "figure_5",
        "accuracy_by_condition",
        "table_39",
        "table_40",
        "table_41",
        "table_42",
        "table_43",
        "table_44",
        "table_45",
        "figure_15",
        "llm_participants",
        "items",
    },
    "B": {
        "exclusion_flow",
        "fill",
        "figure_1",
        "protocol_comparison",
        "table_1",
        "figure_3",
        "table_2",
        "brier",
        "calibration",
        "mixed_models",
        "llm_judges",
        "items",
    },
    "D": {"exclusion_flow", "table_3", "table_4", "win_matrix", "reliability", "fill", "items"},
}


def dumps(results) -> str:
    return json.dumps(results, sort_keys=True, allow_nan=False)


@pytest.fixture(scope="module")
def results():
    return {d: report.analyze(SMALL[d](), d, seed=3, bootstrap=200) for d in "ABD"}


@pytest.mark.parametrize("design", "ABD")
def test_results_are_json_safe_with_the_documented_keys(results, design):
    r = results[design]
    text = dumps(r)  # raises on NaN or numpy types
    assert json.loads(text) == r
    assert r["design"] == design
    assert {"n", "exclusion_flow", "fill", "skipped", "tables", "settings"} | EXPECTED_KEYS[design] <= set(r)
    assert r["skipped"] == {}
    assert {t["key"] for t in r["tables"]} == EXPECTED_TABLES[design]
    for t in r["tables"]:
        assert set(t) == {"key", "title", "columns", "rows", "note"}
        assert all(len(row) == len(t["columns"]) for row in t["rows"]), t["key"]
    assert r["exclusion_flow"]["steps"][-1]["remaining"] == r["exclusion_flow"]["analysed"]


@pytest.mark.parametrize("design", "ABD")
def test_same_data_and_seed_give_identical_results(results, design):
    again = report.analyze(SMALL[design](), design, seed=3, bootstrap=200)
    assert dumps(again) == dumps(results[design])


def test_another_seed_changes_only_the_bootstrap(results):
    other = report.analyze(SMALL["A"](), "A", seed=4, bootstrap=200)
    assert other["h1_regression"] == results["A"]["h1_regression"]
    assert other["joint_bootstrap"] != results["A"]["joint_bootstrap"]
    other_d = report.analyze(SMALL["D"](), "D", seed=4, bootstrap=200)
    assert [s["strength"] for s in other_d["strengths"].values()] == [
        s["strength"] for s in results["D"]["strengths"].values()
    ]
    assert [s["lo"] for s in other_d["strengths"].values()] != [
        s["lo"] for s in results["D"]["strengths"].values()
    ]


@pytest.mark.parametrize("design", "ABD")
def test_csv_round_trip_gives_the_same_results(tmp_path, results, design):
    for name, df in SMALL[design]().items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    read = frames.read_tables(tmp_path)
    assert dumps(report.analyze(read, design, seed=3, bootstrap=200)) == dumps(results[design])


def test_floats_are_rounded_to_six_significant_digits(results):
    def floats(obj):
        if isinstance(obj, dict):
            for v in obj.values():
                yield from floats(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from floats(v)
        elif isinstance(obj, float):
            yield obj

    values = [x for r in results.values() for x in floats(r)]
    assert values and all(float(f"{x:.6g}") == x for x in values)


def test_the_exclusion_flow_counts_by_hand():
    participants = pd.DataFrame(
        {
            "participant_id": ["1", "2", "3", "4", "5", "6", "7"],
            "status": [
                "completed",
                "completed",
                "failed_check",
                "completed",
                "completed",
                "returned",
                "completed",
            ],
            "excluded": ["0", "1", "1", "1", "1", "0", "1"],
            "exclusion_reasons": ["", "recall;wpm", "attention", "wpm", "manual", "", ""],
        }
    )
    from analysis.metrics.common import exclusion_flow

    flow = exclusion_flow(frames.typed("participants", participants))
    assert (
        flow["entered"],
        flow["failed_attention"],
        flow["failed_recall"],
        flow["wpm_at_or_above_cap"],
    ) == (7, 1, 1, 2)
    assert (flow["other_exclusions"], flow["completed"], flow["analysed"]) == (
        2,
        5,
        1,
    )  # 5 manual, 7 flag only
    steps = {s["step"]: s for s in flow["steps"]}
    assert steps["wpm_at_or_above_cap"]["dropped"] == 1  # participant 2 already dropped for recall
    assert steps["not_completed"]["dropped"] == 1 and steps["analysed"]["remaining"] == 1
    assert flow["by_status"] == {"completed": 5, "failed_check": 1, "returned": 1}


def test_exclusion_reasons_edited_by_hand_count_as_their_reasons():
    """'Recall; WPM' typed in a spreadsheet had counted as an other exclusion, not as recall."""
    from analysis.metrics.common import exclusion_flow

    def flow(reasons):
        participants = pd.DataFrame(
            {"participant_id": ["1", "2", "3"], "status": ["completed"] * 3, "excluded": ["1", "1", "0"]}
        )
        return exclusion_flow(frames.typed("participants", participants.assign(exclusion_reasons=reasons)))

    exported = flow(["recall;wpm", "attention", ""])
    edited = flow(["Recall; WPM", " attention ,", ""])
    assert edited == exported
    assert (edited["failed_recall"], edited["wpm_at_or_above_cap"], edited["other_exclusions"]) == (1, 1, 0)


@pytest.mark.parametrize("design", "ABD")
def test_works_without_optional_tables_and_columns(design):
    tables = SMALL[design]()
    optional = {
        "A": [
            "reasoning",
            "bias_present",
            "bias_side",
            "bias_type",
            "bias_presence_correct",
            "bias_side_correct",
            "bias_type_correct",
            "wpm",
            "created_at",
            "dialogue",
            "case",
        ],
        "B": [
            "justification",
            "domain",
            "consultant_side",
            "initial_answer",
            "final_answer",
            "initial_confidence",
            "final_confidence",
            "group",
        ],
        "D": ["confidence", "instance_set", "instance", "check_passed", "valid", "served_at", "answered_at"],
    }[design]
    table = {"A": "judgements", "B": "claim_judgements", "D": "comparisons"}[design]
    slim = {table: tables[table].drop(columns=optional), "participants": tables["participants"]}
    r = report.analyze(slim, design, seed=1, bootstrap=50)
    assert dumps(r)
    full = report.analyze(tables, design, seed=1, bootstrap=50)
    if design == "A":
        assert r["h1_regression"] == full["h1_regression"]
        assert r["detection_cascade"] is None and "detection" in r["skipped"] and "expertise" in r["skipped"]
    if design == "B":
        # Without the group column, groups come from the participants table.
        assert r["accuracy"]["by_protocol_group"] == full["accuracy"]["by_protocol_group"]
        assert r["brier"][0]["final"] is None and r["calibration"] == []
    if design == "D":
        # Without `valid` the rule is rebuilt from status, exclusion and check flags.
        assert r["strengths"] == full["strengths"] and r["reliability"]["winner_alpha_nominal"] is None
        assert "subgroups" in r["skipped"]


@pytest.mark.parametrize("design", "ABD")
def test_data_merged_from_two_studies_keeps_participants_apart(design):
    one = SMALL[design]()
    both = {
        name: pd.concat([SMALL[design](study="s1")[name], SMALL[design](study="s2")[name]], ignore_index=True)
        for name in one
    }
    single = report.analyze(one, design, bootstrap=0)
    merged = report.analyze(both, design, bootstrap=0)
    assert merged["n"]["studies"] == ["s1", "s2"]
    assert merged["exclusion_flow"]["entered"] == 2 * single["exclusion_flow"]["entered"]
    assert merged["exclusion_flow"]["analysed"] == 2 * single["exclusion_flow"]["analysed"]
    if design == "A":
        # The same data twice: the same maximum-likelihood estimates, twice the participants.
        assert merged["n"]["analysed_participants"] == 2 * single["n"]["analysed_participants"]
        assert merged["h1_regression"]["terms"][1]["log_odds"] == pytest.approx(
            single["h1_regression"]["terms"][1]["log_odds"], rel=1e-5
        )
        assert (
            merged["expertise"]["levels"][0]["accuracy"]["n"]
            == 2 * single["expertise"]["levels"][0]["accuracy"]["n"]
        )
    if design == "B":
        assert (
            merged["mixed_models"]["combined"]["n_participants"]
            == 2 * single["mixed_models"]["combined"]["n_participants"]
        )
    if design == "D":
        assert merged["n"]["annotators"] == 2 * single["n"]["annotators"]
        assert merged["ranking"] == single["ranking"]


def test_reference_rankings_are_compared_in_table_4():
    tables = SMALL["D"]()
    labels = synthetic.interlocutor_names(6)
    r = report.analyze(tables, "D", bootstrap=0, options={"reference_rankings": {"logical": labels[::-1]}})
    assert r["references"]["logical"]["n"] == 6
    assert r["references"]["logical"]["kendall_tau_distance"] > 0.8  # the data follow labels' order
    table = next(t for t in r["tables"] if t["key"] == "table_4")
    assert "d_τ vs logical" in table["columns"] and table["rows"][0][0] == "Global vs logical"
    assert all("vs_logical" in g for g in r["subgroups"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="design"):
        report.analyze({}, "C")
    with pytest.raises(ValueError, match="unknown option"):
        report.analyze(SMALL["A"](), "A", options={"expertise_kye": "x"})


@pytest.mark.parametrize(
    ("design", "names"),
    [
        ("A", {"fill", "accuracy", "choose_a", "expertise"}),
        ("B", {"fill", "accuracy", "calibration", "transitions"}),
        ("D", {"strengths", "win_matrix"}),
    ],
)
def test_figures_are_pngs_built_from_the_results_alone(results, design, names):
    plain = json.loads(dumps(results[design]))
    pngs = report.figures(plain)
    assert set(pngs) == names
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000 for png in pngs.values())
    assert report.figures(plain) == pngs  # the same bytes each time


@pytest.mark.parametrize("design", "ABD")
@pytest.mark.parametrize("case", ["everyone excluded", "no rows"])
def test_degenerate_data_give_results_not_errors(design, case):
    tables = SMALL[design]()
    table = {"A": "judgements", "B": "claim_judgements", "D": "comparisons"}[design]
    if case == "no rows":
        tables = {name: df.iloc[:0] for name, df in tables.items()}
    else:
        tables[table] = tables[table].assign(excluded="1", **({"valid": "0"} if design == "D" else {}))
    r = report.analyze(tables, design, bootstrap=20)
    assert dumps(r)
    assert r["n"].get("analysed", r["n"].get("valid")) == 0
    if design == "A":
        assert r["h1_regression"] is None and "h1_regression" in r["skipped"]
    if design == "B":
        assert r["mixed_models"] is None and "mixed_models" in r["skipped"]
    if design == "D":
        assert all(s["strength"] == 0 and s["lo"] is None for s in r["strengths"].values())
    report.figures(json.loads(dumps(r)))


def ties_only(n_interlocutors: int = 22) -> dict:
    """Design D data where every real answer is "equal" (the paper's 22 interlocutors)."""
    tables = synthetic.synthetic_d(n_comparisons=600, n_interlocutors=n_interlocutors, seed=0)
    c = tables["comparisons"]
    real = c["is_check"].astype(str) == "0"
    c.loc[real, "winner"], c.loc[real, "choice"], c.loc[real, "winner_interlocutor"] = "tie", "equal", ""
    return tables


def test_ties_only_give_equal_strengths_and_their_plot():
    """Every strength is 0 give or take 1e-16, its bootstrap interval a rounding error to one
    side of it: the plot's error bars were negative and matplotlib refused the whole report."""
    r = report.analyze(ties_only(), "D", seed=0, bootstrap=200)
    assert all(abs(s["strength"]) < 1e-9 and s["estimable"] for s in r["strengths"].values())
    # One rank for all, and one normalised strength: it had read 0 and 1 for equal strengths.
    assert {s["rank"] for s in r["strengths"].values()} == {11.5}
    assert {s["normalised"] for s in r["strengths"].values()} == {0.0}
    assert r["warnings"] == []
    assert "strengths" in report.figures(json.loads(dumps(r)))


def test_comparisons_of_an_interlocutor_against_itself_are_left_out_and_said():
    tables = synthetic.synthetic_d(n_comparisons=600, n_interlocutors=6, seed=1)
    before = report.analyze(tables, "D", seed=0, bootstrap=0)
    c = tables["comparisons"]
    name = sorted(set(c["interlocutor_1"]))[0]
    selves = c[c["is_check"].astype(str) == "0"].head(30).copy()
    selves["interlocutor_1"] = selves["interlocutor_2"] = name
    selves["instance"] = selves["instance"].astype(int) + 200_000
    selves["winner_interlocutor"] = name
    tables["comparisons"] = pd.concat([c, selves], ignore_index=True)
    r = report.analyze(tables, "D", seed=0, bootstrap=0)
    assert r["strengths"][name]["comparisons"] == before["strengths"][name]["comparisons"]
    assert r["strengths"][name]["wins"] == before["strengths"][name]["wins"]
    assert r["win_matrix"] == before["win_matrix"]
    assert any(f"30 comparison(s) of an interlocutor against itself ({name})" in w for w in r["warnings"])


def test_groups_never_compared_with_each_other_are_said_and_ranked_apart_in_words():
    tables = synthetic.synthetic_d(n_comparisons=600, n_interlocutors=6, seed=1)
    c = tables["comparisons"]
    labels = sorted(set(c["interlocutor_1"]) | set(c["interlocutor_2"]))
    first, second = set(labels[:3]), set(labels[3:])
    within = c["interlocutor_1"].isin(first) == c["interlocutor_2"].isin(first)
    tables["comparisons"] = c[within | (c["is_check"].astype(str) == "1")]
    r = report.analyze(tables, "D", seed=0, bootstrap=50)
    assert r["groups"] == [sorted(first), sorted(second)]
    assert len(r["warnings"]) == 1 and "2 groups never compared with each other" in r["warnings"][0]


def test_an_interlocutor_that_never_wins_is_not_estimable():
    tables = synthetic.synthetic_d(n_comparisons=600, n_interlocutors=6, seed=2)
    c = tables["comparisons"]
    loser = sorted(set(c["interlocutor_1"]))[0]
    real = c["is_check"].astype(str) == "0"
    for side, other in (("1", "2"), ("2", "1")):  # every comparison of the loser: the other won
        mine = real & (c[f"interlocutor_{side}"] == loser)
        c.loc[mine, "winner"] = other
        c.loc[mine, "winner_interlocutor"] = c.loc[mine, f"interlocutor_{other}"]
    r = report.analyze(tables, "D", seed=0, bootstrap=50)
    assert r["strengths"][loser]["wins"] == 0 and not r["strengths"][loser]["estimable"]
    assert sum(not s["estimable"] for s in r["strengths"].values()) == 1
    assert any(loser in w and "Not estimable" in w for w in r["warnings"])
    row = next(row for row in r["tables"][1]["rows"] if row[1] == loser)
    assert row[4].endswith("(not estimable)")


def test_dollar_signs_in_labels_are_drawn_as_text():
    """An interlocutor named with dollar signs (a price in a model's label) is a label, not
    matplotlib's maths: it refused the whole report before."""
    tables = synthetic.synthetic_d(300, 4, seed=3)
    names = sorted(set(tables["comparisons"]["interlocutor_1"].dropna()))
    renamed = {names[0]: "GPT-4o_$0.01_per_call_$", names[1]: "$x^2$ model"}
    comparisons = tables["comparisons"].replace({"interlocutor_1": renamed, "interlocutor_2": renamed})
    results = report.analyze({**tables, "comparisons": comparisons}, "D", bootstrap=0)
    assert set(renamed.values()) <= set(results["ranking"])
    pictures = report.figures(results)
    assert pictures and all(png.startswith(b"\x89PNG") for png in pictures.values())


def test_the_expertise_item_does_not_depend_on_the_order_of_the_rows():
    """Figure 15 takes the first expertise item of its page: with the study's item order it is
    the same item however the rows are sorted; without it the rows' order decides, and the
    report says so."""
    tables = synthetic.synthetic_a(60, seed=2)
    order = ["age", "expertise_mysteries", "expertise_debate", "expertise_self"]
    by_key = tables["responses"].sort_values("key", kind="stable").reset_index(drop=True)
    first, shuffled = (
        report.analyze({**tables, "responses": r}, "A", bootstrap=0, item_order=order)
        for r in (tables["responses"], by_key)
    )
    assert first["expertise"]["key"] == shuffled["expertise"]["key"] == "expertise_mysteries"
    assert first["expertise"] == shuffled["expertise"] and not first["warnings"]
    guessed = report.analyze({**tables, "responses": by_key}, "A", bootstrap=0)
    assert guessed["expertise"]["key"] == "expertise_debate"  # the file's first, sorted by key
    [warning] = guessed["warnings"]
    assert "expertise_debate" in warning and "expertise_mysteries" in warning and "study.json" in warning


def test_the_fill_shows_the_studys_dialogues_nobody_judged():
    """Figure 5 is how far each dialogue has filled: one nobody judged yet was absent, not 0."""
    tables = SMALL["A"]()
    judged = report.analyze(tables, "A", bootstrap=0)["fill"]
    names = [f["dialogue"] for f in judged]
    r = report.analyze(tables, "A", bootstrap=0, study_dialogues=[*names, "never-judged"])
    assert {"dialogue": "never-judged", "analysed": 0, "judgements": 0} in r["fill"]
    assert [f for f in r["fill"] if f["dialogue"] != "never-judged"] == judged


def test_long_dialogue_names_keep_the_fill_plot_laid_out():
    """Several studies' dialogues are named "study/dialogue": the upright labels had collapsed
    the axes (matplotlib's "constrained_layout not applied" warning, and a squashed plot)."""
    import warnings

    from analysis.metrics import plots

    labels = [f"mystery-debate-2/lighthouse-ledger-fallacy-oversight-culprit-{n}" for n in range(12)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots._fill_bars(labels, [1] * 12, [2] * 12, "Fill per dialogue", "dialogue")
        assert plots._png(fig).startswith(b"\x89PNG")
    assert fig.axes[0].get_position().height > 0.2  # the bars keep a fifth of the figure or more


def flow_agrees(tables: dict, design: str) -> dict:
    """The sample flow's last count is the sample the figures use, whatever the files say."""
    results = report.analyze(tables, design, bootstrap=2)
    flow = results["exclusion_flow"]
    people = results["n"].get("analysed_participants", results["n"].get("annotators"))
    assert flow["analysed"] == flow["steps"][-1]["remaining"] == people
    return results


def test_the_sample_flow_ends_at_the_sample_the_figures_use():
    """The flow read participants.csv alone: an exclusion made in judgements.csv only, a reason
    listed with excluded = 0, or a judgements file cut to a subset left its 'Analysed' at 38
    beside figures that used 33 or 13, with no word."""
    base = flow_agrees(SMALL["A"](), "A")
    n = base["n"]["analysed_participants"]
    analysed = frames.typed("judgements", SMALL["A"]()["judgements"])
    analysed = analysed[(analysed["participant_status"] == "completed") & ~analysed["excluded"].astype(bool)]
    five = set(analysed["participant_id"].astype(str).head(5))

    tables = SMALL["A"]()
    rows = tables["judgements"]["participant_id"].astype(str).isin(five)
    tables["judgements"].loc[rows, "excluded"] = "1"  # in the design table only
    assert flow_agrees(tables, "A")["n"]["analysed_participants"] == n - 5

    tables = SMALL["A"]()
    people = tables["participants"]["participant_id"].astype(str).isin(five)
    tables["participants"].loc[people, "exclusion_reasons"] = "attention"  # excluded stays 0
    results = flow_agrees(tables, "A")
    assert results["n"]["analysed_participants"] == n
    assert results["exclusion_flow"]["reasons_not_excluded"] == 5
    note = next(t for t in results["tables"] if t["key"] == "table_35")["note"]
    assert "5 participant(s) list an exclusion reason with excluded = 0" in note

    tables = SMALL["A"]()
    tables["judgements"] = tables["judgements"][tables["judgements"]["condition"] == "baseline"]
    results = flow_agrees(tables, "A")
    steps = {s["step"]: s["dropped"] for s in results["exclusion_flow"]["steps"]}
    assert steps["no_analysed_rows"] == n - results["n"]["analysed_participants"] > 0


@pytest.mark.parametrize("design", "BD")
def test_the_sample_flow_of_designs_b_and_d_has_no_steps_of_design_a(design):
    results = flow_agrees(SMALL[design](), design)
    steps = [s["step"] for s in results["exclusion_flow"]["steps"]]
    assert "failed_recall" not in steps and "wpm_at_or_above_cap" not in steps


def test_a_mixed_model_note_with_no_model_fitted_has_no_empty_sentences():
    """'. Reference levels: protocol: consultancy, group: skeptical. .' when nothing was fitted."""
    results = report.analyze(synthetic.synthetic_b(n_participants=2, seed=1), "B", bootstrap=2)
    table = next(t for t in results["tables"] if t["key"] == "mixed_models")
    assert table["rows"] == [] and "mixed_models" in results["skipped"]
    assert table["note"] == "Reference levels: protocol: consultancy, group: skeptical."


def test_comparisons_that_count_with_a_blank_winner_are_left_out_and_said():
    """Blanked winners were dropped without a word (a '3' was counted in the warnings)."""
    tables = SMALL["D"]()
    whole = report.analyze(SMALL["D"](), "D", bootstrap=2)
    counted = frames.typed("comparisons", tables["comparisons"])
    counted = counted[counted["valid"].astype(bool)].index[:3]
    tables["comparisons"].loc[counted, "winner"] = ""
    results = report.analyze(tables, "D", bootstrap=2)
    assert results["n"]["valid"] == whole["n"]["valid"] - 3
    said = "3 comparison(s) that count have no winner (blank): left out, as unanswered."
    assert said in results["warnings"]
    assert not any("no winner" in w for w in whole["warnings"])


def test_rows_with_no_judgements_show_no_figures():
    """A study of one bias and no baseline showed a baseline row with N 0 beside a model-implied
    70 %, a 'baseline + this bias' coefficient fitted without a baseline, and '0' false alarms."""
    tables = SMALL["A"]()
    judgements = tables["judgements"]
    tables["judgements"] = judgements[judgements["condition"] == "anchoring"]
    results = report.analyze(tables, "A", bootstrap=2)
    rows = {t["key"]: t["rows"] for t in results["tables"]}
    baseline = next(row for row in rows["table_39"] if row[0].startswith("Baseline"))
    assert baseline[1] == 0 and baseline[2:] == [None, None, None]
    assert results["choose_a_by_location"][0]["implied_p"] is None  # results.json as the page
    assert [row[-1] for row in rows["table_41"]] == [None]
    false_alarms = next(row for row in rows["table_43"] if row[0].startswith("Baseline"))
    assert false_alarms[1:] == [0, "–", "–", "–"]


def test_the_fill_counts_the_rows_the_figures_use():
    """A row the figures leave out (a protocol the export never writes, a biased judgement
    with no condition) was still counted as analysed in the fill."""
    tables = SMALL["B"]()
    tables["claim_judgements"].loc[:5, "protocol"] = "debat"
    results = report.analyze(tables, "B", bootstrap=2)
    assert sum(f["analysed"] for f in results["fill"]) == results["n"]["analysed"]
    assert "debat" not in {f["protocol"] for f in results["fill"] if f["analysed"]}
    tables = SMALL["A"]()
    judgements = tables["judgements"]
    biased = judgements.index[judgements["condition"] != "baseline"][:10]
    judgements.loc[biased, "condition"] = ""
    results = report.analyze(tables, "A", bootstrap=2)
    assert sum(f["analysed"] for f in results["fill"]) == results["n"]["analysed"]


def test_screened_out_participants_are_a_step_of_the_flow_of_their_own():
    """Paper 001's flow has screening as its own stage: they were counted as 'did not complete'."""
    from analysis.metrics.common import exclusion_flow

    participants = pd.DataFrame(
        {
            "participant_id": ["1", "2", "3", "4"],
            "status": ["completed", "screened_out", "screened_out", "returned"],
            "excluded": ["0", "0", "0", "0"],
        }
    )
    flow = exclusion_flow(frames.typed("participants", participants))
    steps = {s["step"]: s["dropped"] for s in flow["steps"]}
    assert (steps["screened_out"], steps["not_completed"], flow["analysed"]) == (2, 1, 1)
    none_screened = exclusion_flow(frames.typed("participants", participants.head(1)))
    assert "screened_out" not in {s["step"] for s in none_screened["steps"]}
