"""Admin building blocks the designs share: a read-only model admin, the upload page of an
import whose problems are listed with their lines, and content frozen while a running study
uses it."""

from __future__ import annotations

import logging

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from debates.formats import format_context
from debates.imports import ImportInvalid, decode

log = logging.getLogger(__name__)

MAX_UPLOAD = 5 * 1024 * 1024
NOT_IMPORTED = (
    "The file was not imported: an unexpected error stopped the import, so nothing was changed. "
    "The error is logged for the maintainers."
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ImportForm(forms.Form):
    """An upload of at most 5 MB; each import page gives `file` its own help text."""

    file = forms.FileField()

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD:
            raise forms.ValidationError("The file is larger than 5 MB.")
        return upload


def import_page(model_admin, request, *, perm: str, title: str, form_class, run, done: str, fmt: str):
    """An upload page: `run(form.cleaned_data, upload_text, filename)` imports and returns the
    success message, or raises ImportInvalid, whose problems (with their lines) are listed.
    Any other error rolls the import back and is logged; the page says the file was not
    imported rather than answering 500. The page links the format's documentation, schema and
    examples (`debates.formats`)."""
    if not request.user.has_perm(perm):
        return redirect("admin:index")
    form = form_class(request.POST or None, request.FILES or None)
    problems = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            with transaction.atomic():
                message = run(form.cleaned_data, decode(upload.read()), upload.name)
        except ImportInvalid as invalid:
            problems = invalid.problems
        except Exception:
            # Something the checks let through and the database refused, or a bug: the file's
            # problems cannot be listed, but the staff member should still learn that nothing
            # was imported (a 500 page does not say so), and the maintainers get the traceback.
            log.exception("Import of %r at %s failed", upload.name, request.path)
            model_admin.message_user(request, NOT_IMPORTED, messages.ERROR)
        else:
            model_admin.message_user(request, message, messages.SUCCESS)
            return redirect(done)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": title,
        "form": form,
        "problems": problems,
        "format": format_context(fmt),
    }
    return TemplateResponse(request, "admin/debates/import.html", context)


class InUseAdmin(admin.ModelAdmin):
    """Content that a study with real participants uses is read-only, like the study's steps:
    its page says which studies use it and offers a new version (a copy, free to change)."""

    change_form_template = "admin/debates/in_use_change_form.html"

    @staticmethod
    def studies_using(obj) -> QuerySet:
        raise NotImplementedError

    @staticmethod
    def new_version(obj):
        raise NotImplementedError

    def _using(self, obj) -> list:
        return list(self.studies_using(obj)) if obj is not None and obj.pk else []

    def has_change_permission(self, request, obj=None) -> bool:
        return not self._using(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return not self._using(obj) and super().has_delete_permission(request, obj)

    def get_urls(self):
        meta = self.model._meta
        view = self.admin_site.admin_view(self.new_version_view)
        name = f"{meta.app_label}_{meta.model_name}_new_version"
        return [path("<int:object_id>/new-version/", view, name=name), *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        using = self._using(obj)
        extra_context = {**(extra_context or {}), "in_use": using}
        return super().change_view(request, object_id, form_url, extra_context)

    def new_version_view(self, request, object_id: int):
        obj = self.get_object(request, str(object_id))
        meta = self.model._meta
        allowed = request.user.has_perm(f"{meta.app_label}.add_{meta.model_name}")
        if obj is None or not allowed or request.method != "POST":
            raise PermissionDenied
        copy = self.new_version(obj)
        messages.success(request, f"Made a new version, {copy}: change it here.")
        return redirect(f"admin:{meta.app_label}_{meta.model_name}_change", copy.pk)
