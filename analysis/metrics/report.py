"""Every figure of a design's analysis as one JSON-safe dict, and its plots as PNG bytes.

    analyze(tables, "A" | "B" | "C" | "D", seed=0, bootstrap=1000, options=None) -> dict
    figures(results) -> {name: PNG bytes}

`tables` maps export table names to data frames (raw text as exported, or typed by
frames.read_tables; unknown tables are ignored). Floats are rounded to 6 significant digits,
NaN becomes None and numpy types become Python ones, so the same CSVs analysed twice with
the same seed give byte-identical JSON. Bootstrap draws come from numpy Generators seeded by
(seed, design stream).

Top-level keys common to every design:
    design            "A", "B", "C" or "D"
    settings          {"seed", "bootstrap", "options"} (the options after defaults)
    n                 counts used (see per design)
    exclusion_flow    common.exclusion_flow: entered, failed_attention, failed_recall,
                      wpm_at_or_above_cap, other_exclusions, completed, analysed, by_status,
                      steps [{step, dropped, remaining}], source
    fill              how full each assignment cell is (per design below)
    skipped           {analysis: reason} for analyses the data did not allow
    tables            [{"key", "title", "columns", "rows", "note"}] mirroring the paper's tables
    items             the study's own items among the participants analysed (design C: the
                      people in the seats of the dialogues analysed; metrics/items.py; None
                      without a responses table or, in C, without people), table key "items", last

Design A (paper 000; tables judgements, optional participants and responses):
    n                 participants, judgements, analysed, analysed_participants, baseline, biased, studies
    fill              [{dialogue, analysed, judgements}] (Figure 5)
    accuracy          {overall, by_condition, by_condition_side, by_case}: proportions
                      {k, n, p, lo, hi} (95% Wilson) with the grouping columns
    choose_a_by_location  Table 39: [{location, title, k, n, p, lo, hi, implied_p}]
    h1_regression     Table 40: {n, terms [{term, log_odds, se, z, p, odds_ratio, or_lo, or_hi}], implied_p}
    per_bias          Table 41: {n, intercept, biases [{bias, n, on_a, on_b, log_odds, se, z, p,
                      odds_ratio, or_lo, or_hi, effect_pp, subset_log_odds}]}
    joint_bootstrap   Table 42: {replicates, failed, biases [{bias, effect_pp, se_pp, lo_pp, hi_pp}],
                      omnibus {chi2, df, p}}
    detection_cascade Table 43: [{condition, total, presence, side, type}] (baseline: false alarms)
    detection_accuracy, detection_following  Tables 44-45: [{level, met, not_met, diff_pp, p}]
    expertise         Figure 15: {key, levels [{level, label, accuracy, followed}], unanswered}
    llm_participants  Tables 30-34 (optional table llm_judgements; None without it):
                      llm_judges.analyse: {n, judges, table_31, overall, by_judge, by_condition, shifts,
                      warnings (also in the results' warnings)}
    tables keys       table_35, figure_5, accuracy_by_condition, table_39, table_40, table_41,
                      table_42, table_43, table_44, table_45, figure_15, then table_31,
                      llm_accuracy_by_judge, llm_accuracy_by_condition (or llm_participants, a note)

Design B (paper 001; tables claim_judgements, optional participants and responses):
    n                 participants, sessions, analysed, analysed_participants, groups, protocols, studies
    fill              [{group, protocol, claim, analysed, sessions}]
    accuracy          {by_protocol_group [{protocol, group, initial, final, change_pp}],
                      by_protocol_domain [...]} (group "all" = pooled)
    protocol_comparison  [{group, debate, consultancy, diff_pp, p}]
    consultant_agreement Table 1: [{group, consultant, initial, final}]
    transitions       {cells [{protocol, group, n, CC, CI, IC, II: {k, n, p, lo, hi,
                      confidence_change, confidence_change_se}}], tests [{group, chi2, df, p}]}
    confidence_shift  Table 2: [{protocol, group, n, mean_shift, se, t, p, improved, changed}]
    brier             [{protocol, group, n, final, initial}]
    calibration       [{protocol, bins [{lo, hi, mean_confidence, accuracy}]}]
    mixed_models      {references, combined, per_protocol {protocol: model}}; a model is
                      {terms, sigma, sigma_se, icc, loglik, n_obs, n_participants, converged, method}
    llm_judges        paper 001 Study II and Table 3 (optional tables llm_persona_judgements and
                      llm_strategy_ratings; None without either): llm_persona.analyse: {judges
                      {n, accuracy, agreement, by_claim} or None, strategies {n, raters,
                      by_config, by_correctness} or None, warnings}
    warnings          what the LLM judges' tables could not count (rows left out, ...)
    tables keys       exclusion_flow, fill, figure_1, protocol_comparison, table_1, figure_3,
                      table_2, brier, calibration, mixed_models, then llm_judges_accuracy,
                      llm_judges_agreement, llm_judges_by_claim, llm_strategies,
                      llm_strategies_by_correctness (or llm_judges, a note)

Design C (paper 003 §3; table persuasion_dialogues, optional persuasion_moves, participants,
and comparisons for the crowd's ranking; see metrics/persuasion.py for the definitions):
    n                 dialogues, analysed, excluded_participant_dialogues, ended, open, sentences,
                      participants, agents, topics, batches, studies
    exclusion_flow    as above when a participants table is given, else None
    fill              [{topic, pairing, dialogues, ended}]
    outcomes          {overall, by_pairing [{pairing, ...}], by_topic [{topic, ...}], by_reason
                      [{end_reason, dialogues, share}]}; a summary is {dialogues, ended, win,
                      draw, abandoned, open, rates {win, draw, abandoned: proportion}}
    agents            [{agent, appearances, against_humans, against_agents, won, lost, draw,
                      abandoned, open, decided, win_rate, draw_rate, loss_rate}]
    human_vs_ai       [{agent, dialogues, decided, abandoned, open, human_wins, agent_wins,
                      draws, human_win_rate, agent_win_rate, draw_rate}]
    moves             {by_author [{author, sentences, legal, refused, unclassified, fallback,
                      refused_share, turns}], kinds [{author, kind, k, n, p, lo, hi}]}
    logical_ranking   {draws, dialogues, wins, draws_counted, labels, win_matrix, strengths,
                      ranking} (strengths as design D's) or None
    crowd_ranking     {comparisons, annotators, labels, win_matrix, strengths, ranking} or None
    ranking_agreement compare_rankings(logical, crowd) or None
    self_play         model-versus-model dialogues of an agent with itself (left out of the ranking)
    tables keys       exclusion_flow, fill, outcomes_by_pairing, end_reasons, outcomes_by_agent,
                      human_vs_ai, move_kinds, logical_ranking, logical_win_matrix,
                      logical_vs_crowd

Design D (paper 003; tables comparisons, optional participants and responses):
    n                 participants, comparisons, valid, annotators, interlocutors, studies
    fill              [{instance_set, instance, valid}] valid answers per instance
    checks            {items, passed}
    win_matrix        {labels, wins (row beats column; ties half)}
    strengths         {interlocutor: {strength, normalised, rank, wins, comparisons, se, lo, hi,
                      rank_lo, rank_hi}}
    ranking           interlocutors, strongest first
    reliability       {winner_alpha_nominal, confidence_alpha_nominal, units, units_with_two_or_more}
    subgroups         Table 4: [{attribute, value, annotators, annotations, ranking, vs_global,
                      vs_<reference>...}] with compare_rankings dicts
    references        {name: compare_rankings(global, reference)} for options["reference_rankings"]
    tables keys       exclusion_flow, table_3, table_4, win_matrix, reliability, fill
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.metrics import dialogues, items, live, llm_judges, llm_persona, pairwise, persuasion
from analysis.metrics.agreement import as_ranks, compare_rankings
from analysis.metrics.common import clean, exclusion_flow, exclusion_table, make_table, pct, rnd, sig
from analysis.metrics.frames import (
    TABLES,
    participant_key,
    require,
    subject_key,
    typed,
    uses_study,
)

STREAMS = {"A": 1, "B": 2, "C": 3, "D": 4}
DEFAULT_OPTIONS = {
    "A": {"expertise_key": None, "expertise_prefix": "expertise"},
    "B": {
        "covariates": [],
        "categorical_covariates": [],
        "protocol_reference": "consultancy",
        "group_reference": "skeptical",
        "calibration_bins": 10,
        "quadrature_nodes": 20,
    },
    "C": {"draws": "half", "alpha": 0.01, "exclude_excluded_participants": True},
    "D": {
        "subgroups": {"age": "age", "gender": "gender", "political_leaning": "political_leaning"},
        "age_edges": list(pairwise.DEFAULT_AGE_EDGES),
        "skip_values": ["Prefer not to say"],
        "reference_rankings": {},
        "alpha": 0.01,
    },
}


def analyze(
    tables: dict[str, pd.DataFrame],
    design: str,
    *,
    seed: int = 0,
    bootstrap: int = 1000,
    options: dict | None = None,
    item_order: Sequence[str] | None = None,
    study_dialogues: Sequence[str] | None = None,
    item_kinds: dict[str, str] | None = None,
) -> dict:
    """All results of design "A", "B", "C" or "D" (see the module docstring for the keys).
    `item_order`: the study's item keys in the order its pages show them (from study.json), so
    that "the first item" of a page does not depend on the order of the rows; `item_kinds`
    (key -> the question's kind, from study.json) what each of the study's own items is.
    `study_dialogues`: design A's dialogues as the study lists them (study.json), so that the
    fill per dialogue shows those nobody judged yet (they were absent, not 0)."""
    design = str(design).upper()
    if design not in STREAMS:
        raise ValueError(f"design must be 'A', 'B', 'C' or 'D', got {design!r}")
    merged = copy.deepcopy(DEFAULT_OPTIONS[design])
    unknown = set(options or {}) - set(merged)
    if unknown:
        raise ValueError(f"unknown option(s) for design {design}: {', '.join(sorted(unknown))}")
    merged.update(copy.deepcopy(options or {}))
    frames = {name: typed(name, df) for name, df in tables.items() if name in TABLES and df is not None}
    frames.update(
        {
            name: persuasion.typed(name, df)
            for name, df in tables.items()
            if name in persuasion.TABLES and df is not None
        }
    )
    frames.update(
        {
            name: llm_judges.typed(name, df)
            for name, df in tables.items()
            if name in llm_judges.TABLES and df is not None
        }
    )
    frames.update(
        {
            name: llm_persona.typed(name, df)
            for name, df in tables.items()
            if name in llm_persona.TABLES and df is not None
        }
    )
    rng = np.random.default_rng([int(seed), STREAMS[design]])
    run = {"A": _design_a, "B": _design_b, "C": _design_c, "D": _design_d}[design]
    results = run(
        frames,
        rng,
        int(bootstrap),
        {
            **merged,
            "_item_order": list(item_order or ()),
            "_dialogues": list(study_dialogues or ()),
            "_item_kinds": dict(item_kinds or {}),
        },
    )
    if results.get("items"):
        results["tables"].append(_items_table(results["items"]))
    results = {
        "design": design,
        "settings": {"seed": int(seed), "bootstrap": int(bootstrap), "options": merged},
        **results,
    }
    return clean(results)


def figures(results: dict) -> dict[str, bytes]:
    """PNG plots of a results dict (from `analyze`), keyed by name."""
    from analysis.metrics import plots

    with plots.plain_text():
        if results.get("design") == "C":
            return {name: plots._png(fig) for name, fig in _plots_c(results) if fig is not None}
        return plots.figures(results)


def _studies(*frames) -> list[str]:
    names = set()
    for f in frames:
        if f is not None and "study" in f.columns:
            names |= set(f["study"].dropna().astype(str))
    return sorted(names)


def _ci(prop: dict) -> str | None:
    if prop.get("lo") is None:
        return None
    return f"[{100 * prop['lo']:.1f}, {100 * prop['hi']:.1f}]"


def _n_pct(k: int | None, total: int) -> str | None:
    if k is None:
        return "–"
    return f"{k} ({100 * k / total:.1f})" if total else "–"


ONLY_A = ("failed_recall", "wpm_at_or_above_cap")  # steps of design A's study only


def _flow(frames: dict, table: str, analysed: pd.DataFrame | None = None, optional=ONLY_A) -> dict:
    """The sample flow, ending at the participants the figures use (`analysed`: their rows)."""
    participants = _studied(frames, table)
    rows = frames.get(table) if table != "participants" else None
    return exclusion_flow(participants, rows, table, analysed=analysed, optional=optional)


def _studied(frames: dict, table: str) -> pd.DataFrame | None:
    """The participants of the studies `table` holds: a participants.csv that also lists other
    studies (another design's, in a folder of several) had them in the flow and the counts,
    which the figures never use."""
    participants, design = frames.get("participants"), frames.get(table)
    if (
        participants is None
        or design is None
        or design is participants
        or not uses_study(design, participants)
    ):
        return participants
    return participants[participants["study"].isin(set(design["study"].dropna()))]


def _count_of(frames: dict, table: str) -> int | None:
    participants = _studied(frames, table)
    return None if participants is None else int(len(participants))


# --- design A --------------------------------------------------------------------------------


def _design_a(frames: dict, rng: np.random.Generator, bootstrap: int, options: dict) -> dict:
    if "judgements" not in frames:
        raise ValueError("table 'judgements' is missing (needed for design A)")
    judgements = frames["judgements"]
    participants = frames.get("participants")
    responses = frames.get("responses")
    warnings = []
    df, mask = dialogues.analysed_rows(judgements, participants, warnings)
    biases = dialogues.biases_in(df)
    skipped = {}

    h1 = dialogues.h1_regression(df)
    if h1 is None:
        skipped["h1_regression"] = "the model cannot be estimated on these data (too few or separated)"
    by_location = dialogues.choose_a_by_location(df, h1)
    per_bias = dialogues.per_bias_fits(df, biases)
    if per_bias is None:
        skipped["per_bias"] = "no biased dialogues, or the joint model cannot be estimated"
    boot = dialogues.joint_bootstrap(df, biases, bootstrap, rng) if per_bias is not None else None
    if boot is None:
        skipped["joint_bootstrap"] = "needs the per-bias model and at least 2 replicates"
    elif not boot["biases"]:
        skipped["joint_bootstrap"] = (
            f"{boot['failed']} of {boot['replicates']} bootstrap replicates could not be fitted (for "
            "example, a bias's judgements all one way in the resample: too few participants per "
            "condition); "
            f"standard errors from the others would be too small (at most "
            f"{dialogues.MAX_FAILED_SHARE:.0%} may fail)"
        )
    cascade = dialogues.detection_cascade(df, biases)
    if cascade is None:
        skipped["detection"] = (
            "no bias-detection answers (the study has no bias-detection step, or nobody answered it)"
        )
    accuracy_detection = dialogues.by_detection(df, "correct")
    following_detection = None
    try:
        following_detection = dialogues.by_detection(df, "followed_bias")
    except ValueError as error:
        skipped["detection_following"] = str(error)
    expertise = dialogues.by_expertise(
        df, responses, options["expertise_key"], options["expertise_prefix"], options["_item_order"]
    )
    if expertise is not None and not expertise["levels"]:
        expertise = None  # the item named, and nobody analysed answered it: no figure to draw
    if expertise is None and responses is None:
        skipped["expertise"] = "no responses table"
    elif expertise is None and options["expertise_key"]:
        skipped["expertise"] = f"no answers to the expertise item {options['expertise_key']!r}"
    elif expertise is None:
        skipped["expertise"] = (
            f"no expertise item (Figure 15): no Likert item whose key starts with "
            f"{options['expertise_prefix']!r}; name another with the option expertise_key"
        )
    among = expertise.pop("chosen_among", None) if expertise else None
    if among:
        warnings.append(
            f"Figure 15 uses {expertise['key']!r}, the first in the files' row order of the expertise "
            f"items on one page ({', '.join(among)}): without the study's "
            "study.json beside the CSVs the order of its items is not known. Set the option "
            "expertise_key to choose."
        )
    llm_participants = llm_judges.analyse(frames.get(llm_judges.TABLE), warnings)  # None without any
    keys = participant_key(df, uses_study(df))
    results = {
        "n": {
            "participants": _count_of(frames, "judgements"),
            "judgements": int(len(judgements)),
            "analysed": int(len(df)),
            "analysed_participants": int(keys.nunique()),
            "baseline": int((df["signed_active_side"] == 0).sum()),
            "biased": int((df["signed_active_side"] != 0).sum()),
            "studies": _studies(judgements, _studied(frames, "judgements")),
        },
        "exclusion_flow": _flow(frames, "judgements", df, optional=()),
        "fill": dialogues.fill_per_dialogue(judgements, mask, options["_dialogues"]),
        "accuracy": dialogues.accuracy_tables(df, biases),
        "choose_a_by_location": by_location,
        "h1_regression": h1,
        "per_bias": per_bias,
        "joint_bootstrap": boot,
        "detection_cascade": cascade,
        "detection_accuracy": accuracy_detection,
        "detection_following": following_detection,
        "expertise": expertise,
        "llm_participants": llm_participants,
        "skipped": skipped,
        "warnings": warnings,
    }
    results["items"] = _items(frames, df, options)
    results["tables"] = _tables_a(results)
    return results


def _items(frames: dict, analysed: pd.DataFrame, options: dict) -> list[dict] | None:
    """The study's own items over the participants the figures use (None without responses)."""
    return items.summarise(frames.get("responses"), analysed, options["_item_kinds"], options["_item_order"])


def _items_table(summary: list[dict]) -> dict:
    return make_table(
        "items",
        "The study's own items, among the participants analysed",
        ["Item", "Answered", "Answers"],
        [[i["key"], f"{i['answered']} of {i['participants']}", items.summary_text(i)] for i in summary],
        "Questionnaire, screening and attention-check items, in the order of the study's pages "
        "where study.json gives it. Likert answers show their coding in brackets. Free-text answers "
        "are not shown here: they are in responses.csv.",
    )


def _terms_rows(terms: list[dict], labels: dict[str, str]) -> list[list]:
    return [
        [
            labels.get(t["term"], t["term"]),
            rnd(t["log_odds"]),
            rnd(t["se"]),
            rnd(t["odds_ratio"]),
            None if t["or_lo"] is None else f"[{t['or_lo']:.3f}, {t['or_hi']:.3f}]",
            rnd(t["z"], 2),
            sig(t["p"]),
        ]
        for t in terms
    ]


TERM_COLUMNS = ["Parameter", "Log-odds", "SE", "Odds ratio", "95% CI (OR)", "z", "p"]


def _tables_a(r: dict) -> list[dict]:
    title = dialogues.BIAS_TITLES
    out = [exclusion_table(r["exclusion_flow"], "table_35", "Sample flow (Table 35)")]
    out.append(
        make_table(
            "figure_5",
            "Analysed judgements per dialogue (Figure 5)",
            ["Dialogue", "Analysed", "All judgements"],
            [[f["dialogue"], f["analysed"], f["judgements"]] for f in r["fill"]],
        )
    )
    rows = [
        [title.get(a["condition"], a["condition"]), a.get("active_side", ""), a["n"], pct(a["p"]), _ci(a)]
        for a in r["accuracy"].get("by_condition_side", r["accuracy"]["by_condition"])
    ]
    out.append(
        make_table(
            "accuracy_by_condition",
            "Accuracy by condition and biased role",
            ["Condition", "Biased role", "N", "Accuracy (%)", "95% CI"],
            rows,
            "Accuracy: choosing the side that argues for the true culprit. 95% Wilson intervals.",
        )
    )
    out.append(
        make_table(
            "table_39",
            "Observed and model-implied % choosing side A by active-bias location (Table 39)",
            ["Condition", "N", "Observed % choosing A", "95% CI", "Model-implied % choosing A"],
            [
                [x["title"], x["n"], pct(x["p"]), _ci(x), pct(x["implied_p"])]
                for x in r["choose_a_by_location"]
            ],
            "Model-implied: from the Table 40 regression. 95% Wilson intervals.",
        )
    )
    if r["h1_regression"]:
        out.append(
            make_table(
                "table_40",
                "Signed logistic regression predicting side A selection from bias location (Table 40)",
                TERM_COLUMNS,
                _terms_rows(
                    r["h1_regression"]["terms"],
                    {
                        "intercept": "Intercept (β0)",
                        "signed_active_side": "Active-side location (β1, +1 A / −1 B)",
                    },
                ),
                f"N = {r['h1_regression']['n']}. Wald 95% intervals and p-values.",
            )
        )
    if r["per_bias"]:
        out.append(
            make_table(
                "table_41",
                "Cell counts and fitted coefficient of the signed active-side predictor per bias (Table 41)",
                [
                    "Bias",
                    "N",
                    "Bias on A",
                    "Bias on B",
                    "β (log-odds)",
                    "SE",
                    "Odds ratio",
                    "p",
                    "β, baseline + this bias only",
                ],
                [
                    [
                        title.get(b["bias"], b["bias"]),
                        b["n"],
                        b["on_a"],
                        b["on_b"],
                        rnd(b["log_odds"]),
                        rnd(b["se"]),
                        rnd(b["odds_ratio"]),
                        sig(b["p"]),
                        rnd(b["subset_log_odds"]),
                    ]
                    for b in r["per_bias"]["biases"]
                ],
                "One joint model: a shared intercept over all judgements and one signed predictor per bias "
                "(this reproduces the paper's coefficients). Last column: a separate fit on the "
                "baseline and that bias.",
            )
        )
    boot = r["joint_bootstrap"]
    if boot and boot["biases"]:
        omnibus = boot.get("omnibus")
        note = (
            "Effect: model-implied shift toward the manipulated side, (P(A | bias on A) − P(A | "
            "bias on B)) / 2, in "
            f"percentage points. SE and percentile 95% CI over {boot['replicates']} bootstrap "
            "replicates resampling "
            f"participants from the whole sample ({boot['failed']} failed to converge and were left out)."
        )
        if omnibus:
            note += (
                f" Omnibus Wald test of equal effects: χ²({omnibus['df']}) = {omnibus['chi2']:.2f}, "
                f"p = {sig(omnibus['p'])}."
            )
        out.append(
            make_table(
                "table_42",
                "Joint-bootstrap standard errors used in the omnibus comparison (Table 42)",
                ["Bias", "Effect (pp)", "Joint-bootstrap SE (pp)", "95% CI (pp)"],
                [
                    [
                        title.get(b["bias"], b["bias"]),
                        rnd(b["effect_pp"], 1),
                        rnd(b["se_pp"], 1),
                        f"[{b['lo_pp']:.1f}, {b['hi_pp']:.1f}]",
                    ]
                    for b in boot["biases"]
                ],
                note,
            )
        )
    if r["detection_cascade"]:
        rows = []
        for c in r["detection_cascade"]:
            name = (
                "Baseline (false alarm)"
                if c["condition"] == "baseline"
                else (
                    "All manipulated"
                    if c["condition"] == "all"
                    else title.get(c["condition"], c["condition"])
                )
            )
            rows.append(
                [
                    name,
                    c["total"],
                    _n_pct(c["presence"], c["total"]),
                    _n_pct(c["side"], c["total"]),
                    _n_pct(c["type"], c["total"]),
                ]
            )
        out.append(
            make_table(
                "table_43",
                "Bias-detection cascade by manipulation type (Table 43)",
                [
                    "Condition",
                    "Total",
                    "Bias presence (% of total)",
                    "Correct side (% of total)",
                    "Correct type (% of total)",
                ],
                rows,
                "Nested levels: side requires presence, type requires side. Baseline: said a side "
                "was manipulated.",
            )
        )
    names = {
        "presence": "Correctly identified bias presence",
        "side": "Correctly identified side",
        "type": "Correctly identified type",
    }
    for key, data, label in (
        ("table_44", r["detection_accuracy"], "Accurate"),
        ("table_45", r["detection_following"], "Followed"),
    ):
        if not data:
            continue
        what = "Adjudication accuracy" if key == "table_44" else "Bias-following"
        out.append(
            make_table(
                key,
                f"{what} at each level of bias detection ({'Table 44' if key == 'table_44' else 'Table 45'})",
                ["Detection criterion", "Met", f"{label} (%)", "Not met", f"{label} (%)", "Diff. (pp)", "p"],
                [
                    [
                        names[x["level"]],
                        x["met"]["n"],
                        pct(x["met"]["p"]),
                        x["not_met"]["n"],
                        pct(x["not_met"]["p"]),
                        rnd(x["diff_pp"], 1),
                        sig(x["p"]),
                    ]
                    for x in data
                ],
                "Biased dialogues only. p: Wald test of a logistic regression of the outcome on "
                "the met indicator.",
            )
        )
    if r["expertise"]:
        out.append(
            make_table(
                "figure_15",
                f"Accuracy and bias-following by self-reported expertise ({r['expertise']['key']}) "
                "(Figure 15)",
                [
                    "Level",
                    "Answer",
                    "N",
                    "Accuracy (%)",
                    "95% CI",
                    "N biased",
                    "Bias-following (%)",
                    "95% CI",
                ],
                [
                    [
                        rnd(x["level"], 2),
                        x["label"],
                        x["accuracy"]["n"],
                        pct(x["accuracy"]["p"]),
                        _ci(x["accuracy"]),
                        x["followed"]["n"],
                        pct(x["followed"]["p"]),
                        _ci(x["followed"]),
                    ]
                    for x in r["expertise"]["levels"]
                ],
                f"95% Wilson intervals. {r['expertise']['unanswered']} analysed judgements without "
                "an answer to the item.",
            )
        )
    # LLM participants (Tables 30-34), or a note that there are none.
    out += llm_judges.report_tables(r["llm_participants"])
    return out


# --- design B --------------------------------------------------------------------------------


def _design_b(frames: dict, rng: np.random.Generator, bootstrap: int, options: dict) -> dict:
    if "claim_judgements" not in frames:
        raise ValueError("table 'claim_judgements' is missing (needed for design B)")
    sessions = frames["claim_judgements"]
    participants = frames.get("participants")
    responses = frames.get("responses")
    llm_warnings: list[str] = []
    df, mask = live.analysed_rows(sessions, participants, llm_warnings)
    skipped = {}
    models = None
    if len(df):
        models = live.mixed_models(
            df,
            responses,
            options["covariates"],
            options["categorical_covariates"],
            options["protocol_reference"],
            options["group_reference"],
            int(options["quadrature_nodes"]),
        )
        if models["combined"] is None:
            skipped["mixed_models"] = "the combined model cannot be estimated on these data (e.g. separation)"
    else:
        skipped["mixed_models"] = "no analysed sessions"
    keys = participant_key(df, uses_study(df))
    llm_judges_b = llm_persona.analyse(
        frames.get(llm_persona.JUDGEMENTS), frames.get(llm_persona.RATINGS), participants, llm_warnings
    )
    results = {
        "warnings": llm_warnings,
        "n": {
            "participants": _count_of(frames, "claim_judgements"),
            "sessions": int(len(sessions)),
            "analysed": int(len(df)),
            "analysed_participants": int(keys.nunique()),
            "groups": sorted(df["group"].unique().tolist()),
            "protocols": sorted(df["protocol"].astype(str).unique().tolist()),
            "studies": _studies(sessions, _studied(frames, "claim_judgements")),
        },
        "exclusion_flow": _flow(frames, "claim_judgements", df),
        "fill": live.fill(sessions, mask, participants),
        "accuracy": live.accuracy(df),
        "protocol_comparison": live.protocol_comparison(df),
        "consultant_agreement": live.consultant_agreement(df),
        "transitions": live.transitions(df),
        "confidence_shift": live.confidence_shift(df),
        "brier": live.brier(df),
        "calibration": live.calibration(df, int(options["calibration_bins"])),
        "mixed_models": models,
        # Persona/naive judges and strategy raters (optional tables; None without them).
        "llm_judges": llm_judges_b,
        "skipped": skipped,
    }
    results["items"] = _items(frames, df, options)
    results["tables"] = _tables_b(results)
    return results


def _tables_b(r: dict) -> list[dict]:
    out = [exclusion_table(r["exclusion_flow"])]
    out.append(
        make_table(
            "fill",
            "Analysed sessions per group, protocol and claim",
            ["Group", "Protocol", "Claim", "Analysed", "Sessions"],
            [[f["group"], f["protocol"], f["claim"], f["analysed"], f["sessions"]] for f in r["fill"]],
        )
    )
    out.append(
        make_table(
            "figure_1",
            "Accuracy before and after by protocol and belief group (Figure 1)",
            [
                "Protocol",
                "Group",
                "N",
                "Initial accuracy (%)",
                "95% CI",
                "Final accuracy (%)",
                "95% CI",
                "Change (pp)",
            ],
            [
                [
                    a["protocol"],
                    a["group"],
                    a["final"]["n"],
                    pct(a["initial"]["p"]),
                    _ci(a["initial"]),
                    pct(a["final"]["p"]),
                    _ci(a["final"]),
                    rnd(a["change_pp"], 1),
                ]
                for a in r["accuracy"]["by_protocol_group"]
            ],
            "Sessions with both an initial and a final answer. 95% Wilson intervals.",
        )
    )
    if r["protocol_comparison"]:
        out.append(
            make_table(
                "protocol_comparison",
                "Final accuracy, debate vs consultancy",
                ["Group", "Debate (%)", "N", "Consultancy (%)", "N", "Diff. (pp)", "p"],
                [
                    [
                        c["group"],
                        pct(c["debate"]["p"]),
                        c["debate"]["n"],
                        pct(c["consultancy"]["p"]),
                        c["consultancy"]["n"],
                        rnd(c["diff_pp"], 1),
                        sig(c["p"]),
                    ]
                    for c in r["protocol_comparison"]
                ],
                "p: Wald test of a two-group logistic regression (sessions treated as "
                "independent; see the mixed models).",
            )
        )
    if r["consultant_agreement"]:
        out.append(
            make_table(
                "table_1",
                "Consultancy accuracy when the consultant agrees or disagrees with the initial "
                "answer (Table 1)",
                ["Group", "Consultant", "N", "Before (%)", "After (%)"],
                [
                    [
                        c["group"],
                        c["consultant"],
                        c["initial"]["n"],
                        pct(c["initial"]["p"]),
                        pct(c["final"]["p"]),
                    ]
                    for c in r["consultant_agreement"]
                ],
            )
        )
    cells = r["transitions"]["cells"]
    rows = []
    for c in cells:
        row = [c["protocol"], c["group"], c["n"]]
        for name, _, _ in live.TRANSITIONS:
            row += [pct(c[name]["p"]), rnd(c[name]["confidence_change"], 1)]
        rows.append(row)
    columns = ["Protocol", "Group", "N"]
    for name, _, _ in live.TRANSITIONS:
        columns += [f"{live.TRANSITION_TITLES[name]} (%)", "Δ confidence"]
    tests = "; ".join(
        f"{t['group']}: χ²({t['df']}) = {t['chi2']:.2f}, p = {sig(t['p'])}" for t in r["transitions"]["tests"]
    )
    out.append(
        make_table(
            "figure_3",
            "Answer transitions and confidence change (Figure 3)",
            columns,
            rows,
            "Δ confidence: mean final − initial confidence. Protocol × transition chi-square "
            f"tests: {tests or 'n/a'}.",
        )
    )
    if r["confidence_shift"]:
        out.append(
            make_table(
                "table_2",
                "Belief change: truth-aligned confidence shift, belief improved, answer changed (Table 2)",
                [
                    "Protocol",
                    "Group",
                    "N",
                    "Truth-aligned shift",
                    "SE",
                    "p",
                    "Belief improved (%)",
                    "Answer changed (%)",
                ],
                [
                    [
                        c["protocol"],
                        c["group"],
                        c["n"],
                        rnd(c["mean_shift"], 2),
                        rnd(c["se"], 2),
                        sig(c["p"]),
                        pct(c["improved"]["p"]),
                        pct(c["changed"]["p"]),
                    ]
                    for c in r["confidence_shift"]
                ],
                "Truth-aligned confidence: +confidence if correct, −confidence if not; shift = "
                "final − initial; one-sample t test.",
            )
        )
    out.append(
        make_table(
            "brier",
            "Brier scores (Figure 5)",
            ["Protocol", "Group", "N", "Brier (final)", "Brier (initial)"],
            [[b["protocol"], b["group"], b["n"], rnd(b["final"]), rnd(b["initial"])] for b in r["brier"]],
            "Brier: mean of (confidence/100 − correct)²; lower is better.",
        )
    )
    rows = [
        [
            c["protocol"],
            f"{100 * b['lo']:.0f}–{100 * b['hi']:.0f}",
            b["accuracy"]["n"],
            pct(b["mean_confidence"]),
            pct(b["accuracy"]["p"]),
            _ci(b["accuracy"]),
        ]
        for c in r["calibration"]
        for b in c["bins"]
    ]
    out.append(
        make_table(
            "calibration",
            "Calibration of final answers (Figure 5)",
            ["Protocol", "Confidence bin (%)", "N", "Mean confidence (%)", "Accuracy (%)", "95% CI"],
            rows,
        )
    )
    models = r["mixed_models"]
    if models:
        rows = []
        notes = []
        for name, model in [("combined", models["combined"])] + [
            (f"{p} only", m) for p, m in models["per_protocol"].items()
        ]:
            if not model:
                continue
            for t in model["terms"]:
                ci = None if t["or_lo"] is None else f"[{t['or_lo']:.2f}, {t['or_hi']:.2f}]"
                rows.append(
                    [name, t["term"], rnd(t["odds_ratio"]), ci, sig(t["p"]), rnd(t["log_odds"]), rnd(t["se"])]
                )
            notes.append(
                f"{name}: σ(participant) = {model['sigma']:.3f}, N = {model['n_obs']} judgements "
                f"of {model['n_participants']} participants"
            )
        method = next((m["method"] for m in [models["combined"], *models["per_protocol"].values()] if m), "")
        refs = ", ".join(f"{k}: {v}" for k, v in models["references"].items() if v)
        out.append(
            make_table(
                "mixed_models",
                "Mixed-effects logistic regressions of final correctness",
                ["Model", "Term", "Odds ratio", "95% CI", "p", "Log-odds", "SE"],
                rows,
                " ".join(
                    part
                    for part in (
                        f"{method}." if method else "",
                        f"Reference levels: {refs}." if refs else "",
                        "; ".join(notes) + "." if notes else "",
                    )
                    if part
                ),
            )
        )
    # LLM judges (paper 001, Study II and Table 3), or a note that there are none.
    out += llm_persona.report_tables(r["llm_judges"])
    return out


# --- design D --------------------------------------------------------------------------------


def _design_d(frames: dict, rng: np.random.Generator, bootstrap: int, options: dict) -> dict:
    if "comparisons" not in frames:
        raise ValueError("table 'comparisons' is missing (needed for design D)")
    comparisons = frames["comparisons"]
    participants = frames.get("participants")
    responses = frames.get("responses")
    df, labels, left_out = pairwise.counted_comparisons(comparisons, participants)
    alpha = float(options["alpha"])
    main = pairwise.strengths_with_intervals(df, labels, bootstrap, rng, alpha)
    global_ranks = {name: main["strengths"][name]["rank"] for name in labels}
    references = {name: as_ranks(ranking) for name, ranking in (options["reference_rankings"] or {}).items()}
    values = pairwise.subgroup_values(
        df, responses, dict(options["subgroups"]), "age", options["age_edges"], tuple(options["skip_values"])
    )
    skipped = {}
    if not values:
        skipped["subgroups"] = (
            "no responses table"
            if responses is None
            else "none of the subgroup items ("
            + ", ".join(dict(options["subgroups"]).values())
            + ") was answered: name the study's own with the option subgroups"
        )
    warnings = []
    if len(main["groups"]) > 1:
        groups = "; ".join("{" + ", ".join(g) + "}" for g in main["groups"])
        warnings.append(
            f"The comparisons fall into {len(main['groups'])} groups never compared with each other "
            f"({groups}): the ranking orders each group within itself, and says nothing of one "
            "group's interlocutors against another's."
        )
    warnings += pairwise.left_out_warnings(left_out)
    apart = [
        n
        for n in main["ranking"]
        if main["strengths"][n]["comparisons"] and not main["strengths"][n]["estimable"]
    ]
    if apart:
        warnings.append(
            f"Not estimable from the data: {', '.join(apart)} (never beaten, or never beat anyone; "
            "ties count half): their strengths and intervals come from the regularisation, not the "
            "answers."
        )
    fill = []
    if {"instance_set", "instance"} <= set(comparisons.columns):
        real = comparisons
        if "is_check" in real.columns:
            real = real[~real["is_check"].astype("boolean").fillna(False).astype(bool)]
        counted = real.assign(
            _valid=real.index.isin(comparisons.index[_valid_mask(comparisons, participants)])
        )
        grouped = counted.groupby(["instance_set", "instance"], sort=True)["_valid"].sum()
        fill = [{"instance_set": s, "instance": int(i), "valid": int(v)} for (s, i), v in grouped.items()]
    results = {
        "n": {
            "participants": _count_of(frames, "comparisons"),
            "comparisons": int(len(comparisons)),
            "valid": int(len(df)),
            "annotators": int(participant_key(df, uses_study(df)).nunique()),
            "interlocutors": len(labels),
            "studies": _studies(comparisons, _studied(frames, "comparisons")),
        },
        "exclusion_flow": _flow(frames, "comparisons", df),
        "fill": fill,
        "checks": pairwise.checks(comparisons),
        "win_matrix": {"labels": labels, "wins": main["wins"]},
        "strengths": main["strengths"],
        "ranking": main["ranking"],
        "reliability": pairwise.reliability(df),
        "subgroups": pairwise.subgroup_rankings(df, labels, global_ranks, values, references, alpha),
        "references": {name: compare_rankings(global_ranks, ref) for name, ref in references.items()},
        "groups": main["groups"],
        "skipped": skipped,
        "warnings": warnings,
    }
    results["items"] = _items(frames, df, options)
    results["tables"] = _tables_d(results, list(references), alpha, bootstrap)
    return results


def _valid_mask(comparisons: pd.DataFrame, participants: pd.DataFrame | None) -> np.ndarray:
    valid = pairwise.valid_comparisons(comparisons.assign(_row=np.arange(len(comparisons))), participants)
    mask = np.zeros(len(comparisons), dtype=bool)
    mask[valid["_row"].to_numpy(dtype=int)] = True
    return mask


def _tables_d(r: dict, reference_names: list[str], alpha: float, bootstrap: int) -> list[dict]:
    out = [exclusion_table(r["exclusion_flow"])]
    rows = []
    for name in r["ranking"]:
        s = r["strengths"][name]
        ci = None if s["lo"] is None else f"[{s['lo']:.3f}, {s['hi']:.3f}]"
        if ci and not s["estimable"]:
            ci += " (not estimable)"
        ranks = None if s["rank_lo"] is None else f"{s['rank_lo']:g}–{s['rank_hi']:g}"
        rows.append(
            [
                s["rank"],
                name,
                rnd(s["strength"]),
                rnd(s["normalised"]),
                ci,
                ranks,
                s["wins"],
                s["comparisons"],
            ]
        )
    out.append(
        make_table(
            "table_3",
            "Bradley–Terry ranking of interlocutors (Table 3)",
            [
                "Rank",
                "Interlocutor",
                "θ (log-strength)",
                "θ̂ (min-max normalised)",
                "95% bootstrap CI (θ)",
                "95% rank range",
                "Wins",
                "Comparisons",
            ],
            rows,
            f"I-LSR (choix), regularisation {alpha:g}; ties count half a win. {r['n']['valid']} "
            "valid answers. "
            f"Intervals: 2.5/97.5 percentiles over {bootstrap} resamples of the comparisons.",
        )
    )
    columns = ["Subgroup", "n (annotators)", "|Ann.|"]
    for ref in ["global"] + reference_names:
        columns += [f"d_τ vs {ref}", f"d_footrule vs {ref}", f"α ordinal vs {ref}", f"α nominal vs {ref}"]
    rows = []
    for name in reference_names:
        c = r["references"][name]
        rows.append(
            [f"Global vs {name}", r["n"]["annotators"], r["n"]["valid"]]
            + [None] * 4
            + [
                rnd(c["kendall_tau_distance"]),
                rnd(c["footrule_distance"]),
                rnd(c["alpha_ordinal"]),
                rnd(c["alpha_nominal"]),
            ]
            + [None] * 4 * (len(reference_names) - 1)
        )
    for g in r["subgroups"]:
        row = [f"{g['attribute']}: {g['value']}", g["annotators"], g["annotations"]]
        for ref in ["global"] + reference_names:
            c = g[f"vs_{ref}"]
            row += [
                rnd(c["kendall_tau_distance"]),
                rnd(c["footrule_distance"]),
                rnd(c["alpha_ordinal"]),
                rnd(c["alpha_nominal"]),
            ]
        rows.append(row)
    out.append(
        make_table(
            "table_4",
            "Ranking agreement between each subgroup ranking and the global ranking (Table 4)",
            columns,
            rows,
            "Kendall's τ distance / n(n−1)/2 and Spearman's footrule / ⌊n²/2⌋ (lower = closer); "
            "Krippendorff's α over the rank vectors (higher = closer).",
        )
    )
    labels = r["win_matrix"]["labels"]
    out.append(
        make_table(
            "win_matrix",
            "Win matrix (row judged more persuasive than column; ties half)",
            [""] + labels,
            [[label] + [rnd(w, 1) for w in row] for label, row in zip(labels, r["win_matrix"]["wins"])],
        )
    )
    rel = r["reliability"]
    out.append(
        make_table(
            "reliability",
            "Inter-annotator reliability",
            ["Measure", "Nominal Krippendorff's α"],
            [
                ["Persuasiveness answer", rnd(rel["winner_alpha_nominal"])],
                ["Confidence", rnd(rel["confidence_alpha_nominal"])],
            ],
            "Units: instances with at least two valid answers "
            f"({rel.get('units_with_two_or_more', 0)} of {rel['units']}).",
        )
    )
    out.append(
        make_table(
            "fill",
            "Valid answers per instance",
            ["Instance set", "Instance", "Valid answers"],
            [[f["instance_set"], f["instance"], f["valid"]] for f in r["fill"]],
        )
    )
    return out


# --- design C --------------------------------------------------------------------------------


def _require_c(dialogues: pd.DataFrame, moves: pd.DataFrame | None) -> None:
    """The columns without which design C's figures would come out empty rather than wrong-
    looking: how each dialogue ended, and who wrote each sentence and what move it made (a
    spreadsheet's "Outcome" had made every dialogue open, without a word)."""
    if "outcome" not in dialogues.columns:
        require(dialogues, "persuasion_dialogues", ["status"], "how each dialogue ended, without `outcome`")
    if moves is not None and not moves.empty:
        require(moves, "persuasion_moves", ["author", "kind"], "the move kinds by author")
    # A seat's column without the other's counted every agent (or person) on one side only:
    # records and rankings half-wrong, without a word.
    seats = (("agent", "each agent's record and the rankings"), ("participant_id", "the human seats"))
    for name, purpose in seats:
        pair = [f"pro_{name}", f"con_{name}"]
        if any(c in dialogues.columns for c in pair):
            require(dialogues, "persuasion_dialogues", pair, purpose)


def _design_c(frames: dict, rng: np.random.Generator, bootstrap: int, options: dict) -> dict:
    if "persuasion_dialogues" not in frames:
        raise ValueError("table 'persuasion_dialogues' is missing (needed for design C)")
    if options["draws"] not in persuasion.DRAW_RULES:
        raise ValueError(f"option draws must be one of {', '.join(persuasion.DRAW_RULES)}")
    every = frames["persuasion_dialogues"]
    moves = frames.get("persuasion_moves")
    participants = frames.get("participants")
    comparisons = frames.get("comparisons")
    alpha = float(options["alpha"])
    skipped = {}
    df, dropped = every, 0
    if options["exclude_excluded_participants"]:
        df, dropped = persuasion.exclude_excluded(every, participants)
    if moves is not None and dropped and "dialogue_id" in moves.columns and "dialogue_id" in df.columns:
        by_study = uses_study(moves, df)  # dialogue ids start again in each study
        kept = set(subject_key(df, "dialogue_id", by_study))
        moves = moves[subject_key(moves, "dialogue_id", by_study).isin(kept).to_numpy()]
    _require_c(every, moves)
    warnings = []
    unnamed = persuasion.wins_without_winner(df)
    if unnamed:
        warnings.append(
            f"{unnamed} dialogue{'s' if unnamed > 1 else ''} won without a side in `winner` (pro or con): "
            "counted as won in the outcomes, left out of every agent's record and of the rankings."
        )
    outcome = persuasion.outcomes(df)
    if df.empty:
        skipped["outcomes"] = "no dialogues"
    if not (outcome.isin(persuasion.OUTCOMES)).any() and not df.empty:
        skipped["outcomes"] = "no dialogue has ended yet"
    agents = persuasion.per_agent(df)
    if not agents:
        skipped["agents"] = "no dialogue with an agent"
    human_ai = persuasion.human_vs_ai(df)
    if not human_ai:
        skipped["human_vs_ai"] = "no human-versus-AI dialogue"
    if moves is None:
        skipped["moves"] = "no persuasion_moves table"
    move_stats = persuasion.move_distribution(moves)
    if moves is not None and not move_stats["by_author"]:
        skipped["moves"] = "no classified sentences"
    logical = persuasion.logical_ranking(
        df, draws=options["draws"], replicates=bootstrap, rng=rng, alpha=alpha
    )
    if logical is None:
        counted = persuasion.logical_outcomes(df, options["draws"])
        agents_seen = set(counted["interlocutor_1"]) | set(counted["interlocutor_2"])
        if counted.empty:
            why = "no finished model-versus-model dialogue between two different agents"
            if options["draws"] == "exclude" and not persuasion.logical_outcomes(df, "half").empty:
                why += " with a winner (draws are left out: option draws='exclude')"
        else:
            why = f"needs at least two agents; the dialogues have {len(agents_seen)}"
        skipped["logical_ranking"] = why
    crowd = None
    if comparisons is None:
        skipped["crowd_ranking"] = "no comparisons table (design D) for the crowd's ranking"
    else:
        try:
            crowd = persuasion.crowd_ranking(
                comparisons, participants, replicates=bootstrap, rng=rng, alpha=alpha
            )
        except ValueError as error:  # the optional crowd's file: its section only says why
            skipped["crowd_ranking"] = f"comparisons.csv cannot be used for the crowd's ranking: {error}"
        else:
            if crowd is None:
                skipped["crowd_ranking"] = "no valid comparisons of two or more interlocutors"
            else:
                left_out = pairwise.left_out_warnings(crowd.pop("left_out"))
                warnings += [f"The crowd's ranking (comparisons.csv): {w}" for w in left_out]
    agreement = persuasion.ranking_agreement(logical, crowd)
    flat = [
        name
        for name, result in (("logical", logical), ("crowd's", crowd))
        if result is not None and len(set(persuasion.ranks_of(result).values())) < 2
    ]
    if agreement is not None and flat:
        # Every agent tied (every dialogue a draw, say): no order to agree or disagree with.
        agreement = None
        ties = " and the ".join(flat)
        skipped["ranking_agreement"] = f"the {ties} ranking ties every agent: no order to compare"
    elif agreement is None and "logical_ranking" not in skipped and "crowd_ranking" not in skipped:
        skipped["ranking_agreement"] = "the two rankings share no agents"
    elif agreement is not None and agreement["n"] < 2:
        skipped["ranking_agreement"] = (
            f"the two rankings share {agreement['n']} agent(s); agreement needs two or more"
        )
    elif agreement is None:
        skipped["ranking_agreement"] = "needs both the logical and the crowd ranking"
    fill = []
    if not df.empty:
        text = {c: persuasion._text(df, c) for c in ("topic", "pairing")}  # either may be absent
        ended = outcome.isin(persuasion.OUTCOMES)
        grouped = pd.DataFrame({**text, "ended": ended.to_numpy()}).groupby(["topic", "pairing"], sort=True)
        fill = [
            {"topic": t, "pairing": p, "dialogues": int(len(g)), "ended": int(g["ended"].sum())}
            for (t, p), g in grouped
        ]
    people, seats = set(), []
    for side in ("pro", "con"):
        column = f"{side}_participant_id"
        if column in df.columns:
            seat = df[df[column].notna()].assign(participant_id=lambda f, c=column: f[c])
            people |= set(participant_key(seat, uses_study(seat)))
            seats.append(seat)
    agent_names = set()
    for side in ("pro", "con"):
        if f"{side}_agent" in df.columns:
            agent_names |= set(df[f"{side}_agent"].dropna().astype(str)) - {""}
    results = {
        "n": {
            "dialogues": int(len(every)),
            "analysed": int(len(df)),
            "excluded_participant_dialogues": dropped,
            "ended": int(outcome.isin(persuasion.OUTCOMES).sum()),
            "open": int((outcome == "open").sum()),
            "sentences": int(len(moves)) if moves is not None else None,
            "participants": len(people),
            "agents": len(agent_names),
            "topics": int(df["topic"].nunique()) if "topic" in df.columns else 0,
            "batches": sorted(set(df["batch"].dropna().astype(str)) - {""}) if "batch" in df.columns else [],
            "studies": _studies(every, moves, participants),
        },
        "exclusion_flow": _flow(frames, "participants") if participants is not None else None,
        "fill": fill,
        "outcomes": persuasion.outcome_summary(df),
        "agents": agents,
        "human_vs_ai": human_ai,
        "moves": move_stats,
        "logical_ranking": logical,
        "crowd_ranking": crowd,
        "ranking_agreement": agreement,
        "self_play": persuasion.self_play(df),
        "skipped": skipped,
        "warnings": warnings,
    }
    # The people in the seats of the dialogues analysed are the participants the figures use.
    humans = pd.concat(seats, ignore_index=True) if seats else None
    results["items"] = _items(frames, humans, options) if humans is not None and len(humans) else None
    results["tables"] = _tables_c(results, options, bootstrap)
    return results


def _rate(prop: dict) -> str | None:
    if prop.get("p") is None:
        return None
    return f"{100 * prop['p']:.1f} [{100 * prop['lo']:.1f}, {100 * prop['hi']:.1f}]"


def _outcome_row(label: str, s: dict) -> list:
    return [
        label,
        s["dialogues"],
        s["ended"],
        s["win"],
        _rate(s["rates"]["win"]),
        s["draw"],
        _rate(s["rates"]["draw"]),
        s["abandoned"],
        _rate(s["rates"]["abandoned"]),
        s["open"],
    ]


def _strength_rows(result: dict | None) -> list[list]:
    if not result:
        return []
    rows = []
    for name in result["ranking"]:
        s = result["strengths"][name]
        ci = None if s["lo"] is None else f"[{s['lo']:.3f}, {s['hi']:.3f}]"
        if ci and not s["estimable"]:
            ci += " (not estimable)"
        ranks = None if s["rank_lo"] is None else f"{s['rank_lo']:g}–{s['rank_hi']:g}"
        rows.append([s["rank"], name, rnd(s["strength"]), rnd(s["normalised"]), ci, ranks, s["wins"]])
    return rows


def _tables_c(r: dict, options: dict, bootstrap: int) -> list[dict]:
    skipped = r["skipped"]
    out = []
    if r["exclusion_flow"]:
        out.append(exclusion_table(r["exclusion_flow"]))
    out.append(
        make_table(
            "fill",
            "Dialogues per topic and pairing",
            ["Topic", "Pairing", "Dialogues", "Ended"],
            [[f["topic"], f["pairing"], f["dialogues"], f["ended"]] for f in r["fill"]],
            "No dialogues." if not r["fill"] else "",
        )
    )
    o = r["outcomes"]
    columns = [
        "Pairing",
        "Dialogues",
        "Ended",
        "Wins",
        "Win % [95% CI]",
        "Draws",
        "Draw % [95% CI]",
        "Abandoned",
        "Abandoned % [95% CI]",
        "Open",
    ]
    rows = [_outcome_row("all", o["overall"])] + [_outcome_row(p["pairing"], p) for p in o["by_pairing"]]
    note = (
        "Rates over ended dialogues (won, drawn or abandoned); open dialogues are counted apart. "
        "95% Wilson intervals."
    )
    if r["n"]["excluded_participant_dialogues"]:
        note += (
            f" {r['n']['excluded_participant_dialogues']} dialogue(s) with an excluded participant left out."
        )
    if "outcomes" in skipped:
        note = f"Not computed: {skipped['outcomes']}. " + note
    out.append(make_table("outcomes_by_pairing", "Outcomes by pairing", columns, rows, note))
    out.append(
        make_table(
            "end_reasons",
            "How the ended dialogues ended",
            ["End reason", "Dialogues", "Share (%)", "95% CI"],
            [
                [x["end_reason"], x["dialogues"], pct(x["share"]["p"]), _ci(x["share"])]
                for x in o["by_reason"]
            ],
            "conceded / retracted: a win by the rules; turn_limit / time_limit: a draw; the others: "
            "abandonments.",
        )
    )
    out.append(
        make_table(
            "outcomes_by_agent",
            "Outcomes per agent configuration (each seat held is one appearance)",
            [
                "Agent",
                "Appearances",
                "vs humans",
                "vs agents",
                "Won",
                "Lost",
                "Drawn",
                "Abandoned",
                "Win % of decided [95% CI]",
                "Draw % of decided [95% CI]",
            ],
            [
                [
                    a["agent"],
                    a["appearances"],
                    a["against_humans"],
                    a["against_agents"],
                    a["won"],
                    a["lost"],
                    a["draw"],
                    a["abandoned"],
                    _rate(a["win_rate"]),
                    _rate(a["draw_rate"]),
                ]
                for a in r["agents"]
            ],
            f"Not computed: {skipped['agents']}."
            if "agents" in skipped
            else "Decided: won, lost or drawn (abandoned left out). An agent playing itself appears twice.",
        )
    )
    out.append(
        make_table(
            "human_vs_ai",
            "Human versus AI: how often the human won, per agent",
            [
                "Agent",
                "Dialogues",
                "Decided",
                "Abandoned",
                "Human wins",
                "Human win % [95% CI]",
                "Agent wins",
                "Agent win % [95% CI]",
                "Draws",
                "Draw % [95% CI]",
            ],
            [
                [
                    h["agent"],
                    h["dialogues"],
                    h["decided"],
                    h["abandoned"],
                    h["human_wins"],
                    _rate(h["human_win_rate"]),
                    h["agent_wins"],
                    _rate(h["agent_win_rate"]),
                    h["draws"],
                    _rate(h["draw_rate"]),
                ]
                for h in r["human_vs_ai"]
            ],
            f"Not computed: {skipped['human_vs_ai']}."
            if "human_vs_ai" in skipped
            else "Rates over decided dialogues (won or drawn); 95% Wilson intervals.",
        )
    )
    m = r["moves"]
    authors = [a["author"] for a in m["by_author"]]
    kinds = list(dict.fromkeys(k["kind"] for k in m["kinds"]))
    cell = {(k["author"], k["kind"]): k for k in m["kinds"]}
    rows = [[kind] + [pct(cell[(a, kind)]["p"]) for a in authors] for kind in kinds]
    rows += [["(legal sentences)"] + [a["legal"] for a in m["by_author"]]]
    rows += [["(refused)"] + [a["refused"] for a in m["by_author"]]]
    rows += [["(unclassified)"] + [a["unclassified"] for a in m["by_author"]]]
    rows += [["(fallback classification)"] + [a["fallback"] for a in m["by_author"]]]
    out.append(
        make_table(
            "move_kinds",
            "Move kinds by author (% of legal sentences)",
            ["Move"] + [f"{a} (%)" for a in authors],
            rows if authors else [],
            f"Not computed: {skipped['moves']}."
            if "moves" in skipped
            else "Each sentence is one move; shares among the sentences the protocol accepted. Wilson "
            "intervals in results.json (moves.kinds).",
        )
    )
    logical = r["logical_ranking"]
    draws = {"half": "a draw counts half a win to each", "exclude": "draws are left out"}[options["draws"]]
    strength_columns = [
        "Rank",
        "Agent",
        "θ (log-strength)",
        "θ̂ (min-max normalised)",
        "95% bootstrap CI (θ)",
        "95% rank range",
        "Wins",
    ]
    note = (
        f"Not computed: {skipped['logical_ranking']}."
        if "logical_ranking" in skipped
        else f"{logical['dialogues']} finished model-versus-model dialogues ({logical['wins']} won, "
        f"{logical['draws_counted']} drawn); a win counts for the winner over the loser, {draws}. "
        f"I-LSR (choix), regularisation {float(options['alpha']):g}; intervals: 2.5/97.5 percentiles "
        f"over {bootstrap} resamples of the dialogues. Self-play ({r['self_play']}) left out."
    )
    out.append(
        make_table(
            "logical_ranking",
            "Logical Bradley–Terry ranking of agents from dialogue outcomes",
            strength_columns,
            _strength_rows(logical),
            note,
        )
    )
    labels = logical["labels"] if logical else []
    out.append(
        make_table(
            "logical_win_matrix",
            "Model-versus-model win matrix (row beat column)",
            [""] + labels,
            [[label] + [rnd(w, 1) for w in row] for label, row in zip(labels, logical["win_matrix"])]
            if logical
            else [],
            f"Not computed: {skipped['logical_ranking']}." if not logical else f"Draws: {draws}.",
        )
    )
    crowd = r["crowd_ranking"]
    agreement = r["ranking_agreement"]
    names = sorted(set(labels) | set(crowd["labels"] if crowd else []))
    rows = []
    for name in names:
        lr = logical["strengths"].get(name) if logical else None
        cr = crowd["strengths"].get(name) if crowd else None
        rows.append(
            [
                name,
                lr["rank"] if lr else None,
                rnd(lr["strength"]) if lr else None,
                cr["rank"] if cr else None,
                rnd(cr["strength"]) if cr else None,
            ]
        )
    if agreement is not None and agreement["n"] >= 2:
        note = (
            f"On the {agreement['n']} agents both rank: Kendall's τ distance "
            f"{rnd(agreement['kendall_tau_distance'])}, Spearman's footrule distance "
            f"{rnd(agreement['footrule_distance'])} (0 = same order, 1 = reversed), Krippendorff's α "
            f"ordinal {rnd(agreement['alpha_ordinal'])}, nominal {rnd(agreement['alpha_nominal'])}."
        )
        if agreement["only_in_a"] or agreement["only_in_b"]:
            note += (
                f" Only in the logical ranking: {', '.join(agreement['only_in_a']) or 'none'}; only in the "
                f"crowd's: {', '.join(agreement['only_in_b']) or 'none'}."
            )
    else:
        reasons = [
            skipped[k] for k in ("logical_ranking", "crowd_ranking", "ranking_agreement") if k in skipped
        ]
        note = "No comparison: " + "; ".join(reasons) + "."
    out.append(
        make_table(
            "logical_vs_crowd",
            "Logical (dialogue outcomes) versus crowd (pairwise comparisons) ranking",
            ["Agent", "Logical rank", "Logical θ", "Crowd rank", "Crowd θ"],
            rows,
            note,
        )
    )
    return out


def _plots_c(r: dict):
    from analysis.metrics import plots

    pairings = r["outcomes"]["by_pairing"]
    if any(p["ended"] for p in pairings):
        fig = plots._figure(max(6.0, 1.2 * len(pairings) + 3), 4.2)
        ax = fig.add_subplot()
        bottom = [0.0] * len(pairings)
        for i, name in enumerate(persuasion.OUTCOMES):
            values = [100 * (p["rates"][name]["p"] or 0) for p in pairings]
            ax.bar(range(len(pairings)), values, bottom=bottom, color=plots.COLOURS[i], label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_xticks(range(len(pairings)), [f"{p['pairing']}\nn={p['ended']}" for p in pairings])
        ax.set_ylabel("% of ended dialogues")
        ax.set_ylim(0, 100)
        ax.set_title("Outcomes by pairing")
        ax.legend(frameon=False, bbox_to_anchor=(1.01, 1), loc="upper left")
        yield "outcomes", fig
    human = [h for h in r["human_vs_ai"] if h["decided"]]
    if human:
        yield (
            "human_vs_ai",
            plots._accuracy_bars(
                [f"{h['agent']}\nn={h['decided']}" for h in human],
                {
                    "human wins": [h["human_win_rate"] for h in human],
                    "draws": [h["draw_rate"] for h in human],
                },
                "Human versus AI: human win and draw rates per agent (95% Wilson)",
                "% of decided dialogues",
            ),
        )
    m = r["moves"]
    if m["by_author"]:
        kinds = list(dict.fromkeys(k["kind"] for k in m["kinds"]))
        series = {
            a["author"]: [
                next(k for k in m["kinds"] if k["author"] == a["author"] and k["kind"] == kind)
                for kind in kinds
            ]
            for a in m["by_author"]
        }
        fig = plots._accuracy_bars(kinds, series, "Move kinds by author (95% Wilson)", "% of legal sentences")
        yield "move_kinds", fig
    logical, crowd = r["logical_ranking"], r["crowd_ranking"]
    if logical:
        order = logical["ranking"]
        fig = plots._figure(8, max(4.0, 0.4 * len(order) + 1.5))
        ax = fig.add_subplot()
        ys = list(range(len(order)))[::-1]
        for i, (name, result) in enumerate((("logical", logical), ("crowd", crowd))):
            if not result:
                continue
            s = result["strengths"]
            shown = [(y, n) for y, n in zip(ys, order) if n in s]
            offset = -0.12 if i == 0 else 0.12
            values = [s[n]["strength"] for _, n in shown]
            y = [v + offset for v, _ in shown]
            if all(s[n]["lo"] is not None for _, n in shown):
                lows, highs = [s[n]["lo"] for _, n in shown], [s[n]["hi"] for _, n in shown]
                err = plots.interval_bars(values, lows, highs)
                ax.errorbar(values, y, xerr=err, fmt="o", capsize=3, color=plots.COLOURS[i], label=name)
            else:
                ax.plot(values, y, "o", color=plots.COLOURS[i], label=name)
        ax.set_yticks(ys, order, fontsize=8)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("Bradley–Terry log-strength (mean 0), 95% bootstrap interval")
        ax.set_title("Logical ranking of agents" + (" beside the crowd's" if crowd else ""))
        ax.legend(frameon=False)
        ax.grid(axis="x", alpha=0.3)
        yield "strengths", fig
