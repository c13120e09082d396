"""PNG plots of an analysis results dict (matplotlib, Agg backend, no display).

Fill, accuracy with Wilson intervals, calibration curves, Bradley–Terry strengths, Figure 15.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

DPI = 110
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")


def figures(results: dict) -> dict[str, bytes]:
    """{name: PNG bytes} for the design of `results`."""
    design = results.get("design")
    makers = {"A": _design_a, "B": _design_b, "D": _design_d}.get(design)
    if makers is None:
        raise ValueError(f"results of an unknown design: {design!r}")
    return {name: _png(fig) for name, fig in makers(results) if fig is not None}


def plain_text():
    """Labels are the data's own text: a `$` in an interlocutor's or a claim's name is a dollar
    sign, not matplotlib's maths (which refused the whole report, or set text as formulas).
    Text reads the setting when it is made, so the figures are made inside this context."""
    return matplotlib.rc_context({"text.parse_math": False})


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _figure(width: float = 8.0, height: float = 4.5) -> Figure:
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _errors(props: list[dict]) -> tuple[list[float], list[list[float]]]:
    """Percentages and asymmetric error bars from proportions {p, lo, hi}."""
    p = [100 * (x["p"] or 0) if x["p"] is not None else float("nan") for x in props]
    lo = [max(0.0, 100 * (x["p"] - x["lo"])) if x["p"] is not None else 0 for x in props]
    hi = [max(0.0, 100 * (x["hi"] - x["p"])) if x["p"] is not None else 0 for x in props]
    return p, [lo, hi]


def interval_bars(values: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """Error bars (below, above) for estimates and their intervals, never negative: a
    bootstrap interval may sit a rounding error to one side of its estimate (every
    Bradley-Terry strength 0 within 1e-16: matplotlib refused the bars, and the report)."""
    return [
        [max(0.0, v - lo) for v, lo in zip(values, lows, strict=True)],
        [max(0.0, hi - v) for v, hi in zip(values, highs, strict=True)],
    ]


def _fill_bars(
    labels: list[str], analysed: list[int], total: list[int], title: str, xlabel: str
) -> Figure | None:
    if not labels:
        return None
    size = 7 if len(labels) > 30 else 9
    # The labels stand upright below the bars: the figure grows with the longest, so the bars
    # keep their height (several studies' dialogues, "study/dialogue", had collapsed the axes).
    below = max(len(str(label)) for label in labels) * size * 0.6 / 72  # inches
    fig = _figure(max(8.0, 0.18 * len(labels) + 2), 3.2 + below)
    ax = fig.add_subplot()
    x = range(len(labels))
    ax.bar(x, total, color="#d9d9d9", label="all")
    ax.bar(x, analysed, color=COLOURS[0], label="analysed")
    ax.set_xticks(list(x), labels, rotation=90, fontsize=size)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title)
    ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def _accuracy_bars(
    groups: list[str], series: dict[str, list[dict]], title: str, ylabel: str = "accuracy (%)"
) -> Figure | None:
    if not groups:
        return None
    fig = _figure(max(7.0, 0.9 * len(groups) + 3), 4.5)
    ax = fig.add_subplot()
    width = 0.8 / max(len(series), 1)
    for s, (name, props) in enumerate(series.items()):
        p, err = _errors(props)
        xs = [i - 0.4 + width * (s + 0.5) for i in range(len(groups))]
        ax.bar(xs, p, width, yerr=err, capsize=3, color=COLOURS[s % len(COLOURS)], label=name)
    ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=9)
    ax.set_ylim(0, 100)
    ax.axhline(50, color="grey", lw=0.8, ls=":")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    if len(series) > 1:
        ax.legend(frameon=False)
    return fig


# --- design A ----------------------------------------------------------------------------------


def _design_a(r: dict):
    fill = r.get("fill") or []
    yield (
        "fill",
        _fill_bars(
            [f["dialogue"] for f in fill],
            [f["analysed"] for f in fill],
            [f["judgements"] for f in fill],
            "Judgements per dialogue (Figure 5)",
            "dialogue",
        ),
    )
    rows = r.get("accuracy", {}).get("by_condition_side") or r.get("accuracy", {}).get("by_condition") or []
    labels = [
        (f"{x['condition']}\n({x['active_side']})" if "active_side" in x else x["condition"])
        + f"\nn={x['n']}"
        for x in rows
    ]
    yield (
        "accuracy",
        _accuracy_bars(labels, {"accuracy": rows}, "Accuracy by condition and biased role (95% Wilson)"),
    )
    location = r.get("choose_a_by_location") or []
    if location:
        fig = _accuracy_bars(
            [x["title"] for x in location],
            {"observed": location},
            "% choosing side A by bias location (Table 39)",
            "% choosing A",
        )
        ax = fig.axes[0]
        implied = [100 * x["implied_p"] if x.get("implied_p") is not None else float("nan") for x in location]
        ax.plot(range(len(location)), implied, "D", color="black", label="model-implied")
        ax.legend(frameon=False)
        yield "choose_a", fig
    expertise = r.get("expertise")
    if expertise and expertise["levels"]:
        fig = _figure(10, 4.2)
        for i, (key, title) in enumerate(
            (("accuracy", "Adjudication accuracy"), ("followed", "Bias-following"))
        ):
            ax = fig.add_subplot(1, 2, i + 1)
            levels = [x for x in expertise["levels"] if x[key]["p"] is not None]
            xs = [x["level"] for x in levels]
            ax.plot(xs, [100 * x[key]["p"] for x in levels], "o-", color=COLOURS[i])
            ax.fill_between(
                xs,
                [100 * x[key]["lo"] for x in levels],
                [100 * x[key]["hi"] for x in levels],
                color=COLOURS[i],
                alpha=0.2,
            )
            ax.set_xticks(xs, [f"{x['level']:g}\n{x['label'] or ''}" for x in levels], fontsize=8)
            ax.set_ylim(0, 100)
            ax.set_xlabel(f"self-reported expertise ({expertise['key']})")
            ax.set_ylabel("%")
            ax.set_title(f"{title} (95% Wilson band)")
            ax.grid(alpha=0.3)
        fig.suptitle("Accuracy and bias-following by expertise (Figure 15)")
        yield "expertise", fig


# --- design B ----------------------------------------------------------------------------------


def _design_b(r: dict):
    fill = r.get("fill") or []
    yield (
        "fill",
        _fill_bars(
            [f"{f['group']}/{f['protocol']}/{f['claim']}" for f in fill],
            [f["analysed"] for f in fill],
            [f["sessions"] for f in fill],
            "Sessions per group × protocol × claim",
            "group / protocol / claim",
        ),
    )
    rows = r.get("accuracy", {}).get("by_protocol_group") or []
    labels = [f"{a['protocol']}\n{a['group']}" for a in rows]
    yield (
        "accuracy",
        _accuracy_bars(
            labels,
            {"initial": [a["initial"] for a in rows], "final": [a["final"] for a in rows]},
            "Accuracy before and after by protocol and group (95% Wilson)",
        ),
    )
    calibration = r.get("calibration") or []
    if calibration:
        fig = _figure(6, 5.5)
        ax = fig.add_subplot()
        ax.plot([0, 100], [0, 100], ls="--", color="grey", lw=1, label="perfect calibration")
        brier = {b["protocol"]: b["final"] for b in r.get("brier", []) if b["group"] == "all"}
        for i, c in enumerate(calibration):
            bins = c["bins"]
            xs = [100 * b["mean_confidence"] for b in bins]
            p, err = _errors([b["accuracy"] for b in bins])
            score = brier.get(c["protocol"])
            label = c["protocol"] + (f" (Brier {score:.3f})" if score is not None else "")
            ax.errorbar(xs, p, yerr=err, fmt="o-", capsize=3, color=COLOURS[i % len(COLOURS)], label=label)
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 100)
        ax.set_xlabel("confidence in the final answer (%)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title("Calibration of final answers")
        ax.legend(frameon=False, loc="upper left")
        ax.grid(alpha=0.3)
        yield "calibration", fig
    cells = (r.get("transitions") or {}).get("cells") or []
    if cells:
        names = ("CC", "CI", "IC", "II")
        labels = [f"{c['protocol']}\n{c['group']}" for c in cells]
        fig = _figure(max(7.0, 0.9 * len(cells) + 3), 4.5)
        ax = fig.add_subplot()
        bottom = [0.0] * len(cells)
        for i, name in enumerate(names):
            values = [100 * (c[name]["p"] or 0) for c in cells]
            ax.bar(
                range(len(cells)),
                values,
                bottom=bottom,
                color=COLOURS[i],
                label=name.replace("C", "✓").replace("I", "✗"),
            )
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_xticks(range(len(cells)), labels, rotation=20, ha="right")
        ax.set_ylabel("% of sessions")
        ax.set_title("Answer transitions (initial → final; ✓ correct, ✗ incorrect)")
        ax.legend(frameon=False, bbox_to_anchor=(1.01, 1), loc="upper left")
        yield "transitions", fig


# --- design D ----------------------------------------------------------------------------------


def _design_d(r: dict):
    order = r.get("ranking") or []
    strengths = r.get("strengths") or {}
    if order:
        fig = _figure(8, max(4.0, 0.32 * len(order) + 1.5))
        ax = fig.add_subplot()
        ys = list(range(len(order)))[::-1]
        values = [strengths[n]["strength"] for n in order]
        has_ci = all(strengths[n]["lo"] is not None for n in order)
        if has_ci:
            err = interval_bars(
                values, [strengths[n]["lo"] for n in order], [strengths[n]["hi"] for n in order]
            )
            ax.errorbar(values, ys, xerr=err, fmt="o", color=COLOURS[0], capsize=3)
        else:
            ax.plot(values, ys, "o", color=COLOURS[0])
        ax.set_yticks(ys, order, fontsize=8)
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("Bradley–Terry log-strength (mean 0)" + (", 95% bootstrap interval" if has_ci else ""))
        ax.set_title("Persuasiveness ranking of interlocutors")
        ax.grid(axis="x", alpha=0.3)
        yield "strengths", fig
    wins = (r.get("win_matrix") or {}).get("wins")
    labels = (r.get("win_matrix") or {}).get("labels") or []
    if wins and labels:
        fig = _figure(max(6.0, 0.35 * len(labels) + 2), max(5.0, 0.35 * len(labels) + 1.5))
        ax = fig.add_subplot()
        image = ax.imshow(wins, cmap="Blues")
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xlabel("column: judged less persuasive")
        ax.set_ylabel("row: judged more persuasive")
        ax.set_title("Win matrix (ties count half)")
        fig.colorbar(image, ax=ax, shrink=0.8)
        yield "win_matrix", fig
