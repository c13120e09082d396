"""Step kinds owned by `participants`: consent, instructions, questionnaires, attention
checks and the debrief."""

from __future__ import annotations

import re

from django import forms

from participants.forms import QuestionForm
from participants.models import Participant
from participants.services import Answer, attention_failures_add, responses_record
from studies.registry import StepContext, StepKind, StepOutcome
from studies.rows import RowsField


class ConsentConfig(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12}),
        help_text="The consent information. Blank lines separate paragraphs.",
    )
    agree_label = forms.CharField(max_length=100, initial="I agree to take part")
    decline_label = forms.CharField(max_length=100, initial="I do not agree (return to Prolific)")


class ConsentForm(forms.Form):
    consent = forms.ChoiceField(choices=[("yes", "yes"), ("no", "no")])


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


class InstructionsKind(StepKind):
    key = "instructions"
    label = "Instructions"
    description = "A page of text with a Continue button."
    template = "participants/steps/text_page.html"
    config_form = TextPageConfig
    passive = True


class DebriefConfig(TextPageConfig):
    button_label = forms.CharField(max_length=100, initial="Finish and return to Prolific")


class DebriefKind(StepKind):
    key = "debrief"
    label = "Debrief"
    description = "The closing text; its button completes the study (put it last)."
    template = "participants/steps/debrief.html"
    config_form = DebriefConfig
    passive = True

    def context(self, ctx: StepContext) -> dict:
        # Shown with the button that completes the study, in case the return to Prolific fails.
        return {"completion_code": ctx.study.completion_code}

    def check_study(self, study, step, steps) -> list[str]:
        return [] if step is steps[-1] else ["the debrief should be the last step."]


class QuestionnaireConfig(forms.Form):
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Optional text above the questions.",
    )
    button_label = forms.CharField(max_length=100, initial="Continue")


