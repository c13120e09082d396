"""Admin building blocks the designs share: a read-only model admin, and the upload page of
an import whose problems are listed with their lines."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from debates.imports import ImportInvalid, decode

MAX_UPLOAD = 5 * 1024 * 1024


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


def import_page(model_admin, request, *, perm: str, title: str, form_class, run, done: str):
    """An upload page: `run(form.cleaned_data, upload_text, filename)` imports and returns the
    success message, or raises ImportInvalid, whose problems (with their lines) are listed."""
    if not request.user.has_perm(perm):
        return redirect("admin:index")
    form = form_class(request.POST or None, request.FILES or None)
    problems = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            message = run(form.cleaned_data, decode(upload.read()), upload.name)
        except ImportInvalid as invalid:
            problems = invalid.problems
        else:
            model_admin.message_user(request, message, messages.SUCCESS)
            return redirect(done)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": title,
        "form": form,
        "problems": problems,
    }
    return TemplateResponse(request, "admin/debates/import.html", context)
