"""The job kind "llm_participants" (paper 000, Tables 30-34): every dialogue of a study (or
every dialogue) judged by each configured model with the participant prompt of Table 30.

plan: one item per dialogue x judge model, key "<dialogue slug>:<label>", the model's
settings frozen in the payload (a later change of the configuration does not change planned
items). run: the prompt from the latest "llm_participant" template, a JSON answer
{side, confidence, reasoning} through `Calls.json`, and the result of `prompts.result_of`.
summary: Table 31's rows, then each judge's accuracy over all dialogues.
"""

from __future__ import annotations

from django import forms

from debates import llm
from debates.jobs import templates
from debates.jobs.kinds import ItemFailed, ItemSpec, JobKind
from debates.judges import prompts, results, services
from debates.judges.prompts import JudgeModel
from debates.models import Dialogue, StudyDialogue
from debates.streaming import db

ROLE = "llm_participant"
DEFAULT_MAX_TOKENS = 600


def _study_choices() -> list[tuple[str, str]]:
    slugs = (
        StudyDialogue.objects.values_list("study__slug", "study__title").distinct().order_by("study__slug")
    )
    return [("", "Every dialogue"), *((slug, f"{slug} — {title}") for slug, title in slugs)]


class JudgeModelsField(forms.CharField):
    """Judge models written one a line, "label | model | temperature | price_in | price_out";
    cleaned to a list of dicts (JudgeModel.as_config), and shown again as lines."""

    widget = forms.Textarea(attrs={"rows": 6, "cols": 90})

    def prepare_value(self, value):
        if isinstance(value, list):
            return prompts.format_models([JudgeModel.from_config(m) for m in value])
        return value

    def to_python(self, value):
        if isinstance(value, list):  # a stored configuration, validated again
            value = self.prepare_value(value)
        text = super().to_python(value)
        try:
            models = prompts.parse_models(text)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None
        if not models:
            raise forms.ValidationError("Name at least one judge model.")
        return [m.as_config() for m in models]


class LLMParticipantsForm(forms.Form):
    study = forms.ChoiceField(
        choices=_study_choices,
        required=False,
        help_text="The study whose dialogues are judged (its judgements are in the study's export), "
        "or every dialogue.",
    )
    models = JudgeModelsField(
        help_text="One judge a line: label | model | temperature | price in | price out (USD per "
        "million tokens). Paper 000's six: CH, CS, GF, GP, G4M, G5."
    )
    max_tokens = forms.IntegerField(min_value=50, max_value=8000, initial=DEFAULT_MAX_TOKENS, required=False)
    seed = forms.IntegerField(required=False, help_text="Sent to the models that accept a seed.")


def _job_config(item) -> dict:
    return item.job.config or {}


class LLMParticipantsKind(JobKind):
    key = services.KIND
    label = "LLM participants (design A)"
    description = (
        "Each dialogue of a study judged by several models with the participant prompt of paper "
        "000 (Table 30); results like its Table 31."
    )
    config_form = LLMParticipantsForm

    def plan(self, job) -> list[ItemSpec]:
        judges = job.config.get("models") or []
        return [
            ItemSpec(
                key=f"{dialogue.slug}:{judge['label']}", payload={"dialogue": dialogue.slug, "judge": judge}
            )
            for dialogue in services.dialogues_for(job.config.get("study") or "")
            for judge in judges
        ]

    async def run(self, item, calls) -> dict:
        judge = JudgeModel.from_config(item.payload["judge"])
        try:
            view = await db(services.dialogue_view)(item.payload["dialogue"])
        except Dialogue.DoesNotExist:
            raise ItemFailed(f"the dialogue {item.payload['dialogue']!r} no longer exists") from None
        template = await db(templates.latest)(prompts.TEMPLATE_NAME, prompts.DEFAULT_TEMPLATE)
        config = await db(_job_config)(item)
        request = llm.LLMRequest(
            model=judge.model,
            messages=[{"role": "user", "content": prompts.render(template.text, view)}],
            temperature=judge.temperature,
            max_tokens=config.get("max_tokens") or DEFAULT_MAX_TOKENS,
            seed=config.get("seed"),
            hint=prompts.offline_hint(view, judge),
        )
        answer = await calls.json(request, prompts.ANSWER_SCHEMA, role=ROLE, template=template, prices=judge)
        return {**prompts.result_of(answer, view, judge), "template_version": template.version}

    def summary(self, job) -> list[dict]:
        found = services.job_results(job)
        if not found:
            return []
        labels = [m["label"] for m in job.config.get("models") or []]
        rows = results.table_rows(found, labels)
        accuracy = results.accuracy_by_judge(found, labels)
        total = sum(k for k, _ in accuracy.values()), sum(n for _, n in accuracy.values())
        rows.append(
            {
                **{column: "" for column in rows[0]},
                "Dialogue": "All dialogues",
                **{label: f"{k}/{n}" for label, (k, n) in accuracy.items() if label in rows[0]},
                "Accuracy": f"{total[0]}/{total[1]}",
            }
        )
        return rows
