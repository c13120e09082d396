"""A list of small records edited as rows of a table (a formset inside one form field) and
saved back into one value: a JSON list (a case's suspects, its evidence units) or text (a
screening step's groups). The experimenter never types JSON: each row is a small form with
its own fields and errors; rows are added with a button (static/js/rows.js) and removed
with a tick box; a blank row is ignored.

`RowsField(RowForm, to_rows=..., from_rows=..., check=...)`: `to_rows(value)` turns the
stored value into row dicts (the rows shown), `from_rows(rows)` turns the cleaned rows back
into the value to store, and `check(rows)` returns the problems of the rows as a whole
(duplicates, too few). The field also accepts the stored value itself instead of the
table's POST data (a step configuration checked by a service), with problems naming the row.
"""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.core.exceptions import ValidationError
from django.forms.formsets import BaseFormSet
from django.template.loader import render_to_string

TEMPLATE = "admin/rostrum/rows.html"


class BaseRows(forms.BaseFormSet):
    """Every row is an "extra" form: a blank row is ignored, whichever it is."""

    def initial_form_count(self) -> int:
        return 0

    def total_form_count(self) -> int:
        if self.is_bound:
            return super().total_form_count()
        return len(self.initial or []) + self.extra


def rows_of(formset: BaseFormSet) -> list[dict]:
    """The cleaned rows of a valid formset, in order, without blank and removed ones."""
    rows = []
    for form in formset.forms:
        if not form.has_changed() or form.cleaned_data.get("DELETE"):
            continue
        rows.append({name: value for name, value in form.cleaned_data.items() if name != "DELETE"})
    return rows


def formset_data(prefix: str, rows: list[dict]) -> dict:
    """POST data for a formset holding `rows` (how a stored value is checked like a form)."""
    data = {f"{prefix}-TOTAL_FORMS": str(len(rows)), f"{prefix}-INITIAL_FORMS": "0"}
    for i, row in enumerate(rows):
        for name, value in row.items():
            data[f"{prefix}-{i}-{name}"] = "" if value is None else str(value)
    return data


class RowsWidget(forms.Widget):
    """Renders the formset as a table; reads back the bound formset (or a plain value)."""

    def __init__(
        self, formset_class, to_rows: Callable, item: str, add_label: str, autonumber: str = ""
    ) -> None:
        super().__init__()
        self.formset_class = formset_class
        self.to_rows = to_rows
        self.item = item  # what a row is ("suspect"): names the row's inputs for screen readers
        self.add_label = add_label
        self.autonumber = autonumber

    @property
    def media(self):
        return forms.Media(js=["js/rows.js"])

    def value_from_datadict(self, data, files, name):
        if f"{name}-TOTAL_FORMS" in data:
            return self.formset_class(data=data, prefix=name)
        return data.get(name)

    def value_omitted_from_data(self, data, files, name) -> bool:
        return f"{name}-TOTAL_FORMS" not in data and name not in data

    def render(self, name, value, attrs=None, renderer=None):
        if isinstance(value, BaseFormSet):
            formset = value
        else:
            formset = self.formset_class(initial=self.to_rows(value), prefix=name)
        fields = [f for f in formset.empty_form.visible_fields() if f.name != "DELETE"]
        context = {
            "name": name,
            "formset": formset,
            "columns": [(f.label, f.field.required, f.help_text) for f in fields],
            "item": self.item,
            "add_label": self.add_label,
            "autonumber": self.autonumber,
        }
        return render_to_string(TEMPLATE, context)


def as_list(value) -> list[dict]:
    return [dict(row) for row in value or [] if isinstance(row, dict)]


def numbered(row_form: type[forms.Form], autonumber: str) -> type[forms.Form]:
    """The row form of a numbered list: a row with nothing but its number (the next one, put in
    by the page) is still a blank row, ignored."""

    class Numbered(row_form):
        def has_changed(self) -> bool:
            return any(name != autonumber for name in self.changed_data)

    Numbered.__name__ = row_form.__name__
    return Numbered


class RowsField(forms.Field):
    def __init__(
        self,
        row_form: type[forms.Form],
        *,
        to_rows: Callable = as_list,
        from_rows: Callable = list,
        check: Callable[[list[dict]], list[str]] | None = None,
        item: str = "row",
        add_label: str = "Add a row",
        autonumber: str = "",
        extra: int = 1,
        **kwargs,
    ) -> None:
        if autonumber:
            row_form = numbered(row_form, autonumber)
        self.formset_class = forms.formset_factory(row_form, formset=BaseRows, extra=extra, can_delete=True)
        self.to_rows, self.from_rows, self.check = to_rows, from_rows, check
        kwargs.setdefault("widget", RowsWidget(self.formset_class, to_rows, item, add_label, autonumber))
        super().__init__(**kwargs)

    def bound_data(self, data, initial):
        return data

    def clean(self, value):
        if isinstance(value, BaseFormSet):
            if not value.is_valid():
                raise ValidationError("Correct the rows marked below.", code="rows")
            rows = rows_of(value)
        else:
            rows = self._rows_from_value(value)
        if self.required and not rows:
            raise ValidationError(self.error_messages["required"], code="required")
        problems = self.check(rows) if self.check else []
        if problems:
            raise ValidationError(problems)
        return self.from_rows(rows)

    def _rows_from_value(self, value) -> list[dict]:
        """A stored value checked row by row; each problem names its row and field."""
        try:
            given = self.to_rows(value)
        except (TypeError, ValueError, AttributeError):
            raise ValidationError("Not a list of rows.", code="invalid") from None
        formset = self.formset_class(data=formset_data("rows", given), prefix="rows")
        if formset.is_valid():
            return rows_of(formset)
        problems = [
            f"row {i}, {name}: {' '.join(errors)}"
            for i, form in enumerate(formset.forms, start=1)
            for name, errors in form.errors.items()
        ]
        raise ValidationError(problems or formset.non_form_errors())

    def has_changed(self, initial, data) -> bool:
        try:
            return self.clean(data) != self.clean(initial)
        except ValidationError:
            return True
