"""The job-kind registry, like the step-kind registry (`studies.registry`).

A kind says what one item of a job does: `plan(job)` lists the items once, when the job
first starts; `run(item, calls)` does one item (all model access through `calls`, see
`debates.jobs.calls`) and returns its JSON result or raises `ItemFailed`; `summary(job)`
gives the rows of the admin's result table and `links(job)` links shown beside it (a page of
the kind's own about the job's results). Kinds are registered from an app's `ready()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms

if TYPE_CHECKING:
    from debates.jobs.calls import Calls
    from debates.models import Job, JobItem


class EmptyConfigForm(forms.Form):
    pass


@dataclass(frozen=True)
class ItemSpec:
    """One item a job's plan asks for: its key (unique in the job), its payload (JSON) and its
    stage: an item starts only once no item of an earlier stage is pending or running (a
    dialogue is built after its case's reasons are chosen). Later stages read earlier items'
    results through `debates.jobs.services.item_results`."""

    key: str
    payload: dict
    stage: int = 0


class ItemFailed(Exception):
    """An item cannot be done. `retryable`: trying the item again later may help (it is
    retried up to JOB_ITEM_ATTEMPTS attempts); otherwise the item fails with the message."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class JobKind:
    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    config_form: ClassVar[type[forms.Form]] = EmptyConfigForm

    def plan(self, job: Job) -> list[ItemSpec]:
        """The job's items; called once, when the job first starts."""
        raise NotImplementedError

    async def run(self, item: JobItem, calls: Calls) -> dict:
        """Do one item; its result (JSON). Raise ItemFailed when it cannot be done."""
        raise NotImplementedError

    def summary(self, job: Job) -> list[dict]:
        """Rows for the admin's result table (the keys of the first row are the columns)."""
        return []

    def links(self, job: Job) -> list[tuple[str, str]]:
        """(label, url) of links for the job's admin page, shown with its results."""
        return []

    def clean_config(self, config: dict) -> dict:
        """Validate a config dict through the kind's form; raise ValidationError if bad."""
        form = self.config_form(data=config)
        if not form.is_valid():
            raise forms.ValidationError(form.errors.as_text())
        return _jsonable(form.cleaned_data)


def _jsonable(data: dict) -> dict:
    return {
        key: value if isinstance(value, str | int | float | bool | list | dict | type(None)) else str(value)
        for key, value in data.items()
    }


_kinds: dict[str, JobKind] = {}


def register(kind_cls: type[JobKind]) -> type[JobKind]:
    """Register a kind (registering a key again replaces it); usable as a decorator."""
    if not kind_cls.key:
        raise ValueError(f"{kind_cls.__name__} has no key")
    _kinds[kind_cls.key] = kind_cls()
    return kind_cls


def unregister(key: str) -> None:
    _kinds.pop(key, None)


def get(key: str) -> JobKind:
    try:
        return _kinds[key]
    except KeyError:
        raise KeyError(f"no job kind {key!r} (registered: {', '.join(sorted(_kinds)) or 'none'})") from None


def choices() -> list[tuple[str, str]]:
    return [(key, kind.label or key) for key, kind in sorted(_kinds.items())]


def all_kinds() -> dict[str, Any]:
    return dict(_kinds)
