"""Design B's LLM judges (paper 001, Study II and Table 3): persona and naive judges' answers
to the human claim sessions (one row per session judged by one model, with or without the
human's persona, beside the human's own answers), and strategy ratings of the debaters (one
row per debater, rater and strategy), from the finished items of the study's
"persona_judges" and "strategy_raters" jobs."""

from __future__ import annotations

from collections.abc import Iterator

from analysis.exports.table import CHUNK, Table, active_exclusions, analysed, col, flag, iso
from debates.judges.persona_services import study_items
from debates.judges.strategy_prompts import SCORES
from debates.judges.strategy_services import KIND as STRATEGY_KIND
from debates.models import LiveSession
from studies.models import Study


def _answer(value) -> str:
    return "" if value is None else ("true" if value else "false")


def _same(a, b) -> str:
    return "" if a is None or b is None else flag(a == b)


def _sessions(study: Study) -> dict[int, LiveSession]:
    """The study's claim sessions whose participants the analysis reads (see `analysed`)."""
    queryset = LiveSession.objects.filter(analysed(), participant__study=study).select_related("participant")
    return {s.pk: s for s in queryset.iterator(chunk_size=CHUNK)}


def persona_judgement_rows(study: Study) -> Iterator[dict]:
    exclusions = active_exclusions(study)
    sessions = _sessions(study)
    for item in study_items(study.slug):
        r, judge = item.result, item.payload.get("judge") or {}
        s = sessions.get(r["session"])
        if s is None:  # a preview's or a pilot's (or deleted since)
            continue
        p = s.participant
        # The human's answers and status now (an answer cannot change once given).
        human = {
            k: getattr(s, k)
            for k in ("initial_answer", "initial_confidence", "final_answer", "final_confidence")
        }
        truth = r["truth"]
        yield {
            "job": item.job.name,
            "item": item.key,
            "session": s.pk,
            "participant_id": p.pk,
            "prolific_pid": p.prolific_pid,
            "participant_status": p.status,
            "excluded": flag(p.excluded),
            "exclusion_reasons": ";".join(sorted(exclusions.get(r["participant_id"], []))),
            "group": r["group"],
            "position": s.position,
            "claim": r["claim"],
            "domain": r["domain"],
            "truth": _answer(truth),
            "protocol": r["protocol"],
            "judge": r["judge"],
            "model": r["model"],
            "temperature": judge.get("temperature", ""),
            "judge_kind": r["kind"],
            "persona": r.get("persona", ""),
            "initial_answer": _answer(r["initial_answer"]),
            "initial_confidence": r["initial_confidence"],
            "initial_correct": flag(r["initial_correct"]),
            "final_answer": _answer(r["final_answer"]),
            "final_confidence": r["final_confidence"],
            "final_correct": flag(r["final_correct"]),
            "justification": r["justification"],
            "human_initial_answer": _answer(human.get("initial_answer")),
            "human_initial_confidence": human.get("initial_confidence"),
            "human_initial_correct": _same(human.get("initial_answer"), truth),
            "human_final_answer": _answer(human.get("final_answer")),
            "human_final_confidence": human.get("final_confidence"),
            "human_final_correct": _same(human.get("final_answer"), truth),
            "agrees_initial": _same(r["initial_answer"], human.get("initial_answer")),
            "agrees_final": _same(r["final_answer"], human.get("final_answer")),
            "template_versions": ";".join(
                f"{k}={v}" for k, v in sorted((r.get("template_versions") or {}).items())
            ),
            "cost_usd": item.cost_usd,
            "finished_at": iso(item.finished_at),
        }


