"""The job kind "persona_judges" (paper 001, Study II): each finished human claim session of a
design-B study judged again by each configured model, once with a persona built from that
human's screening and questionnaire answers and once naive (without it), with the human's
protocol: the claim alone, answer and confidence; then the transcript the human saw, the
final answer, confidence and justification (two calls, JSON answers, one conversation).

plan: one item per session x judge model x kind (persona, naive, or the configured one), key
"<session id>:<label>:<kind>", the model's settings frozen in the payload. run: the prompts
from the latest "claim_judge_persona", "claim_judge_initial" and "claim_judge_final"
templates; the result of `persona_prompts.result_of` with the templates' versions.
summary: per judge and kind, accuracy and agreement with the humans (`persona_results`).
"""

from __future__ import annotations

import json

from django import forms

from debates import llm
from debates.jobs import templates
from debates.jobs.kinds import ItemFailed, ItemSpec, JobKind
from debates.judges import persona_prompts as prompts
from debates.judges import persona_results, persona_services
from debates.judges.kinds import JudgeModelsField
from debates.judges.prompts import JudgeModel
from debates.models import LiveSession
from debates.streaming import db

DEFAULT_MAX_TOKENS = 500
ROLES = {prompts.PERSONA: "persona_judge", prompts.NAIVE: "naive_judge"}
KINDS = {"both": (prompts.PERSONA, prompts.NAIVE), "persona": (prompts.PERSONA,), "naive": (prompts.NAIVE,)}


class PersonaJudgesForm(forms.Form):
    study = forms.ChoiceField(
        choices=persona_services.claim_study_choices,
        help_text="The design-B study whose finished claim sessions are judged again (its judgements "
        "are in the study's export, llm_persona_judgements).",
    )
    models = JudgeModelsField(
        help_text="One judge a line: label | model | temperature | price in | price out (USD per million "
        "tokens). Paper 001 used GPT-4o (and Qwen-2.5-7B as a naive judge)."
    )
    judges = forms.ChoiceField(
        choices=[("both", "Persona and naive"), ("persona", "Persona only"), ("naive", "Naive only")],
        initial="both",
        required=False,
        help_text="Persona: told the human's screening and questionnaire answers. Naive: told nothing. "
        "(Empty: both.)",
    )
    max_tokens = forms.IntegerField(min_value=50, max_value=8000, initial=DEFAULT_MAX_TOKENS, required=False)
    seed = forms.IntegerField(required=False, help_text="Sent to the models that accept a seed.")


def _job_config(item) -> dict:
    return item.job.config or {}


def _templates() -> dict:
    return {
        stage: templates.latest(name, prompts.DEFAULTS[stage]) for stage, name in prompts.TEMPLATES.items()
    }


class PersonaJudgesKind(JobKind):
    key = persona_services.KIND
    label = "Persona and naive judges (design B)"
    description = (
        "Each human claim session judged again by models with the human's persona (their screening "
        "answers) and without one, with the same protocol: initial and final answers with confidence "
        "(paper 001, Study II)."
    )
    config_form = PersonaJudgesForm

    def plan(self, job) -> list[ItemSpec]:
        judges = job.config.get("models") or []
        kinds = KINDS.get(job.config.get("judges") or "both", KINDS["both"])
        return [
            ItemSpec(
                key=f"{session_id}:{judge['label']}:{kind}",
                payload={"session": session_id, "judge": judge, "kind": kind},
            )
            for session_id in persona_services.sessions_for(job.config.get("study") or "").values_list(
                "pk", flat=True
            )
            for judge in judges
            for kind in kinds
        ]

    async def run(self, item, calls) -> dict:
        judge = JudgeModel.from_config(item.payload["judge"])
        kind = item.payload["kind"]
        try:
            view = await db(persona_services.session_view)(item.payload["session"])
        except LiveSession.DoesNotExist:
            raise ItemFailed(f"the claim session {item.payload['session']} no longer exists") from None
        found = await db(_templates)()
        config = await db(_job_config)(item)
        messages = []
        if kind == prompts.PERSONA:
            messages.append({"role": "system", "content": prompts.render(found["persona"].text, view)})
        messages.append({"role": "user", "content": prompts.render(found["initial"].text, view)})

        def request(stage: str) -> llm.LLMRequest:
            return llm.LLMRequest(
                model=judge.model,
                messages=list(messages),
                temperature=judge.temperature,
                max_tokens=config.get("max_tokens") or DEFAULT_MAX_TOKENS,
                seed=config.get("seed"),
                hint=prompts.offline_hint(view, judge, kind, stage),
            )

        role = ROLES[kind]
        initial = await calls.json(
            request("initial"), prompts.INITIAL_SCHEMA, role=role, template=found["initial"], prices=judge
        )
        messages.append({"role": "assistant", "content": json.dumps(initial)})
        messages.append({"role": "user", "content": prompts.render(found["final"].text, view)})
        final = await calls.json(
            request("final"), prompts.FINAL_SCHEMA, role=role, template=found["final"], prices=judge
        )
        versions = {stage: found[stage].version for stage in ("initial", "final")}
        if kind == prompts.PERSONA:  # sent as the system message of both calls: it made data too
            versions["persona"] = found["persona"].version
            await db(templates.template_mark_used)(found["persona"].pk)
        return {**prompts.result_of(initial, final, view, judge, kind), "template_versions": versions}

    def summary(self, job) -> list[dict]:
        labels = [m["label"] for m in job.config.get("models") or []]
        return persona_results.summary_rows(persona_services.job_results(job), labels)
