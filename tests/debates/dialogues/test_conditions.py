"""Conditions are data: the paper's five exist after migrating and after any import; the
experimenter adds one in the admin; a condition dialogues use keeps its slug and baseline
flag and cannot be deleted."""

import pytest
from django.urls import reverse

from debates.demo import loader
from debates.models import Condition

pytestmark = pytest.mark.django_db


def test_the_papers_conditions_exist_in_order_with_the_baseline_marked_once_cases_are_imported():
    Condition.objects.all().delete()  # as a flushed database leaves it
    loader.demo_cases()
    rows = list(Condition.objects.values_list("slug", "baseline"))
    assert rows == [
        ("baseline", True),
        ("anchoring", False),
        ("fallacy_oversight", False),
        ("pro_jargon", False),
        ("verbosity", False),
    ]


def test_an_experimenter_adds_a_condition_and_a_used_one_is_protected(experimenter, outsider):
    add = reverse("admin:debates_condition_add")
    assert outsider.get(add).status_code == 302
    experimenter.post(
        add,
        {"slug": "sycophancy", "label": "Sycophancy", "description": "Flattery", "position": 5},
    )
    assert Condition.objects.get(slug="sycophancy").label == "Sycophancy"

    loader.demo_cases()
    used = Condition.objects.get(slug="anchoring")
    page = experimenter.get(reverse("admin:debates_condition_change", args=[used.pk])).content.decode()
    assert 'name="slug"' not in page and 'name="label"' in page
    experimenter.post(reverse("admin:debates_condition_delete", args=[used.pk]), {"post": "yes"})
    assert Condition.objects.filter(slug="anchoring").exists()
    listing = experimenter.get(reverse("admin:debates_condition_changelist")).content.decode()
    assert "Sycophancy" in listing and "Anchoring" in listing
