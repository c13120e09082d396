"""The step-kind registry.

A study is an ordered list of steps; each step names a *kind*. A kind is a small class,
registered here from the `ready()` of the app that owns it (`participants` registers
consent, instructions, questionnaires, attention checks and screening; `debates` registers
each design's kinds). The flow engine reaches kinds only through this registry.

A kind declares:
- `config_form`: the admin form for its configuration (stored as the step's JSON config);
- `uses_questions`: whether the step carries questionnaire items (edited inline);
- `template`: the participant page;
- `context()`, `build_form()` and `submit()`: what the page shows, what it accepts and
  what it stores. `submit()` may return a `StepOutcome` that ends the study early.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms

if TYPE_CHECKING:
    from studies.models import Step, Study


class EmptyConfigForm(forms.Form):
    pass


@dataclass(frozen=True)
class StepOutcome:
    """How a submitted step ends the study early: the participant status to end with."""

    end_status: str
    detail: str = ""
    code: str = ""  # the completion code to leave with, instead of the study's for the status


@dataclass
class StepContext:
    """What a kind sees of the participant at its step. `participant` is the model row."""

    participant: Any
    step: Step
    study: Study
    steps: list[Step]
    now: Any
    timing: Any = None  # the browser's reading-time figures, on submission
    stay: bool = False  # set by a multi-page kind's submit(): the step is not finished
    extra: dict = field(default_factory=dict)

    @property
    def position(self) -> int:
        return self.step.position


class StepUnavailable(Exception):
    """The step cannot be shown (e.g. every dialogue is full); ends with `end_status`."""

    def __init__(self, end_status: str, message: str = "") -> None:
        super().__init__(message or end_status)
        self.end_status = end_status


class StepKind:
    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    template: ClassVar[str] = ""
    config_form: ClassVar[type[forms.Form]] = EmptyConfigForm
    uses_questions: ClassVar[bool] = False
    # The kind stores nothing and needs no answer: a "Continue" button only.
    passive: ClassVar[bool] = False
    # The step has pages of its own (e.g. answer, debate, answer again): submit() sets
    # ctx.stay to keep the participant on the step after storing a page.
    multi_page: ClassVar[bool] = False

    def clean_config(self, config: dict) -> dict:
        """Validate a config dict through the kind's form; raise ValidationError if bad."""
        form = self.config_form(data=config)
        if not form.is_valid():
            raise forms.ValidationError([f"{name}: {'; '.join(errs)}" for name, errs in form.errors.items()])
        return form.cleaned_data

    def config(self, step: Step) -> dict:
        """The step's config with the form's initial values filled in for missing keys."""
        defaults = {
            name: f.initial for name, f in self.config_form.base_fields.items() if f.initial is not None
        }
        from studies.texts import localized_config  # it imports this module

        # On a participant's page in another language, its texts in that language.
        return localized_config(self, step, {**defaults, **(step.config or {})})

    def check_study(self, study: Study, step: Step, steps: list[Step]) -> list[str]:
        """Problems with this step in the study's design (shown before going live), each a
        plain sentence an experimenter can act on."""
        return []

    def check_warnings(self, study: Study, step: Step, steps: list[Step]) -> list[str]:
        """What is worth a look in this step's design before going live without stopping it,
        each a plain sentence (the study's page lists them under the problems); `steps` are the
        study's, as for `check_study`."""
        return []

    def attention_items(self, step: Step) -> int:
        """How many attention-check items a participant meets in this step (each failure
        counts one towards the study's threshold)."""
        if not self.uses_questions:
            return 0
        return sum(1 for q in step.questions.all() if q.is_check)

    def places_needed(self, step: Step) -> tuple[int, str] | None:
        """How many participants this step's content takes, and why in words (the number of
        places to post on Prolific), where the step's design fixes it; None where it does not."""
        return None

    def context(self, ctx: StepContext) -> dict:
        return {}

    def build_form(self, ctx: StepContext, data: Any = None) -> forms.Form:
        return forms.Form(data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        return None


_registry: dict[str, StepKind] = {}


def register(cls: type[StepKind]) -> type[StepKind]:
    if not cls.key or cls.key in _registry:
        raise ValueError(f"step kind {cls.key!r} is missing a key or registered twice")
    _registry[cls.key] = cls()
    return cls


def register_all(*classes: type[StepKind]) -> None:
    """Register an app's step kinds; called from its `AppConfig.ready()`."""
    for cls in classes:
        register(cls)


def get(key: str) -> StepKind:
    try:
        return _registry[key]
    except KeyError:
        raise LookupError(f"unknown step kind {key!r}") from None


def find(key: str) -> StepKind | None:
    """The kind registered as `key`, or None (a step of a kind no app registers any more)."""
    return _registry.get(key)


def all_kinds() -> list[StepKind]:
    return list(_registry.values())


def choices() -> list[tuple[str, str]]:
    return [(k.key, k.label) for k in _registry.values()]
