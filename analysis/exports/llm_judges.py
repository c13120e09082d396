"""LLM participants' export (design A, paper 000 Tables 30-34): one row per dialogue judged by
one model, from the finished items of the "llm_participants" jobs configured on the study."""

from __future__ import annotations

from collections.abc import Iterator

from analysis.exports.table import ALL, Table, col, flag, iso
from debates.judges.services import study_items
from studies.models import Study

SIGNED = {"A": 1, "B": -1, "": 0}


def llm_judgement_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    for item in study_items(study.slug, window):
        r, judge = item.result, item.payload.get("judge") or {}
        active = r.get("active_side_letter") or ""
        yield {
            "job": item.job.name,
            "item": item.key,
            "dialogue": r["dialogue"],
            "case": r["case"],
            "condition": r["condition"],
            "active_side": r["active_side"],
            "variant": r["variant"],
            "side_a": r["side_a"],
            "culprit_side": r["culprit_side"],
            "active_side_letter": active,
            "signed_active_side": SIGNED.get(active, 0),
            "judge": r["judge"],
            "model": r["model"],
            "temperature": judge.get("temperature", ""),
            "template_version": r.get("template_version", ""),
            "chosen_side": r["side"],
            "chose_a": flag(r["side"] == "A"),
            "correct": flag(r["correct"]),
            "followed_bias": flag(r["side"] == active) if active else "",
            "confidence": r["confidence"],
            "reasoning": r["reasoning"],
            "cost_usd": item.cost_usd,
            "finished_at": iso(item.finished_at),
        }


LLM_JUDGEMENT_COLUMNS = [
    col("job", "The LLM job's name (several jobs may judge the same study)."),
    col("item", "The job item: '<dialogue>:<judge>'."),
    col("dialogue", "Dialogue slug."),
    col("case", "Case slug."),
    col("condition", "The condition's slug (paper 000's: baseline, anchoring, fallacy_oversight, …)."),
    col("active_side", "Role carrying the bias: none, culprit or rival."),
    col("variant", "V1 or V2; empty for baseline."),
    col("side_a", "Whom side A argues for: culprit or rival."),
    col("culprit_side", "The side (A or B) arguing for the true culprit."),
    col("active_side_letter", "The side (A or B) carrying the bias; empty for baseline."),
    col("signed_active_side", "+1 bias on side A, -1 bias on side B, 0 baseline."),
    col("judge", "The judge's label in the job's configuration (a Table 31 column: CH, CS, …)."),
    col("model", "The model the judge called (as configured; the call log has what answered)."),
    col("temperature", "The judge's sampling temperature."),
    col("template_version", "Version of the 'llm_participant' prompt template used."),
    col("chosen_side", "Side the model chose: A or B."),
    col("chose_a", "1 if the model chose side A."),
    col("correct", "1 if the chosen side argues for the true culprit."),
    col("followed_bias", "1 if the chosen side is the biased side; empty for baseline."),
    col("confidence", "The model's confidence in its choice, 0-100."),
    col("reasoning", "The model's reasoning (raw text: escape before showing in HTML)."),
    col("cost_usd", "What the item's calls cost, at the judge's configured prices."),
    col("finished_at", "When the item finished (UTC)."),
]


LLM_JUDGEMENTS = Table(
    "llm_judgements",
    "One row per dialogue judged by an LLM participant (design A, paper 000 Tables 30-34).",
    LLM_JUDGEMENT_COLUMNS,
    llm_judgement_rows,
    windowed=True,
    kinds=frozenset({"judgement"}),
)
