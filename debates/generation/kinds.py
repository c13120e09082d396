"""The job kinds that build and check the design-A library (paper 000).

"generate_dialogues": for each chosen case, stage 0 selects the reasons of its culprit and
its rival (one item each, key "reasons:<case>:<role>"); stage 1 builds each chosen
condition of the 17 (key "dialogue:<case>:<NN>", NN as Table 2): the content plan, the six
turns, the quality judge on both sides, the manifestation check, regenerated with a new
seed up to the configured attempts. The kept attempt is saved as a library dialogue with its
quality and provenance; one that never passed is saved too, kept out of studies unless the
experimenter overrides.

"dialogue_quality": the same quality judge and manifestation check on dialogues already in
the library (imported ones, say), recorded on each dialogue.
"""

from __future__ import annotations

from django import forms

from debates.generation import pipeline, prompts, services, specs
from debates.generation.plans import Setup
from debates.jobs import templates as template_store
from debates.jobs.kinds import ItemFailed, ItemSpec, JobKind
from debates.jobs.services import item_results
from debates.models import Case, Dialogue
from debates.streaming import db

GENERATE = "generate_dialogues"
QUALITY = "dialogue_quality"
ROLES = ("culprit", "rival")


def _case_choices() -> list[tuple[str, str]]:
    return [
        (slug, f"{slug} — {title}")
        for slug, title in Case.objects.order_by("slug").values_list("slug", "title")
    ]


def _condition_choices() -> list[tuple[str, str]]:
    return [(str(c.number), f"{c.key} {c.label}") for c in specs.inventory()]


class ModelFields(forms.Form):
    """A generator and a judge, each with its temperature and prices."""

    generator_model = forms.CharField(initial="gpt-4o", help_text="The model that writes reasons and turns.")
    generator_temperature = forms.FloatField(initial=0.7, min_value=0, max_value=2)
    generator_price_in = forms.DecimalField(
        required=False, min_value=0, help_text="USD per million tokens in."
    )
    generator_price_out = forms.DecimalField(
        required=False, min_value=0, help_text="USD per million tokens out."
    )
    judge_model = forms.CharField(
        initial="gpt-4o", help_text="The model that judges quality and the intervention."
    )
    judge_temperature = forms.FloatField(initial=0.0, min_value=0, max_value=2)
    judge_price_in = forms.DecimalField(required=False, min_value=0)
    judge_price_out = forms.DecimalField(required=False, min_value=0)
    pass_mark = forms.IntegerField(
        initial=prompts.PASS_MARK, min_value=6, max_value=30, help_text="Of 30, for each side (Table 29: 27)."
    )
    check_manifestation = forms.BooleanField(
        initial=True,
        required=False,
        help_text="Also check that the intervention shows on the active side only.",
    )
    max_tokens = forms.IntegerField(initial=700, min_value=100, max_value=8000)
    seed = forms.IntegerField(
        initial=0, min_value=0, help_text="The same seed builds the same plan and draws."
    )


class GenerateForm(ModelFields):
    cases = forms.MultipleChoiceField(
        choices=_case_choices,
        required=False,
        help_text="The cases to build dialogues about (none chosen: all).",
    )
    conditions = forms.MultipleChoiceField(
        choices=_condition_choices,
        required=False,
        help_text="The conditions of Table 2 to build for each case (none chosen: all 17).",
    )
    side_a = forms.ChoiceField(
        choices=[
            ("balanced", "Balanced over cases (seeded)"),
            ("culprit", "The culprit"),
            ("rival", "The rival"),
        ],
        initial="balanced",
        help_text="Whom side A accuses in a case's dialogues.",
    )
    fallacies = forms.MultipleChoiceField(
        choices=[(k, s.label) for k, s in specs.FALLACY_SPECS.items()],
        required=False,
        help_text="Fallacy oversight's sub-types to draw V1 and V2 from (none chosen: all five).",
    )
    words_per_turn = forms.IntegerField(initial=170, min_value=40, max_value=1000)
    turns = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in (4, 6, 8, 10, 12)],
        coerce=int,
        initial=specs.TURNS,
        required=False,
        empty_value=specs.TURNS,
        help_text="Turns in each dialogue: openings, rebuttals, summaries (the paper's protocol: 6).",
    )
    attempts = forms.IntegerField(
        initial=3,
        min_value=1,
        max_value=10,
        help_text="Builds per dialogue before one that fails is kept anyway.",
    )

    def clean(self):
        data = super().clean()
        for slug in data.get("cases") or []:
            case = Case.objects.filter(slug=slug).first()
            problems = services.case_problems(case) if case else [f"{slug}: no such case"]
            if problems:
                raise forms.ValidationError("; ".join(problems))
        return data