PERSONA_JUDGEMENT_COLUMNS = [
    col("job", "The LLM job's name (several jobs may judge the same study)."),
    col("item", "The job item: '<session>:<judge>:<persona|naive>'."),
    col("session", "The human's claim session (the claim_judgements row: participant_id and position)."),
    col("participant_id", "Internal participant id (joins with participants and claim_judgements)."),
    col("prolific_pid", "The human's Prolific participant id."),
    col("participant_status", "The human's status now: completed, timed_out, …"),
    col("excluded", "1 if the human is excluded from analysis."),
    col("exclusion_reasons", "The human's exclusion reasons, ';'-separated."),
    col("group", "The human's belief group from the screening."),
    col("position", "The study step of the session."),
    col("claim", "Claim slug."),
    col("domain", "The claim's topic label."),
    col("truth", "The claim's truth label: true or false."),
    col("protocol", "debate or consultancy: what the human, and so the judge, read."),
    col("judge", "The judge's label in the job's configuration."),
    col("model", "The model the judge called (as configured; the call log has what answered)."),
    col("temperature", "The judge's sampling temperature."),
    col(
        "judge_kind",
        "persona (told the human's screening and questionnaire answers) or naive (told nothing).",
    ),
    col("persona", "The persona the judge was given (the human's answers in words); empty for naive."),
    col("initial_answer", "The judge's answer before reading the conversation: true or false."),
    col("initial_confidence", "The judge's confidence in that answer, 0-100."),
    col("initial_correct", "1 if the initial answer matches the truth label."),
    col("final_answer", "The judge's answer after reading the conversation the human saw."),
    col("final_confidence", "The judge's confidence in its final answer, 0-100."),
    col("final_correct", "1 if the final answer matches the truth label."),
    col("justification", "The judge's justification (raw text: escape before showing in HTML)."),
    col("human_initial_answer", "The human's initial answer in the same session."),
    col("human_initial_confidence", "The human's initial confidence, 0-100."),
    col("human_initial_correct", "1 if the human's initial answer matches the truth label."),
    col("human_final_answer", "The human's final answer in the same session."),
    col("human_final_confidence", "The human's final confidence, 0-100."),
    col("human_final_correct", "1 if the human's final answer matches the truth label."),
    col("agrees_initial", "1 if the judge's initial answer is the human's."),
    col("agrees_final", "1 if the judge's final answer is the human's."),
    col("template_versions", "Versions of the prompt templates used: 'final=1;initial=1;persona=1'."),
    col("cost_usd", "What the item's calls cost, at the judge's configured prices."),
    col("finished_at", "When the item finished (UTC)."),
]

LLM_PERSONA_JUDGEMENTS = Table(
    "llm_persona_judgements",
    "One row per human claim session judged again by an LLM judge with the human's persona or "
    "without one (design B, paper 001 Study II).",
    PERSONA_JUDGEMENT_COLUMNS,
    persona_judgement_rows,
    kinds=frozenset({"claim_session"}),
)


def strategy_rating_rows(study: Study) -> Iterator[dict]:
    sessions = set(
        LiveSession.objects.filter(analysed(), participant__study=study).values_list("pk", flat=True)
    )
    for item in study_items(study.slug, STRATEGY_KIND):
        r = item.result
        if r["session"] not in sessions:
            continue
        for label, level in r["ratings"].items():
            yield {
                "job": item.job.name,
                "item": item.key,
                "session": r["session"],
                "participant_id": r["participant_id"],
                "group": r["group"],
                "claim": r["claim"],
                "domain": r["domain"],
                "truth": _answer(r["truth"]),
                "debater": r["debater"],
                "debater_side": r["debater_side"],
                "debater_correct": flag(r["debater_correct"]),
                "debater_config": r["debater_config"],
                "rater": r["rater"],
                "model": r["model"],
                "strategy": label,
                "level": level,
                "score": SCORES.get(level),
                "detected": flag(level != "none"),
                "template_version": r.get("template_version", ""),
                "finished_at": iso(item.finished_at),
            }


STRATEGY_RATING_COLUMNS = [
    col("job", "The LLM job's name."),
    col("item", "The job item: '<session>:<debater>:<rater>'."),
    col("session", "The debate session rated."),
    col("participant_id", "The human judge of that debate (joins with participants)."),
    col("group", "The human judge's belief group."),
    col("claim", "Claim slug."),
    col("domain", "The claim's topic label."),
    col("truth", "The claim's truth label."),
    col("debater", "The rated debater: A or B."),
    col("debater_side", "The side the debater argued: true or false."),
    col("debater_correct", "1 if the debater argued the claim's true answer (Table 3's C), 0 if not (I)."),
    col("debater_config", "The debater's configuration name (model, prompt)."),
    col("rater", "The rater's label in the job's configuration."),
    col("model", "The rater's model (as configured)."),
    col("strategy", "The persuasion strategy rated (the job's labels)."),
    col("level", "The rater's level: none, low, medium or high."),
    col("score", "The level as a number: none 0, low 1, medium 2, high 3."),
    col("detected", "1 if the level is above none."),
    col("template_version", "Version of the 'strategy_rater' prompt template used."),
    col("finished_at", "When the item finished (UTC)."),
]

LLM_STRATEGY_RATINGS = Table(
    "llm_strategy_ratings",
    "One row per debater of a live debate, rater and persuasion strategy (design B, paper 001 Table 3).",
    STRATEGY_RATING_COLUMNS,
    strategy_rating_rows,
    kinds=frozenset({"claim_session"}),
)
