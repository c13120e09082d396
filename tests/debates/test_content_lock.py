"""A study cannot change under its participants: once it is live, the content it uses (cases
and dialogues, claims, debater configurations, instance sets) is read-only in the admin and in
the imports, and a new version can be made instead."""

import json

import pytest

from debates.demo.mystery import CASES_FILE
from debates.dialogues.imports import cases_import
from debates.imports import ImportInvalid
from debates.live.imports import claims_import
from debates.models import Case, Claim, DebaterConfig, Dialogue, InstanceSet
from debates.pairwise.imports import set_import, set_json


@pytest.mark.django_db
class TestTheAdmin:
    def test_a_case_a_live_study_uses_cannot_change_and_a_new_version_can(self, experimenter, mystery_study):
        case = Case.objects.first()
        page = experimenter.get(f"/admin/debates/case/{case.pk}/change/").content.decode()
        assert "gone live with this case, so it cannot change" in page and "Make a new version" in page
        swapped = {"title": case.title, "story": case.story, "culprit": case.rival, "rival": case.culprit}
        assert experimenter.post(f"/admin/debates/case/{case.pk}/change/", swapped).status_code == 403
        case.refresh_from_db()
        assert case.culprit != swapped["culprit"]  # the swap the issue reported is refused
        response = experimenter.post(f"/admin/debates/case/{case.pk}/new-version/")
        copy = Case.objects.get(slug=f"{case.slug}-v2")
        assert response["Location"] == f"/admin/debates/case/{copy.pk}/change/"
        assert copy.dialogues.count() == case.dialogues.count()
        assert [t.text for t in copy.dialogues.first().turns.all()] == [
            t.text
            for t in Dialogue.objects.get(slug=copy.dialogues.first().slug.rsplit("-v", 1)[0]).turns.all()
        ]
        editable = experimenter.get(f"/admin/debates/case/{copy.pk}/change/").content.decode()
        assert "cannot change" not in editable and 'name="culprit"' in editable

    @pytest.mark.parametrize(
        ("fixture", "model", "url"),
        [
            ("claim_study", Claim, "claim"),
            ("claim_study", DebaterConfig, "debaterconfig"),
            ("pairs_study", InstanceSet, "instanceset"),
        ],
    )
    def test_other_content_of_a_live_study_is_read_only(self, request, experimenter, fixture, model, url):
        request.getfixturevalue(fixture)
        obj = model.objects.first()
        before = model.objects.count()
        assert experimenter.post(f"/admin/debates/{url}/{obj.pk}/change/", {}).status_code == 403
        assert experimenter.post(f"/admin/debates/{url}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
        experimenter.post(f"/admin/debates/{url}/{obj.pk}/new-version/")
        assert model.objects.count() == before + 1

    def test_a_study_back_in_draft_before_anyone_entered_frees_its_content(self, experimenter, mystery_study):
        from studies.services import study_set_status

        study_set_status(study=mystery_study, status="draft")
        case = Case.objects.first()
        assert (
            "cannot change" not in experimenter.get(f"/admin/debates/case/{case.pk}/change/").content.decode()
        )


@pytest.mark.django_db
class TestTheImports:
    def test_a_case_of_a_live_study_keeps_its_culprit(self, mystery_study):
        doc = json.loads(CASES_FILE.read_text())
        doc["cases"][0]["culprit"], doc["cases"][0]["rival"] = (
            doc["cases"][0]["rival"],
            doc["cases"][0]["culprit"],
        )
        with pytest.raises(ImportInvalid) as info:
            cases_import(text=json.dumps(doc))
        assert any("uses this case, so it cannot change" in str(p) for p in info.value.problems)

    def test_a_claim_of_a_live_study_keeps_its_sources(self, claim_study):
        claim = Claim.objects.first()
        doc = {
            "format": "rostrum.claims/1",
            "claims": [
                {"slug": claim.slug, "text": claim.text, "truth": claim.truth, "domain": claim.domain}
            ],
        }
        with pytest.raises(ImportInvalid, match="problem"):
            claims_import(text=json.dumps(doc))  # the same claim without its sources

    def test_the_instance_set_of_a_live_study_cannot_be_replaced(self, pairs_study):
        with pytest.raises(ImportInvalid) as info:
            set_import(text=set_json(InstanceSet.objects.get()))
        assert "a study that has gone live uses 'demo-pairs'" in str(info.value.problems[0])