def checks_that_cannot_fail(step) -> list[str]:
    """Attention-check items no one can fail (every option is accepted) or no one can pass
    (every accepted number is outside the item's range: an item saved before that was
    refused, or changed through the database)."""
    problems = []
    for q in step.questions.all():
        choice = q.kind in ("single_choice", "likert")
        if q.is_check and choice and set(q.option_list) <= set(q.expected_list):
            problems.append(
                f'the attention check "{q.key}" accepts every option as correct, so no one can fail it.'
            )
        if q.is_check and q.expected_list and len(q.unreachable_answers()) == len(q.expected_list):
            problems.append(
                f'the attention check "{q.key}" expects {", ".join(q.expected_list)}, outside the numbers '
                "the item accepts, so everyone fails it."
            )
    return problems


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
        if not step.questions.all():
            return ["the questionnaire has no questions."]
        return checks_that_cannot_fail(step)

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        return QuestionForm(list(ctx.step.questions.all()), data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        answers = form.answers()
        responses_record(ctx=ctx, answers=answers)
        failed = [a.key for a in answers if a.is_check and not a.passed]
        return attention_failures_add(
            ctx=ctx, failures=len(failed), detail=f"step {ctx.position}: {', '.join(failed)}"
        )


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
        problems = [f"items without an expected answer: {', '.join(missing)}."] if missing else []
        return problems + checks_that_cannot_fail(step)


NUMBER = r"(-?\d+(?:\.\d+)?)"
GROUP_LINE = re.compile(rf"^\s*([a-z][a-z0-9_-]{{0,39}})\s*:\s*{NUMBER}\s*(?:-|–|to)\s*{NUMBER}\s*$")


def parse_groups(text: str) -> list[tuple[str, float, float]]:
    """'mainstream: 1 - 2.5' per line → [(label, low, high)], inclusive bounds."""
    groups = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = GROUP_LINE.match(line)
        if not match:
            raise forms.ValidationError(
                f"line {number}: write 'label: low - high', e.g. 'skeptical: 3.5 - 5'"
            )
        label, low, high = match.group(1), float(match.group(2)), float(match.group(3))
        if low > high:
            raise forms.ValidationError(f"line {number}: the low end is above the high end")
        groups.append((label, low, high))
    if not groups:
        raise forms.ValidationError("give at least one group")
    return groups


def key_list(text: str) -> list[str]:
    return [k.strip() for k in text.replace("\n", ",").split(",") if k.strip()]


class GroupRow(forms.Form):
    """A screening group as a row of the step's form: its label and the range of mean scores."""

    label = forms.RegexField(
        r"^[a-z][a-z0-9_-]{0,39}$",
        error_messages={"invalid": "Use a lowercase letter, then letters, digits, '-' or '_' (max 40)."},
    )
    low = forms.DecimalField(max_digits=9, decimal_places=4, label="From (mean score)")
    high = forms.DecimalField(max_digits=9, decimal_places=4, label="To (inclusive)")

    def clean(self):
        data = super().clean()
        if data.get("low") is not None and data.get("high") is not None and data["low"] > data["high"]:
            self.add_error("high", "The low end is above the high end.")
        return data


def groups_rows(text: str) -> list[dict]:
    """The stored lines as rows; a line that does not parse is kept as a label, to correct."""
    rows = []
    for line in (text or "").splitlines():
        match = GROUP_LINE.match(line)
        if match:
            rows.append({"label": match.group(1), "low": match.group(2), "high": match.group(3)})
        elif line.strip():
            rows.append({"label": line.strip(), "low": "", "high": ""})
    return rows


def groups_text(rows: list[dict]) -> str:
    """Rows back to the stored lines, 'label: low - high' (the step's configuration format)."""
    return "\n".join(f"{r['label']}: {r['low'].normalize():f} - {r['high'].normalize():f}" for r in rows)


def groups_check(rows: list[dict]) -> list[str]:
    labels = [r["label"] for r in rows]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    return [f"The group {label!r} appears twice." for label in twice]


class ScreeningConfig(forms.Form):
    intro = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    score_items = forms.CharField(
        help_text="Keys of the Likert/slider/number items averaged into the belief score, comma-separated."
    )
    reverse_items = forms.CharField(
        required=False, help_text="Keys among those whose Likert scale is reversed before averaging."
    )
    groups = RowsField(
        GroupRow,
        to_rows=groups_rows,
        from_rows=groups_text,
        check=groups_check,
        item="group",
        add_label="Add a group",
        help_text="The groups on the mean score, bounds inclusive (e.g. mainstream from 1 to 2.5, "
        "skeptical from 3.5 to 5). A score in no group is ineligible: the participant leaves with the "
        "screened-out code.",
    )
    button_label = forms.CharField(max_length=100, initial="Continue")

    def clean_groups(self) -> str:
        parse_groups(self.cleaned_data["groups"])
        return self.cleaned_data["groups"]


class ScreeningKind(QuestionnaireKind):
    key = "screening"
    label = "Screening survey"
    description = (
        "Belief items whose mean places the participant in a group (used to stratify assignment), "
        "plus any other items (demographics, AI literacy). Ineligible participants leave with the "
        "screened-out code. Put it at the start of the study, as Prolific requires."
    )
    config_form = ScreeningConfig

    def check_study(self, study, step, steps) -> list[str]:
        problems = super().check_study(study, step, steps)
        config = self.config(step)
        keys = {q.key: q for q in step.questions.all()}
        for key in key_list(config.get("score_items", "")) + key_list(config.get("reverse_items", "")):
            q = keys.get(key)
            if q is None:
                problems.append(f'the score item "{key}" is not an item of this step.')
            elif q.kind not in ("likert", "slider", "number"):
                problems.append(f'the score item "{key}" must be a Likert, slider or number item.')
        problems += unreachable_groups(config, keys)
        if not study.screened_out_code:
            problems.append("screening needs the study's screened-out code (FIXED_SCREENOUT).")
        if any(s.kind not in ("consent", "instructions") for s in steps if s.position < step.position):
            problems.append("screening must come first (only consent and instructions before it).")
        return problems

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        outcome = super().submit(ctx, form)
        if outcome is not None:
            return outcome
        config = self.config(ctx.step)
        score = screening_score(form, config)
        groups = parse_groups(config["groups"])
        group = next((label for label, low, high in groups if low <= score <= high), "")
        responses_record(
            ctx=ctx,
            answers=[
                Answer(key="screening_score", value=f"{score:g}", value_num=score),
                Answer(key="screening_group", value=group or "ineligible"),
            ],
        )
        if not group:
            return StepOutcome(end_status=Participant.Status.SCREENED_OUT, detail=f"score {score:g}")
        Participant.objects.filter(pk=ctx.participant.pk).update(group=group)
        ctx.participant.group = group
        return None


def score_range(config: dict, questions: dict) -> tuple[float, float] | None:
    """The mean scores participants can have: from the items' lowest answers to their
    highest (Likert items are coded 1 to the number of options, reversed or not); None when an
    item is unbounded or not a score item. With an optional item the mean is over the items
    answered, so it can reach any one item's bounds."""
    lows, highs, all_required = [], [], True
    for key in key_list(config.get("score_items", "")):
        q = questions.get(key)
        if q is None or q.kind not in ("likert", "slider", "number"):
            return None
        low, high = (1, len(q.option_list)) if q.kind == "likert" else q.answer_range
        if low is None or high is None:
            return None
        lows.append(low)
        highs.append(high)
        all_required = all_required and q.required
    if not lows:
        return None
    if all_required:
        return sum(lows) / len(lows), sum(highs) / len(highs)
    return min(lows), max(highs)


def unreachable_groups(config: dict, questions: dict) -> list[str]:
    """Screening groups no mean score can fall in (a typo in a bound, a scale of 1-5 given
    groups of 6-9): no one is placed there, and when none can be reached everyone is
    screened out, paid the screen-out payment, and the study never fills."""
    reach = score_range(config, questions)
    try:
        groups = parse_groups(config.get("groups", ""))
    except forms.ValidationError:
        return []  # the step's settings are refused on their own
    if reach is None:
        return []
    low, high = reach
    shown = f"{low:g} to {high:g}"
    out = [
        f'the screening group "{label}" ({g_low:g} to {g_high:g}) is outside the scores participants '
        f"can have ({shown}), so no one is placed in it."
        for label, g_low, g_high in groups
        if g_high < low or g_low > high
    ]
    if out and len(out) == len(groups):
        out.append("no screening group can be reached, so every participant would be screened out.")
    return out


def screening_score(form, config: dict) -> float:
    """Mean of the score items' numeric codes, Likert items in reverse_items flipped."""
    answers = {a.key: a for a in form.answers()}
    reverse = set(key_list(config.get("reverse_items", "")))
    questions = {q.key: q for q in form.questions}
    values = []
    for key in key_list(config["score_items"]):
        value = answers[key].value_num
        if value is None:
            continue
        if key in reverse:
            value = len(questions[key].option_list) + 1 - value
        values.append(value)
    return round(sum(values) / len(values), 4) if values else float("nan")
