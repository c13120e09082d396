"""Step kinds of study design A: read the story and the dialogue, judge, say whether a side
was manipulated, and answer a recall question about the dialogue."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext, gettext_lazy

from debates.dialogues import services
from debates.draws import draw_record
from debates.models import Condition, ConditionTarget, Dialogue, StudyDialogue, condition_labels
from participants.forms import TEXT_MAX, SliderField
from participants.services import Answer, responses_record
from studies.randomness import study_rng
from studies.registry import StepContext, StepKind, StepOutcome

OTHER = ("other", gettext_lazy("Something else, or not sure"))  # stored as "other" in every language


def bias_choices(study) -> list[tuple[str, str]]:
    """The answers to "what kind of manipulation was it?": every intervention (non-baseline
    condition) among the study's active dialogues, in the conditions' order, then "other"."""
    used = StudyDialogue.objects.filter(study=study, active=True).values("dialogue__condition")
    conditions = Condition.objects.filter(slug__in=used, baseline=False)
    return [*((c.slug, c.description or c.label) for c in conditions), OTHER]


def with_total(turns: list) -> list:
    """The turns, each knowing how many there are (its phase depends on it), in one query."""
    for turn in turns:
        turn._total = len(turns)
    return turns


def stances(dialogue: Dialogue) -> list[dict]:
    return [{"side": side, "suspect": dialogue.suspect_for(side), "css": side.lower()} for side in ("A", "B")]


def quota_problems(study) -> list[str]:
    """Active dialogues kept out by the quality check, and condition targets the study's
    active dialogues cannot reach."""
    problems = []
    offered = list(StudyDialogue.objects.filter(study=study, active=True).select_related("dialogue"))
    slots = [s for s in offered if not s.dialogue.kept_out]
    kept_out = [s.dialogue.slug for s in offered if s.dialogue.kept_out]
    if kept_out:
        problems.append(
            f"{len(kept_out)} active dialogue(s) failed the quality check ({', '.join(kept_out[:5])}"
            f"{', …' if len(kept_out) > 5 else ''}) and get no participants: deactivate them, or tick "
            '"Offer despite the quality check" on the dialogue to use them anyway.'
        )
    labels = condition_labels()
    for row in ConditionTarget.objects.filter(study=study):
        mine = [s for s in slots if s.dialogue.condition == row.condition]
        label = labels.get(row.condition, row.condition)
        if row.target and not mine:
            problems.append(f'the condition "{label}" has a target of {row.target} but no active dialogue.')
        elif mine and all(s.target is not None for s in mine) and sum(s.target for s in mine) < row.target:
            problems.append(
                f'the condition "{label}" has a target of {row.target}, but its dialogues\' own targets '
                f"add up to {sum(s.target for s in mine)}, so it can never fill: raise them or clear one."
            )
    return problems


class DialogueBoundKind(StepKind):
    """A kind that works on the participant's assigned dialogue."""

    needs_dialogue_step_before = True

    def check_study(self, study, step, steps) -> list[str]:
        problems = []
        if not StudyDialogue.objects.filter(study=study, active=True).exists():
            problems.append("the study has no active dialogues (add them under Study dialogues).")
        if self.needs_dialogue_step_before and not any(
            s.kind == "dialogue" and s.position < step.position for s in steps
        ):
            problems.append("it needs a 'Read the dialogue' step before it.")
        return problems

    def assignment(self, ctx: StepContext):
        return services.dialogue_assignment_for(ctx)

    def context(self, ctx: StepContext) -> dict:
        assignment = self.assignment(ctx)
        dialogue = assignment.dialogue
        return {
            "case": dialogue.case,
            "dialogue": dialogue,
            "stances": stances(dialogue),
            "turns": with_total(list(dialogue.turns.all())),
        }


class StoryConfig(forms.Form):
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        initial="Read the mystery below carefully. You will then read a debate about who is responsible.",
    )
    show_suspects = forms.BooleanField(required=False, initial=True)
    show_evidence = forms.BooleanField(
        required=False, initial=True, help_text="List the numbered evidence units the debaters cite as [E1]."
    )
    button_label = forms.CharField(max_length=100, initial="I have read the story")


class StoryKind(DialogueBoundKind):
    key = "story"
    label = "Read the story"
    description = "The mystery of the participant's case. The dialogue is assigned here."
    template = "debates/steps/story.html"
    config_form = StoryConfig
    passive = True
    needs_dialogue_step_before = False


class DialogueConfig(forms.Form):
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        initial="Two sides debate who is responsible. Read the whole debate carefully.",
    )
    show_story = forms.BooleanField(
        required=False, initial=True, help_text="Offer the story again, folded, above the debate."
    )
    show_evidence = forms.BooleanField(
        required=False, initial=True, help_text="Offer the numbered evidence list, folded, above the debate."
    )
    button_label = forms.CharField(max_length=100, initial="I have read the debate")