class QualityForm(ModelFields):
    cases = forms.MultipleChoiceField(
        choices=_case_choices,
        required=False,
        help_text="Judge the dialogues of these cases (none chosen: all).",
    )
    only_unchecked = forms.BooleanField(
        initial=True, required=False, help_text="Skip dialogues already checked."
    )


def settings_of(config: dict) -> pipeline.Settings:
    return pipeline.Settings(
        generator=pipeline.ModelSpec.from_config(config, "generator"),
        judge=pipeline.ModelSpec.from_config(config, "judge"),
        max_tokens=int(config.get("max_tokens") or 700),
        attempts=int(config.get("attempts") or 1),
        pass_mark=int(config.get("pass_mark") or prompts.PASS_MARK),
        check_manifestation=bool(config.get("check_manifestation", True)),
        seed=int(config.get("seed") or 0),
    )


def _templates() -> pipeline.Templates:
    return pipeline.Templates(
        {name: template_store.latest(name, text) for name, text in prompts.DEFAULTS.items()}
    )


class GenerateDialoguesKind(JobKind):
    key = GENERATE
    label = "Build design-A dialogues"
    description = (
        "Paper 000's pipeline: reasons per suspect, content plans, six-turn rollout with the bias "
        "interventions, the debate-quality judge and the manifestation check, regenerating failures."
    )
    config_form = GenerateForm

    def plan(self, job) -> list[ItemSpec]:
        config = job.config
        numbers = [int(n) for n in config.get("conditions") or []] or [c.number for c in specs.inventory()]
        seed = int(config.get("seed") or 0)
        items = []
        for case in services.cases_for(config.get("cases") or []):
            if services.case_problems(case):
                continue
            items += [
                ItemSpec(f"reasons:{case.slug}:{role}", {"case": case.slug, "role": role}) for role in ROLES
            ]
            side_a = specs.side_a_role(case.slug, config.get("side_a") or "balanced", seed)
            fallacies = specs.fallacies_for(case.slug, config.get("fallacies") or [], seed)
            for number in numbers:
                condition = specs.condition_numbered(number)
                payload = {
                    "case": case.slug,
                    "condition": number,
                    "side_a": side_a,
                    "fallacy": fallacies[condition.variant] if condition.bias == "fallacy_oversight" else "",
                }
                items.append(ItemSpec(f"dialogue:{case.slug}:{condition.key}", payload, stage=1))
        return items

    async def run(self, item, calls) -> dict:
        config = item.job.config
        settings = settings_of(config)
        found = await db(_templates)()
        try:
            case = await db(services.case_view)(item.payload["case"])
        except Case.DoesNotExist:
            raise ItemFailed(f"the case {item.payload['case']!r} no longer exists") from None
        if item.key.startswith("reasons:"):
            return await pipeline.select_reasons(calls, found, settings, case, item.payload["role"])
        keys = [f"reasons:{case.slug}:{role}" for role in ROLES]
        records = await db(item_results)(job_id=item.job_id, keys=keys)
        missing = [key for key, record in records.items() if record is None]
        if missing:
            raise ItemFailed(f"no reasons to build on: {', '.join(missing)} did not finish")
        reasons = {role: records[f"reasons:{case.slug}:{role}"] for role in ROLES}
        condition = specs.condition_numbered(int(item.payload["condition"]))
        setup = Setup(
            case=case,
            side_a_role=item.payload["side_a"],
            condition=condition,
            fallacy=item.payload.get("fallacy", ""),
            words_per_turn=int(config.get("words_per_turn") or 170),
            turns=int(config.get("turns") or specs.TURNS),
        )
        attempts = await pipeline.build(calls, found, settings, setup, reasons, item.key)
        kept = pipeline.best(attempts)
        slug = services.dialogue_slug(case.slug, condition, item.job_id)
        provenance = {
            "job": item.job.name,
            "item": item.key,
            "item_id": item.pk,
            "inventory": condition.key,
            "label": condition.label,
            "fallacy": setup.fallacy,
            "generator": {"model": settings.generator.model, "temperature": settings.generator.temperature},
            "judge": {"model": settings.judge.model, "temperature": settings.judge.temperature},
            "max_tokens": settings.max_tokens,
            "words_per_turn": setup.words_per_turn,
            "turns": setup.turns,
            "seed": kept.seed,
            "attempt": kept.number,
            "pass_mark": settings.pass_mark,
            "templates": found.versions(),
            "reasons": reasons,
            "calls": await db(services.item_call_ids)(item.pk),
        }
        await db(services.dialogue_save)(
            slug=slug, setup=setup, kept=kept, attempts=attempts, provenance=provenance
        )
        return {
            "dialogue": slug,
            "case": case.slug,
            "inventory": condition.key,
            "label": condition.label,
            "passed": kept.passed,
            "score": kept.score,
            "attempts": len(attempts),
            "why": kept.why,
            "scores": {side: q["total"] for side, q in kept.quality.items()},
        }

    def summary(self, job) -> list[dict]:
        rows = []
        for item in job.items.filter(status="done", key__startswith="dialogue:").order_by("key"):
            result = item.result or {}
            rows.append(
                {
                    "Dialogue": result.get("dialogue", ""),
                    "No.": result.get("inventory", ""),
                    "Condition": result.get("label", ""),
                    "Side A": (result.get("scores") or {}).get("A", ""),
                    "Side B": (result.get("scores") or {}).get("B", ""),
                    "Attempts": result.get("attempts", ""),
                    "Passed": "yes" if result.get("passed") else "no — kept out of studies",
                    "Why": result.get("why", ""),
                }
            )
        return rows


