"""Every admin page of every registered model renders with real data in it."""

import pytest
from django.contrib import admin as django_admin
from django.urls import reverse

from studies.models import Step
from tests.support.cast import Walker


@pytest.mark.django_db
def test_every_admin_page_renders_for_a_running_study(experimenter, mystery_study):
    """Changelists and change pages of every registered model, with real data in them."""
    w = Walker(mystery_study)
    w.enter()
    w.walk()
    for model in django_admin.site._registry:
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert experimenter.get(changelist).status_code == 200, changelist
        for obj in model.objects.all()[:3]:
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
            assert experimenter.get(url).status_code == 200, url
    for step in Step.objects.filter(study=mystery_study):
        assert experimenter.get(f"/admin/studies/step/{step.pk}/change/").status_code == 200
    assert experimenter.get(f"/admin/studies/study/{mystery_study.pk}/export/").status_code == 200