class DialogueKind(DialogueBoundKind):
    key = "dialogue"
    label = "Read the dialogue"
    description = "The six turns of the assigned dialogue; reading time and words per minute are stored."
    template = "debates/steps/dialogue.html"
    config_form = DialogueConfig
    passive = True
    needs_dialogue_step_before = False

    def check_study(self, study, step, steps) -> list[str]:
        problems = super().check_study(study, step, steps)
        if step is next(s for s in steps if s.kind == self.key):
            problems += quota_problems(study)
        return problems

    def check_warnings(self, study, step, steps) -> list[str]:
        """No reading-speed cap: a judge who went through the debate at 7,400 words per minute
        was analysed, and nothing before going live said the cap was not set (the researcher
        walk). Paper 000 excluded judges above its cap; a study may choose not to."""
        if study.wpm_cap or step is not next(s for s in steps if s.kind == self.key):
            return []  # said once, at the first debate read
        return [
            "no reading-speed cap is set ('Wpm cap'), so judges who read the debate faster than anyone "
            "can (thousands of words per minute) are analysed: paper 000 excluded those above its cap."
        ]

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        services.reading_record(ctx=ctx, assignment=self.assignment(ctx))
        return None


class JudgementConfig(forms.Form):
    question = forms.CharField(
        max_length=300, initial="Which side argued for the person who is truly responsible?"
    )
    confidence_label = forms.CharField(max_length=300, initial="How confident are you in your choice?")
    confidence_low = forms.CharField(max_length=60, initial="Not at all confident")
    confidence_high = forms.CharField(max_length=60, initial="Completely confident")
    reasoning_label = forms.CharField(
        max_length=300, initial="In a few sentences, explain what led you to your choice."
    )
    reasoning_min_length = forms.IntegerField(min_value=0, max_value=2000, initial=30)
    show_recap = forms.BooleanField(
        required=False, initial=True, help_text="Offer the debate again, folded, above the question."
    )
    button_label = forms.CharField(max_length=100, initial="Submit my judgement")


