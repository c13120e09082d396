"""Participant-facing forms built from questionnaire items."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext, gettext_lazy

from participants.services import Answer
from studies.models import Question
from studies.texts import question_texts

Kind = Question.Kind
TEXT_MAX = 5000
# A number item the experimenter left open takes a whole number of at most nine digits
# either way: any age, count or amount a questionnaire asks for, kept exactly by the
# responses' float column. A longer answer is refused before it is converted at all.
NUMBER_LIMIT = 999_999_999
NUMBER_MAX_CHARS = 20


class SliderInput(forms.NumberInput):
    """A range input that counts as answered only once the participant has moved it:
    an untouched slider would otherwise submit its starting point as an answer."""

    input_type = "range"
    template_name = "participants/widgets/slider.html"

    def value_from_datadict(self, data, files, name):
        if data.get(f"{name}__touched") != "1":
            return None
        return super().value_from_datadict(data, files, name)


class SliderField(forms.IntegerField):
    default_error_messages = {
        "required": gettext_lazy(
            "Please move the slider to give your answer (you may move it back to where it started)."
        )
    }

    def __init__(self, *, min_value: int = 0, max_value: int = 100, **kwargs) -> None:
        kwargs.setdefault("widget", SliderInput(attrs={"min": min_value, "max": max_value, "step": 1}))
        super().__init__(min_value=min_value, max_value=max_value, **kwargs)


class NumberField(forms.IntegerField):
    """A whole number between bounds that always exist, with one clear message for any
    answer outside them (a 400-digit value included)."""

    def __init__(self, *, min_value: int | None, max_value: int | None, **kwargs) -> None:
        low = -NUMBER_LIMIT if min_value is None else min_value
        high = NUMBER_LIMIT if max_value is None else max_value
        kwargs.setdefault("widget", forms.NumberInput(attrs={"inputmode": "numeric"}))
        super().__init__(min_value=low, max_value=high, **kwargs)
        out_of_range = gettext("Enter a whole number from %(low)s to %(high)s.") % {"low": low, "high": high}
        self.error_messages.update(invalid=out_of_range, min_value=out_of_range, max_value=out_of_range)

    def to_python(self, value):
        if isinstance(value, str) and len(value.strip()) > NUMBER_MAX_CHARS:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


SPECIFY_MAX = 200  # characters in an "other, please specify" box


def question_field(q: Question) -> forms.Field:
    """The item's field, in the participant's language (studies.texts): the labels are
    translated, the values stay the study's own options, so every language stores the same."""
    text, help_text, labels = question_texts(q)
    field = _base_field(q, text, help_text, labels)
    field.layout = "likert" if q.kind == Kind.LIKERT and len(q.option_list) <= 7 else ""
    field.end_labels = labels if q.kind == Kind.SLIDER and len(labels) == 2 else []
    return field


def _base_field(q: Question, text: str, help_text: str, labels: list[str]) -> forms.Field:
    common = {"label": text, "required": q.required, "help_text": help_text}
    if q.kind in (Kind.SINGLE_CHOICE, Kind.LIKERT):
        choices = list(zip(q.option_list, labels, strict=True))
        return forms.ChoiceField(choices=choices, widget=forms.RadioSelect, **common)
    if q.kind == Kind.SLIDER:
        low, high = q.answer_range
        return SliderField(min_value=low, max_value=high, **common)
    if q.kind == Kind.NUMBER:
        return NumberField(min_value=q.min_value, max_value=q.max_value, **common)
    return forms.CharField(
        min_length=q.min_length or None,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 4, "maxlength": TEXT_MAX}),
        strip=True,
        **common,
    )


class QuestionForm(forms.Form):
    """A form whose fields are a step's questionnaire items, keyed by item key."""

    def __init__(self, questions: list[Question], *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.questions = questions
        for q in questions:
            self.fields[q.key] = question_field(q)
            if q.specify_option:  # "Prefer to self-describe" opens a text box
                box = forms.CharField(
                    label=gettext("Please describe"),
                    required=False,
                    max_length=SPECIFY_MAX,
                    strip=True,
                    widget=forms.TextInput(attrs={"maxlength": SPECIFY_MAX}),
                )
                box.show_if = f"{q.key}={q.specify_option}"
                self.fields[q.specify_key] = box

    def clean(self):
        data = super().clean()
        for q in self.questions:
            if not q.specify_option:
                continue
            if data.get(q.key) == q.specify_option:
                if not data.get(q.specify_key):
                    self.add_error(
                        q.specify_key, gettext("Please describe it in a few words, since you chose this.")
                    )
            else:
                data[q.specify_key] = ""  # a box filled, then another option chosen: not kept
        return data

    def answers(self) -> list[Answer]:
        answers = []
        for q in self.questions:
            answers.append(answer_for(q, self.cleaned_data.get(q.key)))
            if q.specify_option and self.cleaned_data.get(q.key) == q.specify_option:
                answers.append(Answer(key=q.specify_key, value=self.cleaned_data.get(q.specify_key) or ""))
        return answers


def answer_for(q: Question, value) -> Answer:
    if value is None or value == "":
        return Answer(key=q.key, value="", is_check=q.is_check, passed=False if q.is_check else None)
    number = None
    if q.kind == Kind.LIKERT:
        number = float(q.option_list.index(value) + 1)
    elif q.kind in (Kind.SLIDER, Kind.NUMBER):
        number = float(value)
    passed = None
    if q.is_check:
        passed = str(value) in q.expected_list
    return Answer(key=q.key, value=str(value), value_num=number, is_check=q.is_check, passed=passed)
