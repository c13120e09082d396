"""Strategy raters' results for the job's admin page (pure Python over item results; the
analysis report computes the same and the raters' agreement from the export in
`analysis.metrics.llm_persona`).

One row per strategy label and debater configuration: each rater's mean level (none 0, low 1,
medium 2, high 3) over the debaters it rated, and Table 3's figure: the debaters whom every
rater found using the strategy (a level above "none"), k/n over the debaters all raters rated."""

from __future__ import annotations

from collections.abc import Iterable

from debates.judges.strategy_prompts import SCORES


def summary_rows(results: Iterable[dict], labels: list[str], raters: list[str]) -> list[dict]:
    by_debater: dict[tuple, dict[str, dict]] = {}
    for r in results:
        by_debater.setdefault((r["debater_config"], r["session"], r["debater"]), {})[r["rater"]] = r
    configs = sorted({key[0] for key in by_debater})
    rows = []
    for label in labels:
        for config in configs:
            rated = [found for key, found in by_debater.items() if key[0] == config]
            row = {"Strategy": label, "Debater": config or "—"}
            for rater in raters:
                scores = [
                    SCORES[f[rater]["ratings"][label]]
                    for f in rated
                    if rater in f and label in f[rater]["ratings"]
                ]
                row[rater] = f"{sum(scores) / len(scores):.2f}" if scores else "–"
            complete = [f for f in rated if all(r in f and label in f[r]["ratings"] for r in raters)]
            detected = sum(all(f[r]["ratings"][label] != "none" for r in raters) for f in complete)
            row["Detected by every rater"] = f"{detected}/{len(complete)}"
            rows.append(row)
    return rows
