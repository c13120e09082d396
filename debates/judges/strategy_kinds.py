"""The job kind "strategy_raters" (paper 001, Table 3): each debater of each live debate of a
design-B study rated by each configured model (two by default, as the paper's GPT-4o and
Gemini-2.0-Flash) on the configured persuasion strategies, "none" to "high".

plan: one item per debate session x debater (A, B) x rater, key "<session>:<A|B>:<label>",
the rater's settings and the labels frozen in the payload. run: the prompt from the latest
"strategy_rater" template, one JSON answer with a level per label (`Calls.json`), the result
of `strategy_prompts.result_of`. summary: `strategy_results.summary_rows`.
"""

from __future__ import annotations

from django import forms

from debates import llm
from debates.jobs import templates
from debates.jobs.kinds import ItemFailed, ItemSpec, JobKind
from debates.judges import strategy_prompts as prompts
from debates.judges import strategy_results, strategy_services
from debates.judges.kinds import JudgeModelsField
from debates.judges.persona_services import claim_study_choices
from debates.judges.prompts import JudgeModel
from debates.models import LiveSession
from debates.streaming import db

ROLE = "strategy_rater"
DEFAULT_MAX_TOKENS = 300
DEFAULT_RATERS = "GPT | gpt-4o | 0 | 2.5 | 10\nGEM | gemini-2.0-flash | 0 | 0.1 | 0.4"


class StrategyLabelsField(forms.CharField):
    """Strategy labels one a line ("name" or "name: description"); cleaned to a list of
    {"name", "description"}, and shown again as lines."""

    widget = forms.Textarea(attrs={"rows": 9, "cols": 90})

    def prepare_value(self, value):
        if isinstance(value, list):
            return prompts.format_labels([prompts.Label(v["name"], v.get("description", "")) for v in value])
        return value

    def to_python(self, value):
        if isinstance(value, list):
            value = self.prepare_value(value)
        text = super().to_python(value)
        try:
            labels = prompts.parse_labels(text if text.strip() else prompts.DEFAULT_LABELS)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None
        if not labels:
            raise forms.ValidationError("Name at least one strategy.")
        return [{"name": label.name, "description": label.description} for label in labels]


class RatersField(JudgeModelsField):
    """Judge models, the paper's two raters when left empty."""

    def to_python(self, value):
        return super().to_python(value or DEFAULT_RATERS)


class StrategyRatersForm(forms.Form):
    study = forms.ChoiceField(
        choices=claim_study_choices,
        help_text="The design-B study whose debates are rated (export llm_strategy_ratings).",
    )
    labels = StrategyLabelsField(
        initial=prompts.DEFAULT_LABELS,
        required=False,
        help_text="One strategy a line: name, or name: what it means (shown to the raters). The default "
        "(also when left empty) is the taxonomy paper 001 uses for Table 3.",
    )
    models = RatersField(
        initial=DEFAULT_RATERS,
        required=False,
        help_text="One rater a line: label | model | temperature | price in | price out (USD per million "
        "tokens). Paper 001 used two, GPT-4o and Gemini-2.0-Flash: the default (also when left empty).",
    )
    max_tokens = forms.IntegerField(min_value=50, max_value=8000, initial=DEFAULT_MAX_TOKENS, required=False)
    seed = forms.IntegerField(required=False, help_text="Sent to the models that accept a seed.")


def _job_config(item) -> dict:
    return item.job.config or {}


class StrategyRatersKind(JobKind):
    key = strategy_services.KIND
    label = "Strategy raters (design B)"
    description = (
        "Each debater of each live debate rated by two (or more) models on persuasion strategies, "
        "none to high (paper 001, Table 3)."
    )
    config_form = StrategyRatersForm

    def plan(self, job) -> list[ItemSpec]:
        raters = job.config.get("models") or []
        labels = job.config.get("labels") or []
        return [
            ItemSpec(
                key=f"{session_id}:{debater}:{rater['label']}",
                payload={"session": session_id, "debater": debater, "rater": rater, "labels": labels},
            )
            for session_id in strategy_services.debates_for(job.config.get("study") or "").values_list(
                "pk", flat=True
            )
            for debater in ("A", "B")
            for rater in raters
        ]

    async def run(self, item, calls) -> dict:
        rater = JudgeModel.from_config(item.payload["rater"])
        speaker = item.payload["debater"]
        labels = [prompts.Label(v["name"], v.get("description", "")) for v in item.payload["labels"]]
        try:
            view = await db(strategy_services.debate_view)(item.payload["session"])
        except LiveSession.DoesNotExist:
            raise ItemFailed(f"the debate session {item.payload['session']} no longer exists") from None
        template = await db(templates.latest)(prompts.TEMPLATE_NAME, prompts.DEFAULT_TEMPLATE)
        config = await db(_job_config)(item)
        request = llm.LLMRequest(
            model=rater.model,
            messages=[{"role": "user", "content": prompts.render(template.text, view, speaker, labels)}],
            temperature=rater.temperature,
            max_tokens=config.get("max_tokens") or DEFAULT_MAX_TOKENS,
            seed=config.get("seed"),
            hint=prompts.offline_hint(view, speaker, rater.label, labels),
        )
        answer = await calls.json(
            request, prompts.answer_schema(labels), role=ROLE, template=template, prices=rater
        )
        return {
            **prompts.result_of(answer, view, speaker, item.payload["rater"], labels),
            "template_version": template.version,
        }

    def summary(self, job) -> list[dict]:
        labels = [v["name"] for v in job.config.get("labels") or []]
        raters = [m["label"] for m in job.config.get("models") or []]
        return strategy_results.summary_rows(strategy_services.job_results(job), labels, raters)
