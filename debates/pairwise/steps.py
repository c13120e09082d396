"""The pairwise-comparison step kind (study design D): n instances and j attention checks,
one page each, in the order assigned."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext, gettext_lazy

from debates.models import Comparison, InstanceSet
from debates.pairwise import services as pairwise
from participants.services import StaleSubmission
from studies.registry import StepContext, StepKind, StepOutcome

# Shown in the participant's language; the answers stored are the choices' values and the
# confidence's number 1..5, the same in every language.
Q1 = gettext_lazy(
    "Based only on the debate transcripts, which Speaker A presented the more persuasive arguments?"
)
Q2 = gettext_lazy("How confident are you in your choice?")
CONFIDENCE = [
    gettext_lazy("Very unsure"),
    gettext_lazy("Somewhat unsure"),
    gettext_lazy("Neutral"),
    gettext_lazy("Somewhat confident"),
    gettext_lazy("Very confident"),
]
CHOICE_LABELS = {
    Comparison.Choice.DEBATE_1.value: gettext_lazy("Speaker A from Debate 1"),
    Comparison.Choice.DEBATE_2.value: gettext_lazy("Speaker A from Debate 2"),
    Comparison.Choice.EQUAL.value: gettext_lazy("Both were equally persuasive"),
}


def set_choices() -> list[tuple[str, str]]:
    """The instance sets, after an empty choice: a step not configured yet showed the first set
    as chosen while none was saved (the researcher walk)."""
    sets = [
        (s.slug, f"{s.title} ({s.slug}, {s.instances.count()} instances)") for s in InstanceSet.objects.all()
    ]
    return [("", "— choose an instance set —"), *sets]


class PairwiseConfig(forms.Form):
    instance_set = forms.ChoiceField(choices=set_choices, help_text="The pool of instances.")
    per_annotator = forms.IntegerField(min_value=1, max_value=50, initial=3, help_text="Instances (n).")
    checks = forms.IntegerField(min_value=0, max_value=10, initial=2, help_text="Attention checks (j).")
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        initial="Read both debate excerpts, then compare only the two Speaker A participants. Base your "
        "answer solely on what they wrote. Some questions contain an instruction in brackets: follow it "
        "exactly.",
    )


def check_instruction(comparison: Comparison) -> str:
    """The attention check's instruction in the participant's language, naming the option to
    select as the form labels it. The stored instruction (English, "select '<option>'", as
    drawn) and the stored expected answer are unchanged; an instruction of another wording is
    shown as stored."""
    answer = comparison.check_answer
    if (
        answer not in CHOICE_LABELS
        or comparison.check_instruction != f"select '{Comparison.Choice(answer).label}'"
    ):
        return comparison.check_instruction
    return gettext("select '%(option)s'") % {"option": CHOICE_LABELS[answer]}


class ComparisonForm(forms.Form):
    def __init__(self, comparison: Comparison, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        question = str(Q1)
        if comparison.is_check:
            question += " " + gettext("(ATTENTION CHECK: %(instruction)s)") % {
                "instruction": check_instruction(comparison)
            }
        self.fields["choice"] = forms.ChoiceField(
            label=question,
            choices=[(value, CHOICE_LABELS.get(value, label)) for value, label in Comparison.Choice.choices],
            widget=forms.RadioSelect,
        )
        self.fields["confidence"] = forms.ChoiceField(
            label=Q2,
            choices=[(str(n), label) for n, label in enumerate(CONFIDENCE, start=1)],
            widget=forms.RadioSelect,
        )
        self.fields["confidence"].layout = "likert"


class PairwiseKind(StepKind):
    key = "pairwise"
    label = "Pairwise comparisons"
    description = (
        "Which Speaker A of two debate excerpts was more persuasive, and how confident: n instances "
        "and j attention checks at random positions, from an instance set shared by studies."
    )
    template = "debates/steps/pairwise.html"
    config_form = PairwiseConfig
    multi_page = True

    def check_study(self, study, step, steps) -> list[str]:
        config = self.config(step)
        pool = InstanceSet.objects.filter(slug=config.get("instance_set")).first()
        if pool is None:
            return [f'there is no instance set called "{config.get("instance_set")}".']
        count, wanted = pool.instances.count(), int(config.get("per_annotator") or 0)
        if count == 0:
            return [f'the instance set "{pool.slug}" has no instances.']
        if wanted > count:
            return [
                f"each annotator is to compare {wanted} instances, but the instance set "
                f'"{pool.slug}" has only {count}.'
            ]
        return []

    def attention_items(self, step) -> int:
        return int(self.config(step).get("checks") or 0)

    def places_needed(self, step) -> tuple[int, str] | None:
        """Every instance's annotations, n per annotator: past that a participant who has
        done the first pages is told the study is full (the researcher walk)."""
        config = self.config(step)
        pool = InstanceSet.objects.filter(slug=config.get("instance_set")).first()
        per_annotator = int(config.get("per_annotator") or 0)
        if pool is None or per_annotator <= 0:
            return None
        count = pool.instances.count()
        annotations = count * pool.annotations_per_instance
        needed = -(-annotations // per_annotator)
        why = (
            f'the instance set "{pool.slug}" has {count} instances x {pool.annotations_per_instance} '
            f"annotations = {annotations}, {per_annotator} per participant"
        )
        return needed, why

    def comparisons(self, ctx: StepContext) -> list[Comparison]:
        config = self.config(ctx.step)
        pool = InstanceSet.objects.get(slug=config["instance_set"])
        return pairwise.comparisons_for(ctx, pool, int(config["per_annotator"]), int(config["checks"]))

    def current(self, ctx: StepContext) -> Comparison:
        return next(c for c in self.comparisons(ctx) if c.answered_at is None)

    def context(self, ctx: StepContext) -> dict:
        items = self.comparisons(ctx)
        current = self.current(ctx)
        first, second = current.instance.excerpt_1, current.instance.excerpt_2
        if current.swapped:
            first, second = second, first
        return {
            "comparison": current,
            "debates": [first, second],
            "number": current.order,
            "count": len(items),
        }

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        current = self.current(ctx)
        if data is not None and data.get("_item") != str(current.order):
            raise StaleSubmission()  # an earlier comparison's page
        return ComparisonForm(current, data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        current = self.current(ctx)
        outcome = pairwise.comparison_answer(
            ctx=ctx,
            comparison=current,
            choice=form.cleaned_data["choice"],
            confidence=int(form.cleaned_data["confidence"]),
        )
        current.answered_at = ctx.now
        ctx.stay = any(c.answered_at is None for c in self.comparisons(ctx))
        return outcome
