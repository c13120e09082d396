"""The pre-registration lock: at go-live a study's snapshot and its SHA-256 are frozen; the
study cannot change; exports and the API carry the hash; verify_study finds any drift; the
snapshot is the study's instrument."""

import csv
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from debates.models import Turn
from studies.models import Step, Study
from studies.services import StudyLocked, steps_arrange, study_set_status
from studies.snapshot import digest
from tests.support.cast import Walker
from tests.support.downloads import streamed_body
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study


@pytest.mark.django_db
class TestTheLock:
    def test_going_live_freezes_the_study_and_its_hash(self, mystery_study):
        snapshot = mystery_study.snapshot
        assert mystery_study.snapshot_sha256 == digest(snapshot) and mystery_study.locked_at
        assert snapshot["study"]["seed"] == mystery_study.seed
        assert [s["kind"] for s in snapshot["steps"]][:4] == ["consent", "instructions", "story", "dialogue"]
        check = next(q for s in snapshot["steps"] for q in s["questions"] if q["key"] == "attention_1")
        assert check["expected_answer"] == ["Strongly disagree"] and "Strongly agree" in check["options"]
        offered = snapshot["content"]["dialogues"]["offered"]
        assert len(offered) == 10 and all(len(d["sha256"]) == 64 for d in offered)
        with pytest.raises(StudyLocked):
            steps_arrange(
                study=mystery_study, saved=[Step(study=mystery_study, kind="debrief", title="x", position=1)]
            )

    def test_a_study_nobody_entered_may_go_back_to_draft_and_freezes_again(self):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP])
        first = study.snapshot_sha256
        study_set_status(study=study, status="draft")
        assert study.snapshot is None and study.locked_at is None
        Step.objects.filter(study=study, kind="consent").update(title="Consent, revised")
        study_set_status(study=study, status="live")
        assert study.snapshot_sha256 not in ("", first)
        Walker(study).enter()
        study.refresh_from_db()
        with pytest.raises(ValueError, match="Participants have taken this study"):
            study_set_status(study=study, status="draft")


@pytest.mark.django_db
class TestVerification:
    def test_verify_study_passes_then_names_what_drifted(self, mystery_study):
        out = io.StringIO()
        call_command("verify_study", mystery_study.slug, stdout=out)
        assert f"matches its snapshot {mystery_study.snapshot_sha256}" in out.getvalue()
        Turn.objects.filter(pk=Turn.objects.order_by("pk").first().pk).update(
            text="Edited behind the admin's back."
        )
        Study.objects.filter(pk=mystery_study.pk).update(target_per_item=99)
        with pytest.raises(CommandError) as info:
            call_command("verify_study", mystery_study.slug)
        message = str(info.value)
        assert "drifted" in message and "study.target_per_item changed" in message
        assert "content.dialogues.offered[" in message and "sha256 changed" in message

    def test_an_altered_snapshot_is_caught(self, mystery_study):
        tampered = {**mystery_study.snapshot, "study": {**mystery_study.snapshot["study"], "seed": 1}}
        Study.objects.filter(pk=mystery_study.pk).update(snapshot=tampered)
        with pytest.raises(CommandError, match="was altered"):
            call_command("verify_study", mystery_study.slug)


@pytest.mark.django_db
def test_exports_and_the_instrument_carry_the_hash(experimenter, mystery_study):
    w = Walker(mystery_study)
    w.enter()
    w.walk()
    body = streamed_body(experimenter.get(f"/admin/studies/study/{mystery_study.pk}/export/judgements.csv"))
    (row,) = csv.DictReader(io.StringIO(body))
    assert row["study_sha256"] == mystery_study.snapshot_sha256
    page = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/instrument/").content.decode()
    assert mystery_study.snapshot_sha256 in page and "Strongly disagree" in page
    download = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/instrument.json")
    assert digest(download.json()) == mystery_study.snapshot_sha256
    study_page = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/change/").content.decode()
    assert mystery_study.snapshot_sha256 in study_page and "Instrument" in study_page
