"""Step kinds owned by `participants`: consent, instructions, questionnaires, attention
checks and the debrief."""

from __future__ import annotations

from django import forms

from participants.forms import QuestionForm
from participants.models import Participant
from participants.services import Answer, attention_failures_add, responses_record
from studies.registry import StepContext, StepKind, StepOutcome, register


class ConsentConfig(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12}),
        help_text="The consent information. Blank lines separate paragraphs.",
    )
    agree_label = forms.CharField(max_length=100, initial="I agree to take part")
    decline_label = forms.CharField(max_length=100, initial="I do not agree (return to Prolific)")


class ConsentForm(forms.Form):
    consent = forms.ChoiceField(choices=[("yes", "yes"), ("no", "no")])


@register
class ConsentKind(StepKind):
    key = "consent"
    label = "Consent"
    description = "Consent information; declining ends the study with the NO_CONSENT code."
    template = "participants/steps/consent.html"
    config_form = ConsentConfig

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        return ConsentForm(data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        agreed = form.cleaned_data["consent"] == "yes"
        responses_record(ctx=ctx, answers=[Answer(key="consent", value="yes" if agreed else "no")])
        return None if agreed else StepOutcome(end_status=Participant.Status.NO_CONSENT)


class TextPageConfig(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12}), help_text="Blank lines separate paragraphs."
    )
    button_label = forms.CharField(max_length=100, initial="Continue")


@register
class InstructionsKind(StepKind):
    key = "instructions"
    label = "Instructions"
    description = "A page of text with a Continue button."
    template = "participants/steps/text_page.html"
    config_form = TextPageConfig
    passive = True


class DebriefConfig(TextPageConfig):
    button_label = forms.CharField(max_length=100, initial="Finish and return to Prolific")


@register
class DebriefKind(StepKind):
    key = "debrief"
    label = "Debrief"
    description = "The closing text; its button completes the study (put it last)."
    template = "participants/steps/text_page.html"
    config_form = DebriefConfig
    passive = True

    def check_study(self, study, step, steps) -> list[str]:
        return [] if step is steps[-1] else ["the debrief should be the last step."]


class QuestionnaireConfig(forms.Form):
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Optional text above the questions.",
    )
    button_label = forms.CharField(max_length=100, initial="Continue")


@register
class QuestionnaireKind(StepKind):
    key = "questionnaire"
    label = "Questionnaire"
    description = (
        "Single choice, Likert, slider, number and free-text items. An item with an "
        "expected answer is an instructed-response attention check."
    )
    template = "participants/steps/questionnaire.html"
    config_form = QuestionnaireConfig
    uses_questions = True

    def check_study(self, study, step, steps) -> list[str]:
        return [] if step.questions.all() else ["the questionnaire has no questions."]

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        return QuestionForm(list(ctx.step.questions.all()), data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        answers = form.answers()
        responses_record(ctx=ctx, answers=answers)
        failed = [a.key for a in answers if a.is_check and not a.passed]
        return attention_failures_add(
            ctx=ctx, failures=len(failed), detail=f"step {ctx.position}: {', '.join(failed)}"
        )


@register
class AttentionCheckKind(QuestionnaireKind):
    key = "attention_check"
    label = "Attention check"
    description = (
        "Instructed-response items (\"select 'Strongly disagree' for this question\"), "
        "the kind Prolific allows. Every item needs an expected answer."
    )

    def check_study(self, study, step, steps) -> list[str]:
        questions = list(step.questions.all())
        if not questions:
            return ["the attention check has no items."]
        missing = [q.key for q in questions if not q.is_check]
        return [f"items without an expected answer: {', '.join(missing)}."] if missing else []
