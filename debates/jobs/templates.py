"""Versioned prompt templates. The latest version of a name is the one used; a version
that produced data (a recorded call used it: `used_at`) is never changed in place, a
change is saved as the next version."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from debates.models import PromptTemplate


def latest(name: str, default_text: str) -> PromptTemplate:
    """The latest version of `name`, creating version 1 from `default_text` if there is none."""
    found = PromptTemplate.objects.filter(name=name).order_by("-version").first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return PromptTemplate.objects.create(name=name, version=1, text=default_text, note="The default.")
    except IntegrityError:  # created meanwhile by another item
        return PromptTemplate.objects.filter(name=name).order_by("-version").first()


def template_used(template: PromptTemplate) -> bool:
    return PromptTemplate.objects.filter(pk=template.pk, used_at__isnull=False).exists()


def template_mark_used(template_id: int) -> None:
    PromptTemplate.objects.filter(pk=template_id, used_at__isnull=True).update(used_at=timezone.now())


def template_save(*, template: PromptTemplate, text: str, note: str = "") -> PromptTemplate:
    """Save a change to `template`: in place if no data came from it (or only the note
    changed), else as a new version (numbered after the name's latest)."""
    with transaction.atomic():
        if template.pk is None or not template_used(template) or text == template.text:
            template.text, template.note = text, note or template.note
            if template.pk is None and not template.version:
                template.version = 1
            template.save()
            return template
        last = (
            PromptTemplate.objects.select_for_update().filter(name=template.name).order_by("-version").first()
        )
        return PromptTemplate.objects.create(
            name=template.name, version=last.version + 1, text=text, note=note
        )
