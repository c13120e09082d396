"""The study's own texts in a participant's language.

A study is written in its `language`. A `StudyTranslation` row adds another language the
study may be taken in, with the study's title and exit messages in it; a `StepTranslation`
row holds one step's title, the texts of its configuration and the texts of its items in
that language. Whatever a translation leaves empty falls back to the study's own text, so a
half-translated study still shows every page. Answers are stored as the study's own option
texts whatever language they were given in, so one analysis reads every language.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from django import forms
from django.utils.translation import gettext, gettext_noop

from studies.models import (
    FAILED_CHECK_MESSAGE,
    SCREENED_OUT_MESSAGE,
    Question,
    Step,
    StepTranslation,
    Study,
    StudyTranslation,
)
from studies.registry import StepKind

# On a participant page (set by participants.i18n): the participant's language and the
# study's, with the step translations read so far in this request.
_page: ContextVar[tuple[str, str] | None] = ContextVar("rostrum_texts_page", default=None)
_read: ContextVar[dict | None] = ContextVar("rostrum_texts_read", default=None)


def texts_language() -> str | None:
    """The language the study's own texts are shown in now, when it is not the study's."""
    page = _page.get()
    return page[0] if page and page[0] != page[1] else None


@contextmanager
def texts_in(language: str, study_language: str) -> Iterator[None]:
    """A participant page in `language` for a study written in `study_language`."""
    tokens = (_page.set((language, study_language)), _read.set({}))
    try:
        yield
    finally:
        _read.reset(tokens[1])
        _page.reset(tokens[0])


STUDY_TEXT_FIELDS = ("title", "screened_out_message", "failed_check_message")
QUESTION_TEXT_FIELDS = ("text", "help_text", "options")
# The built-in exit messages: a study that keeps one shows the catalog's translation of it.
BUILT_IN = {"screened_out_message": SCREENED_OUT_MESSAGE, "failed_check_message": FAILED_CHECK_MESSAGE}
# Configuration fields participants read: a text field with one of these names (button and
# scale labels, questions, introductions). Ids, codes, model names and item lists are not.
_TEXT_NAMES = {"text", "intro", "question"}
_TEXT_SUFFIXES = ("_label", "_question", "_low", "_high")


def text_config_names(kind: StepKind) -> list[str]:
    """The configuration fields of a step kind that participants read as text."""
    return [
        name
        for name, f in kind.config_form.base_fields.items()
        if type(f) is forms.CharField and (name in _TEXT_NAMES or name.endswith(_TEXT_SUFFIXES))
    ]


def study_languages(study: Study) -> list[str]:
    """The languages the study may be taken in: its own first, then its translations'."""
    others = study.translations.exclude(language=study.language).values_list("language", flat=True)
    return [study.language, *others]


def study_text(study: Study, name: str, language: str | None) -> str:
    """The study's title or an exit message (`name`) in `language`, else the study's own. A
    built-in exit message (or an empty one) is the catalog's text in the active language."""
    own = getattr(study, name).strip()
    if language and language != study.language:
        row = _study_translation(study, language)
        translated = getattr(row, name, "").strip() if row else ""
        if translated:
            return translated
    if name in BUILT_IN and own in ("", BUILT_IN[name]):
        return gettext(BUILT_IN[name])
    return own


def _study_translation(study: Study, language: str) -> StudyTranslation | None:
    """Read once per request (every page shows the study's title)."""
    read = _read.get()
    key = ("study", study.pk, language)
    if read is not None and key in read:
        return read[key]
    row = StudyTranslation.objects.filter(study=study, language=language).first()
    if read is not None:
        read[key] = row
    return row


@dataclass
class StepTexts:
    """A step's texts in one language; empty where the step's own text applies."""

    title: str = ""
    config: dict = field(default_factory=dict)
    questions: dict = field(default_factory=dict)

    def localized_config(self, config: dict) -> dict:
        extra = {k: v for k, v in self.config.items() if k in config and isinstance(v, str) and v.strip()}
        return {**config, **extra}

    def question(self, q: Question) -> tuple[str, str, list[str]]:
        """The item's text, help and option labels (the options only when there are as many
        as the item's own, so each label names the same answer)."""
        mine = self.questions.get(q.key) or {}
        options = [o.strip() for o in mine.get("options") or [] if o.strip()]
        own_options = q.option_list
        return (
            (mine.get("text") or "").strip() or q.text,
            (mine.get("help_text") or "").strip() or q.help_text,
            options if len(options) == len(own_options) else own_options,
        )


def step_texts(step: Step, language: str | None) -> StepTexts:
    """The step's translation into `language` (an empty one when there is none)."""
    return _step_texts(step.pk, language)