class DialogueQualityKind(JobKind):
    key = QUALITY
    label = "Check design-A dialogue quality"
    description = (
        "The debate-quality judge (paper 000, Tables 27-29: six dimensions, 30 points, pass at 27) "
        "and the manifestation check on dialogues already in the library."
    )
    config_form = QualityForm

    def plan(self, job) -> list[ItemSpec]:
        dialogues = Dialogue.objects.all()
        if job.config.get("cases"):
            dialogues = dialogues.filter(case__slug__in=job.config["cases"])
        if job.config.get("only_unchecked", True):
            dialogues = dialogues.filter(quality_passed__isnull=True)
        return [
            ItemSpec(f"quality:{slug}", {"dialogue": slug})
            for slug in dialogues.order_by("slug").values_list("slug", flat=True)
        ]

    async def run(self, item, calls) -> dict:
        config = item.job.config
        settings = settings_of({**config, "attempts": 1})
        try:
            setup, turns = await db(services.dialogue_setup)(item.payload["dialogue"], 170)
        except Dialogue.DoesNotExist:
            raise ItemFailed(f"the dialogue {item.payload['dialogue']!r} no longer exists") from None
        attempt = pipeline.Attempt(number=1, seed=settings.seed, turns=turns)
        await pipeline.judge(calls, await db(_templates)(), settings, setup, attempt)
        await db(services.quality_record)(
            slug=item.payload["dialogue"], attempt=attempt, pass_mark=settings.pass_mark, job=item.job.name
        )
        return {
            "dialogue": item.payload["dialogue"],
            "passed": attempt.passed,
            "score": attempt.score,
            "scores": {side: q["total"] for side, q in attempt.quality.items()},
            "why": attempt.why,
        }

    def summary(self, job) -> list[dict]:
        return [
            {
                "Dialogue": (item.result or {}).get("dialogue", ""),
                "Side A": ((item.result or {}).get("scores") or {}).get("A", ""),
                "Side B": ((item.result or {}).get("scores") or {}).get("B", ""),
                "Passed": "yes" if (item.result or {}).get("passed") else "no",
                "Why": (item.result or {}).get("why", ""),
            }
            for item in job.items.filter(status="done").order_by("key")
        ]