class JudgementForm(forms.Form):
    def __init__(self, dialogue: Dialogue, config: dict, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices = [
            (
                s["side"],
                gettext("Side %(side)s — argued that %(suspect)s is responsible")
                % {"side": s["side"], "suspect": s["suspect"]},
            )
            for s in stances(dialogue)
        ]
        self.fields["side"] = forms.ChoiceField(
            label=config["question"], choices=choices, widget=forms.RadioSelect
        )
        confidence = SliderField(label=config["confidence_label"], min_value=0, max_value=100)
        confidence.end_labels = [config["confidence_low"], config["confidence_high"]]
        self.fields["confidence"] = confidence
        self.fields["reasoning"] = forms.CharField(
            label=config["reasoning_label"],
            min_length=config["reasoning_min_length"] or None,
            max_length=TEXT_MAX,
            widget=forms.Textarea(attrs={"rows": 5, "maxlength": TEXT_MAX}),
        )


def reread_ms(data) -> int | None:
    """The browser's figure for the time the debate was open again (static/js/reading.js)."""
    try:
        return min(max(int(data.get("_reread_ms", "")), 0), 86_400_000)
    except (TypeError, ValueError):
        return None


class JudgementKind(DialogueBoundKind):
    key = "judgement"
    label = "Judgement"
    description = "Side A or B, confidence 0–100 and free-text reasoning."
    template = "debates/steps/judgement.html"
    config_form = JudgementConfig

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        return JudgementForm(self.assignment(ctx).dialogue, self.config(ctx.step), data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        data = form.cleaned_data
        assignment = self.assignment(ctx)
        dialogue = assignment.dialogue
        if self.config(ctx.step)["show_recap"]:
            services.reread_record(ctx=ctx, assignment=assignment, client_ms=reread_ms(form.data))
        services.judgement_record(
            ctx=ctx,
            dialogue=dialogue,
            side=data["side"],
            confidence=data["confidence"],
            reasoning=data["reasoning"],
        )
        responses_record(
            ctx=ctx,
            answers=[
                Answer(key="judgement_side", value=data["side"]),
                Answer(
                    key="judgement_confidence", value=str(data["confidence"]), value_num=data["confidence"]
                ),
                Answer(key="judgement_reasoning", value=data["reasoning"]),
            ],
        )
        return None


class BiasDetectionConfig(forms.Form):
    present_question = forms.CharField(
        max_length=300,
        initial="Do you think one of the sides was deliberately argued in a manipulative way?",
    )
    side_question = forms.CharField(max_length=300, initial="If yes: which side?")
    type_question = forms.CharField(max_length=300, initial="If yes: what kind of manipulation was it?")
    button_label = forms.CharField(max_length=100, initial="Continue")


class BiasDetectionForm(forms.Form):
    def __init__(self, config: dict, *args, choices: list[tuple[str, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["present"] = forms.ChoiceField(
            label=config["present_question"],
            choices=[("yes", gettext("Yes")), ("no", gettext("No")), ("unsure", gettext("Not sure"))],
            widget=forms.RadioSelect,
        )
        self.fields["side"] = forms.ChoiceField(
            label=config["side_question"],
            choices=[("A", gettext("Side A")), ("B", gettext("Side B")), ("unsure", gettext("Not sure"))],
            widget=forms.RadioSelect,
            required=False,
        )
        self.fields["bias_type"] = forms.ChoiceField(
            label=config["type_question"], choices=choices, widget=forms.RadioSelect, required=False
        )
        self.fields["side"].show_if = self.fields["bias_type"].show_if = "present=yes"

    def clean(self):
        data = super().clean()
        if data.get("present") == "yes":
            for name in ("side", "bias_type"):
                if not data.get(name):
                    self.add_error(name, gettext("Please answer this, since you answered Yes above."))
        else:
            data["side"], data["bias_type"] = "", ""
        return data


class BiasDetectionKind(DialogueBoundKind):
    key = "bias_detection"
    label = "Bias detection"
    description = "Was a side manipulated? Which side? Which kind of bias?"
    template = "debates/steps/bias_detection.html"
    config_form = BiasDetectionConfig

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        return BiasDetectionForm(self.config(ctx.step), data=data, choices=bias_choices(ctx.study))

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        data = form.cleaned_data
        services.bias_report_record(
            ctx=ctx,
            dialogue=self.assignment(ctx).dialogue,
            present=data["present"],
            side=data["side"],
            bias_type=data["bias_type"],
        )
        responses_record(
            ctx=ctx,
            answers=[
                Answer(key="bias_present", value=data["present"]),
                Answer(key="bias_side", value=data["side"]),
                Answer(key="bias_type", value=data["bias_type"]),
            ],
        )
        return None


class RecallConfig(forms.Form):
    use_case_question = forms.BooleanField(
        required=False,
        initial=True,
        help_text="Ask the case's own recall question when it has one (see the import format).",
    )
    about_side = forms.ChoiceField(
        choices=[("A", "Side A"), ("B", "Side B")],
        initial="A",
        help_text="Otherwise the question asks whom this side argued was responsible.",
    )
    question = forms.CharField(
        max_length=300,
        initial="In the debate you read, whom did Side {side} argue was responsible?",
        help_text="{side} is replaced by A or B.",
    )
    button_label = forms.CharField(max_length=100, initial="Continue")


class RecallCheckKind(DialogueBoundKind):
    key = "recall_check"
    label = "Recall check"
    description = (
        "A question about the dialogue: the case's own recall question, or whom a side argued "
        "was responsible. A wrong answer excludes the participant from analysis (they continue)."
    )
    template = "participants/steps/questionnaire.html"
    config_form = RecallConfig

    def question(self, ctx: StepContext) -> tuple[str, list[str], str]:
        """(question, options in this participant's order, expected answer)."""
        config = self.config(ctx.step)
        assignment = self.assignment(ctx)
        dialogue = assignment.dialogue
        recall = dialogue.case.recall
        if config["use_case_question"] and recall:
            text, options, expected = recall["question"], list(recall["options"]), recall["answer"]
        else:
            side = config["about_side"]
            text = config["question"].replace("{side}", side)
            options, expected = list(dialogue.case.suspect_names), dialogue.suspect_for(side)
        study_rng(ctx.study, *services.recall_order_key(assignment)).shuffle(options)  # the same each time
        return text, options, expected

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        text, options, _ = self.question(ctx)
        form = forms.Form(data=data)
        form.fields["answer"] = forms.ChoiceField(
            label=text, choices=[(o, o) for o in options], widget=forms.RadioSelect
        )
        return form

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        _, options, expected = self.question(ctx)
        answer = form.cleaned_data["answer"]
        passed = answer == expected
        key = services.recall_order_key(self.assignment(ctx))
        draw_record(
            participant=ctx.participant, purpose="recall_order", key=key, outcome={"options": options}
        )
        responses_record(ctx=ctx, answers=[Answer(key="recall", value=answer, is_check=True, passed=passed)])
        if not passed:
            services.recall_failed(ctx=ctx, detail=f"answered {answer!r}, expected {expected!r}")
        return None
