"""'Duplicate as a new draft': the copy of a study that has run must be ready to go live with
the same content, for every study design."""

import re

import pytest

from debates.demo import loader
from debates.models import Comparison, DialogueAssignment, LiveSession, StudyClaim, StudyDialogue
from studies.models import Step, Study
from studies.services import CODE_LABELS, study_duplicate, study_problems, study_set_status, study_warnings
from tests.support.cast import Walker

# (demo loader, the title of the step at which a participant gets their content, their content)
DESIGNS = {
    "dialogues": (loader.mystery_study, "The debate", DialogueAssignment),
    "claims": (loader.claim_study, "Claim 1 of 2", LiveSession),
    "pairwise": (loader.pairs_study, "Compare the two Speaker As", Comparison),
}


CODE_FIELDS = list(CODE_LABELS)


def offered(study: Study) -> dict:
    return {
        "dialogues": set(StudyDialogue.objects.filter(study=study).values_list("dialogue", "active")),
        "claims": set(StudyClaim.objects.filter(study=study).values_list("claim", "active")),
        "steps": list(Step.objects.filter(study=study).values_list("position", "kind", "title", "config")),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("design", DESIGNS)
def test_a_duplicated_study_can_go_live_with_the_same_content(design):
    load, content_step, content = DESIGNS[design]
    source = load()
    Walker(source).enter()  # the source has run: its steps are frozen
    switched_off = StudyDialogue.objects.filter(study=source).order_by("id").first()
    if switched_off is not None:  # what the experimenter switched off stays off in the copy
        StudyDialogue.objects.filter(pk=switched_off.pk).update(active=False)

    copy = study_duplicate(study=source, slug=f"{source.slug}-v2")

    assert copy.status == Study.Status.DRAFT and copy.locked_at is None
    assert offered(copy) == offered(source)
    # Not a pilot, as the source was: a STUDY_ID (and for live debates, a model) are needed,
    # or Pilot ticked again (below). Worth a look, not a stop: the copy has the source's codes
    # (a participant of the source could submit its code here without doing this study).
    assert any("STUDY_ID is not set" in p for p in study_problems(copy))
    shared = study_warnings(copy)
    assert shared and all(f"also a code of {source.slug}, which has gone live" in w for w in shared)
    Study.objects.filter(pk=copy.pk).update(
        pilot=True, **{field: f"{getattr(copy, field)}2" for field in CODE_FIELDS if getattr(copy, field)}
    )
    copy.refresh_from_db()
    assert study_problems(copy) == [] and study_warnings(copy) == []
    study_set_status(study=copy, status=Study.Status.LIVE)
    w = Walker(copy)
    w.enter()
    w.walk(stop_before=content_step)
    if content is DialogueAssignment:
        assert DialogueAssignment.objects.get(participant__prolific_pid=w.pid).study_dialogue.study == copy
    else:
        w.page()  # the step assigns its content when first shown
        assert content.objects.filter(participant__prolific_pid=w.pid).exists()


@pytest.mark.django_db
def test_a_pilots_duplicate_is_not_a_pilot():
    """A copy of a pilot kept the flag: a paid run could have gone live taking any STUDY_ID and
    the offline model, with "No problems found" (the researcher walk)."""
    source = loader.claim_study(pilot=True)
    copy = study_duplicate(study=source, slug=f"{source.slug}-v2")
    assert source.pilot and not copy.pilot
    assert any("The Prolific STUDY_ID is not set" in p for p in study_problems(copy))


@pytest.mark.django_db
def test_the_study_page_duplicates_it_after_asking(experimenter, staff_without_permissions):
    """'Duplicate as a new draft' was only an action of the list of studies, which nothing on a
    frozen study's pages pointed to (the researcher walk): the study page links to it, a GET
    asks, a POST makes the copy and opens it; a copy deleted leaves no slug to collide with."""
    from django.urls import reverse

    source = loader.mystery_study()
    Walker(source).enter()
    url = reverse("admin:studies_study_duplicate", args=[source.pk])
    assert url in experimenter.get(reverse("admin:studies_study_change", args=[source.pk])).content.decode()
    step = Step.objects.filter(study=source).first()
    assert url in experimenter.get(reverse("admin:studies_step_change", args=[step.pk])).content.decode()
    asked = experimenter.get(url).content.decode()
    assert (
        f"<code>{source.slug}-v2</code>" in asked and not Study.objects.filter(slug__endswith="-v2").exists()
    )

    def duplicate():
        page = experimenter.get(url).content.decode()
        return {"key": re.search(r'name="key" value="([^"]+)"', page).group(1)}

    form = duplicate()
    response = experimenter.post(url, form)
    copy = Study.objects.get(slug=f"{source.slug}-v2")
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:studies_study_change", args=[copy.pk])
    again = experimenter.post(url, form)  # a double click: the same copy, opened again
    assert again["Location"] == response["Location"] and Study.objects.count() == 2
    experimenter.post(url, duplicate())  # v3
    Study.objects.filter(slug=f"{source.slug}-v2").delete()
    experimenter.post(url, duplicate())  # a gap at v2: after the highest, v4
    Study.objects.create(slug=f"{source.slug}-study", title="Not a copy")  # a prefix, not a version
    experimenter.post(url, duplicate())
    assert set(Study.objects.filter(slug__startswith=source.slug).values_list("slug", flat=True)) == {
        source.slug,
        f"{source.slug}-study",
        f"{source.slug}-v3",
        f"{source.slug}-v4",
        f"{source.slug}-v5",
    }
    long = Study.objects.get(pk=source.pk)
    Study.objects.filter(pk=long.pk).update(slug="x" * 50)
    experimenter.post(url, duplicate())
    assert Study.objects.filter(slug="x" * 47 + "-v2").exists()  # within the slug's 50 characters
    assert staff_without_permissions.post(url).status_code == 403
