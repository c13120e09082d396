"""New versions of content a running study uses (a case, a claim, a debater configuration,
an instance set): what the copy is called."""

from __future__ import annotations


def next_version(model, field: str, value: str) -> str:
    """`value-v2`, `value-v3`, … (counting on from a value that already ends in `-vN`):
    the first one no row of `model` has in `field`."""
    stem, _, number = value.rpartition("-v")
    base = stem if stem and number.isdigit() else value
    n = 2
    while model.objects.filter(**{field: f"{base}-v{n}"}).exists():
        n += 1
    return f"{base}-v{n}"
