"""Persona and naive judges' results for the job's admin page (pure Python over item results;
the analysis report computes the same and more from the export in
`analysis.metrics.llm_persona`).

One row per judge label and kind (persona, then naive), and the humans of the same sessions:
accuracy k/n before and after the conversation, and how often the judge's answer is the
human's (k/n, on the same sessions)."""

from __future__ import annotations

from collections.abc import Iterable

KIND_ORDER = {"persona": 0, "naive": 1}


def _k_n(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)}"


def summary_rows(results: Iterable[dict], labels: list[str]) -> list[dict]:
    results = list(results)
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        groups.setdefault((r["judge"], r["kind"]), []).append(r)
    order = {label: n for n, label in enumerate(labels)}
    rows = []
    for (label, kind), found in sorted(
        groups.items(),
        key=lambda kv: (order.get(kv[0][0], len(order)), kv[0][0], KIND_ORDER.get(kv[0][1], 2)),
    ):
        rows.append(
            {
                "Judge": label,
                "Kind": kind,
                "Sessions": len(found),
                "Initial accuracy": _k_n([r["initial_correct"] for r in found]),
                "Final accuracy": _k_n([r["final_correct"] for r in found]),
                "Same initial answer as the human": _k_n(
                    [r["initial_answer"] == r["human"].get("initial_answer") for r in found]
                ),
                "Same final answer as the human": _k_n(
                    [r["final_answer"] == r["human"].get("final_answer") for r in found]
                ),
            }
        )
    sessions = {r["session"]: r for r in results}.values()
    if sessions:
        rows.append(
            {
                "Judge": "Humans",
                "Kind": "",
                "Sessions": len(sessions),
                "Initial accuracy": _k_n([r["human"].get("initial_answer") == r["truth"] for r in sessions]),
                "Final accuracy": _k_n([r["human"].get("final_answer") == r["truth"] for r in sessions]),
                "Same initial answer as the human": "",
                "Same final answer as the human": "",
            }
        )
    return rows
