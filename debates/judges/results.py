"""The LLM participants' results as the rows of paper 000's Table 31 (pure Python over item
results, for the job's admin page; the analysis report computes the same from the export in
`analysis.metrics.llm_judges`).

One row per dialogue, ordered by case, the baseline first, then by bias, the bias on side A
("Active vs. Baseline") before on side B, then by variant: the side each judge chose,
accuracy k/n (judges choosing the culprit's side out of those that answered), and the
judges whose decision shifted against the case's baseline dialogue. A shift compares
correctness, not letters: the baseline may put the culprit on the other side.
"""

from __future__ import annotations

from collections.abc import Iterable

BIAS_ORDER = ("baseline", "anchoring", "fallacy_oversight", "pro_jargon", "verbosity")
BIAS_TITLES = {
    "anchoring": "Anchoring bias",
    "fallacy_oversight": "Fallacy oversight",
    "pro_jargon": "Pro-jargon",
    "verbosity": "Verbosity",
}
CONDITIONS = {"": "Baseline vs. Baseline", "A": "Active vs. Baseline", "B": "Baseline vs. Active"}


def condition_label(active_side_letter: str) -> str:
    return CONDITIONS.get(active_side_letter or "", "")


def _order(result: dict) -> tuple:
    condition = result.get("condition", "")
    rank = BIAS_ORDER.index(condition) if condition in BIAS_ORDER else len(BIAS_ORDER)
    return (
        result.get("case", ""),
        rank,
        condition,
        result.get("active_side_letter") or "",
        result.get("variant", ""),
    )


def by_dialogue(results: Iterable[dict]) -> dict[str, dict[str, dict]]:
    """{dialogue slug: {judge label: result}}, dialogues in Table 31's order."""
    grouped: dict[str, dict[str, dict]] = {}
    for result in sorted(results, key=lambda r: (_order(r), r["dialogue"])):
        grouped.setdefault(result["dialogue"], {})[result["judge"]] = result
    return grouped


def table_rows(results: Iterable[dict], labels: list[str]) -> list[dict]:
    """Table 31's rows (see the module docstring); a judge without an answer shows "–"."""
    grouped = by_dialogue(results)
    baselines = {
        next(iter(judged.values()))["case"]: judged
        for judged in grouped.values()
        if next(iter(judged.values()))["condition"] == "baseline"
    }
    rows = []
    for slug, judged in grouped.items():
        first = next(iter(judged.values()))
        baseline = baselines.get(first["case"]) if first["condition"] != "baseline" else None
        correct = sum(1 for r in judged.values() if r["correct"])
        shifted = [
            label
            for label in labels
            if baseline
            and label in judged
            and label in baseline
            and judged[label]["correct"] != baseline[label]["correct"]
        ]
        row = {
            "Dialogue": slug,
            "Case": first["case"],
            "Bias": BIAS_TITLES.get(
                first["condition"], "—" if first["condition"] == "baseline" else first["condition"]
            ),
            "A vs. B": f"{first['side_a']} vs. {'rival' if first['side_a'] == 'culprit' else 'culprit'}",
            "Condition": condition_label(first.get("active_side_letter", "")),
            "Variant": first.get("variant") or "—",
        }
        row.update({label: judged[label]["side"] if label in judged else "–" for label in labels})
        row["Accuracy"] = f"{correct}/{len(judged)}"
        row["Shifted vs. baseline"] = ", ".join(shifted) if baseline else ""
        rows.append(row)
    return rows


def accuracy_by_judge(results: Iterable[dict], labels: list[str]) -> dict[str, tuple[int, int]]:
    """{judge label: (correct, answered)}."""
    counts = {label: [0, 0] for label in labels}
    for result in results:
        k_n = counts.setdefault(result["judge"], [0, 0])
        k_n[0] += bool(result["correct"])
        k_n[1] += 1
    return {label: (k, n) for label, (k, n) in counts.items()}