def _step_texts(step_id: int | None, language: str | None) -> StepTexts:
    """Read once per request."""
    if not language or step_id is None:
        return StepTexts()
    read = _read.get()
    if read is not None and (step_id, language) in read:
        return read[step_id, language]
    row = StepTranslation.objects.filter(step_id=step_id, language=language).first()
    texts = (row.texts or {}) if row else {}
    found = StepTexts(
        title=row.title.strip() if row else "",
        config=texts.get("config") or {},
        questions=texts.get("questions") or {},
    )
    if read is not None:
        read[step_id, language] = found
    return found


def question_texts(q: Question) -> tuple[str, str, list[str]]:
    """The item's text, help and option labels in the current participant's language."""
    return _step_texts(q.step_id, texts_language()).question(q)


def localized_config(kind: StepKind, step: Step, config: dict) -> dict:
    """`config` with its texts in the current participant's language: the step's translation
    where it has one, else the catalog's translation of a kind's built-in default text (a
    button left at "Continue" reads "Weiter"), else the study's own text."""
    if _page.get() is None:  # the admin, commands: the study's own texts
        return config
    translated = step_texts(step, texts_language()).localized_config(config)
    for name in text_config_names(kind):
        initial = kind.config_form.base_fields[name].initial
        if initial and translated.get(name) == initial:
            translated[name] = gettext(initial)
    return translated


def step_title(step: Step) -> str:
    """The step's title in the current participant's language (else the step's own)."""
    return step_texts(step, texts_language()).title or step.title


# The step kinds' built-in texts (their configuration forms' initial values), for the
# catalog: `localized_config` shows their translation when a step keeps one. A test checks
# that every registered kind's built-in text is here and translated.
BUILT_IN_STEP_TEXTS = (
    gettext_noop("I agree to take part"),
    gettext_noop("I do not agree (return to Prolific)"),
    gettext_noop("Continue"),
    gettext_noop("Finish and return to Prolific"),
    gettext_noop("Read the mystery below carefully. You will then read a debate about who is responsible."),
    gettext_noop("I have read the story"),
    gettext_noop("Two sides debate who is responsible. Read the whole debate carefully."),
    gettext_noop("I have read the debate"),
    gettext_noop("Which side argued for the person who is truly responsible?"),
    gettext_noop("How confident are you in your choice?"),
    gettext_noop("Not at all confident"),
    gettext_noop("Completely confident"),
    gettext_noop("In a few sentences, explain what led you to your choice."),
    gettext_noop("Submit my judgement"),
    gettext_noop("Do you think one of the sides was deliberately argued in a manipulative way?"),
    gettext_noop("If yes: which side?"),
    gettext_noop("If yes: what kind of manipulation was it?"),
    gettext_noop("In the debate you read, whom did Side {side} argue was responsible?"),
    gettext_noop("Read the claim. Is it true or false? Answer first with what you think now."),
    gettext_noop(
        "Read both debate excerpts, then compare only the two Speaker A participants. Base your answer "
        "solely on what they wrote. Some questions contain an instruction in brackets: follow it exactly."
    ),
    gettext_noop(
        "You will debate the topic below. Try to persuade your opponent: you win if they concede your "
        "initial claim or retract their own."
    ),
)


def translations_snapshot(study: Study) -> dict:
    """Every translation of the study, JSON-ready and in a canonical order (empty when none)."""
    found: dict[str, dict] = {}
    for row in study.translations.order_by("language"):
        found[row.language] = {"study": {name: getattr(row, name) for name in STUDY_TEXT_FIELDS}, "steps": {}}
    rows = StepTranslation.objects.filter(step__study=study).select_related("step").order_by("step__position")
    for row in rows:
        entry = found.setdefault(row.language, {"study": {}, "steps": {}})
        entry["steps"][str(row.step.position)] = {"title": row.title, "texts": row.texts}
    return found


def translations_build(*, study: Study, spec: dict) -> None:
    """Create the translations described by `spec` (the shape `translations_snapshot` gives:
    language -> {"study": {...}, "steps": {position: {"title", "texts"}}}). Run it inside
    the transaction that built the study."""
    steps = {str(s.position): s for s in study.steps.all()}
    for language, entry in spec.items():
        row = StudyTranslation(study=study, language=language, **entry.get("study", {}))
        row.full_clean()
        row.save()
        for position, step_entry in entry.get("steps", {}).items():
            step = steps[str(position)]
            texts = step_entry.get("texts", {})
            StepTranslation.objects.create(
                step=step, language=language, title=step_entry.get("title", ""), texts=texts
            )


def translations_copy(*, source: Study, copy: Study) -> None:
    """Copy `source`'s translations onto its duplicate `copy` (same step positions)."""
    translations_build(study=copy, spec=translations_snapshot(source))
