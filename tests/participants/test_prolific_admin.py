"""The study's Prolific page in the admin: only staff with the permission see it; the experimenter
creates the draft, publishes, syncs and reviews there, with each submission's evidence beside
Prolific's status and Rostrum's, and disagreements flagged; refusals are said in plain words."""

import pytest

from devtools.fakeprolific import FakeProlific
from participants.models import Bonus, Participant, ProlificSubmission
from studies.models import Study
from tests.participants.prolific_support import (  # noqa: F401
    fake_fixture,
    on_prolific,
    participant_of,
    prolific_server_fixture,
    submission_of,
)
from tests.support.cast import Walker
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study

A_REASON = "x" * 120


def page_of(study: Study) -> str:
    return f"/admin/studies/study/{study.pk}/prolific/"


@pytest.mark.django_db
class TestWhoSeesIt:
    def test_the_page_renders_for_the_experimenter_and_is_linked_from_the_study(
        self, experimenter, questionnaire_study
    ):
        page = experimenter.get(page_of(questionnaire_study))
        assert page.status_code == 200
        html = page.content.decode()
        assert "{{%PROLIFIC_PID%}}" in html and "FAILED_ATTENTION_CHECK" in html
        assert "PROLIFIC_API_TOKEN is not set" in html
        study_page = experimenter.get(
            f"/admin/studies/study/{questionnaire_study.pk}/change/"
        ).content.decode()
        assert page_of(questionnaire_study) in study_page

    def test_a_study_url_on_another_address_than_the_admins_is_pointed_out(
        self, experimenter, questionnaire_study, settings
    ):
        """A demo started on port 8231 sent Prolific a study URL on port 8000 (SITE_URL's
        default), with nothing on the page to say the two differ (the researcher walk)."""
        settings.SITE_URL = "http://testserver"  # the test client's own address
        html = experimenter.get(page_of(questionnaire_study)).content.decode()
        assert "http://testserver/s/" in html and "not with this admin's address" not in html
        settings.SITE_URL = "http://127.0.0.1:8000"
        html = experimenter.get(page_of(questionnaire_study)).content.decode()
        assert "http://127.0.0.1:8000/s/" in html
        assert "not with this admin's address (<code>http://testserver</code>)" in html

    def test_studies_of_the_same_title_are_told_apart_among_the_sisters(
        self, experimenter, questionnaire_study
    ):
        """After a duplicate, two studies of one title were listed alike among the studies whose
        participants to exclude (the researcher walk): each is named with its slug."""
        from studies.services import study_duplicate

        copy = study_duplicate(study=questionnaire_study, slug=f"{questionnaire_study.slug}-v2")
        again = study_duplicate(study=questionnaire_study, slug=f"{questionnaire_study.slug}-v3")
        html = experimenter.get(page_of(again)).content.decode()
        for study in (questionnaire_study, copy):
            assert f" {study.title} ({study.slug})</label>" in html
        assert f"({again.slug})</label>" not in html  # not among its own

    def test_without_a_token_nothing_is_offered_or_done_and_the_page_says_why(
        self, experimenter, questionnaire_study, settings
    ):
        """Without PROLIFIC_API_TOKEN every button was live: "Approve" said "Approved 0
        submission(s) on Prolific." in green (the researcher walk)."""
        settings.PROLIFIC_API_TOKEN = ""
        walker = Walker(questionnaire_study)
        walker.enter()
        walker.walk()
        html = experimenter.get(page_of(questionnaire_study)).content.decode()
        assert '<button disabled name="action" value="approve">' in html
        assert '<button disabled name="action" value="sync">' in html
        row = Participant.objects.get(prolific_pid=walker.pid).pk
        for action in ("approve", "sync", "create", "bonus"):
            answer = experimenter.post(
                page_of(questionnaire_study), {"action": action, "row": f"{row}:"}, follow=True
            )
            text = answer.content.decode()
            assert "Nothing was sent: PROLIFIC_API_TOKEN is not set" in text, action
            assert "Approved" not in text
        assert not Bonus.objects.exists()

    def test_staff_without_the_permission_are_refused(self, staff_without_permissions, questionnaire_study):
        assert staff_without_permissions.get(page_of(questionnaire_study)).status_code == 403

    def test_someone_not_staff_is_sent_to_the_login(self, outsider, questionnaire_study):
        response = outsider.get(page_of(questionnaire_study))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]

    def test_the_lists_of_submissions_bonuses_and_studies_on_prolific_render(self, experimenter):
        for name in ("prolificsubmission", "bonus", "prolificstudy"):
            assert experimenter.get(f"/admin/participants/{name}/").status_code == 200

    def test_the_lists_need_staff(self, outsider, staff_without_permissions):
        assert outsider.get("/admin/participants/bonus/").status_code == 302
        assert staff_without_permissions.get("/admin/participants/bonus/").status_code == 403


@pytest.mark.django_db
class TestRunningAStudyFromThePage:
    def test_the_experimenter_creates_the_draft_then_publishes_it(self, fake: FakeProlific, experimenter):
        study = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", status="draft")
        form = {
            "action": "create",
            "places": "30",
            "reward": "2.50",
            "description": "Read and judge.",
            "devices": ["desktop", "mobile"],
        }
        assert experimenter.post(page_of(study), form).status_code == 302
        study.refresh_from_db()
        sent = fake.studies[study.prolific_study_id]
        assert (sent["reward"], sent["total_available_places"], sent["device_compatibility"]) == (
            250,
            30,
            ["desktop", "mobile"],
        )
        html = experimenter.post(page_of(study), {"action": "PUBLISH"}, follow=True).content.decode()
        assert "Set the study live here first" in html
        study.status = "live"
        study.save()
        html = experimenter.post(page_of(study), {"action": "PUBLISH"}, follow=True).content.decode()
        assert (
            "published on Prolific (ACTIVE)" in html
            and fake.studies[study.prolific_study_id]["status"] == "ACTIVE"
        )

    def test_a_draft_form_with_problems_is_shown_again(self, fake: FakeProlific, experimenter):
        study = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", status="draft")
        response = experimenter.post(page_of(study), {"action": "create", "places": "0", "reward": "1"})
        assert response.status_code == 200 and "This field is required." in response.content.decode()
        assert fake.studies == {}

    def test_a_sync_shows_both_statuses_and_the_evidence(
        self, fake: FakeProlific, experimenter, questionnaire_study
    ):
        walker = on_prolific(fake, questionnaire_study)
        walker.walk(answers={"Page two": {"check_1": "Agree"}})
        fake.submission_set(submission_of(fake, walker)["id"], "AWAITING_REVIEW", entered_code="CWRONG")
        html = experimenter.post(
            page_of(questionnaire_study), {"action": "sync"}, follow=True
        ).content.decode()
        assert "Synced 1 submission(s): 0 place(s) freed, 1 disagreement(s)." in html
        assert "Entered the code CWRONG on Prolific; Rostrum gave CDONE." in html
        assert "AWAITING REVIEW" in html and "Completed" in html
        assert "1 passed, 1 failed" in html and "Failed attention check" in html
        listed = experimenter.get("/admin/participants/prolificsubmission/?agree=no").content.decode()
        assert walker.pid in listed and "Entered the code CWRONG" in listed

    def test_a_rejection_without_its_message_is_refused_on_the_page(
        self, fake: FakeProlific, experimenter, questionnaire_study
    ):
        walker = on_prolific(fake, questionnaire_study)
        walker.walk(answers={"Page two": {"check_1": "Disagree"}})
        fake.submission_set(submission_of(fake, walker)["id"], "AWAITING_REVIEW")
        experimenter.post(page_of(questionnaire_study), {"action": "sync"})
        row = ProlificSubmission.objects.get()
        form = {"action": "reject", "row": f"{row.participant_id}:{row.pk}", "category": "", "message": "No."}
        html = experimenter.post(page_of(questionnaire_study), form, follow=True).content.decode()
        assert "Choose a rejection category: Prolific requires one" in html
        assert "a message of at least 100 characters" in html
        assert submission_of(fake, walker)["status"] == "AWAITING_REVIEW"
        form.update(category="LOW_EFFORT", message=A_REASON)
        html = experimenter.post(page_of(questionnaire_study), form, follow=True).content.decode()
        assert "the place is free again" in html and submission_of(fake, walker)["status"] == "REJECTED"

    def test_approving_or_rejecting_rows_without_a_submission_says_so(
        self, fake: FakeProlific, experimenter, questionnaire_study
    ):
        """ "Approved 0 submission(s) on Prolific." for a participant Prolific had no submission of,
        and "Reject one submission at a time" for exactly one such row (the researcher walk)."""
        walker = Walker(questionnaire_study)
        walker.enter()
        walker.walk()
        row = Participant.objects.get(prolific_pid=walker.pid).pk
        for action in ("approve", "reject"):
            form = {"action": action, "row": f"{row}:", "category": "LOW_EFFORT", "message": A_REASON}
            html = experimenter.post(page_of(questionnaire_study), form, follow=True).content.decode()
            assert "None of the selected rows has a submission on Prolific" in html, action
            assert "Approved" not in html and "one at a time" not in html.split("messagelist")[1][:300]

    def test_approving_from_the_page(self, fake: FakeProlific, experimenter, questionnaire_study):
        walkers = [on_prolific(fake, questionnaire_study) for _ in range(2)]
        for walker in walkers:
            walker.walk(answers={"Page two": {"check_1": "Disagree"}})
            fake.submission_set(submission_of(fake, walker)["id"], "AWAITING_REVIEW")
        experimenter.post(page_of(questionnaire_study), {"action": "sync"})
        rows = [f"{r.participant_id}:{r.pk}" for r in ProlificSubmission.objects.all()]
        html = experimenter.post(
            page_of(questionnaire_study), {"action": "approve", "row": rows}, follow=True
        )
        assert "Approved 2 submission(s) on Prolific." in html.content.decode()
        assert all(submission_of(fake, w)["status"] == "APPROVED" for w in walkers)

    def test_someone_who_may_only_look_cannot_act(self, fake: FakeProlific, questionnaire_study, db):
        from django.contrib.auth.models import Permission, User

        from tests.support.cast import logged_in

        viewer = User.objects.create_user("viewer", is_staff=True)
        viewer.user_permissions.add(Permission.objects.get(codename="view_participant"))
        client = logged_in(viewer)
        assert client.get(page_of(questionnaire_study)).status_code == 200
        assert client.post(page_of(questionnaire_study), {"action": "sync"}).status_code == 403
        assert fake.requests == [] and not Bonus.objects.exists()


@pytest.mark.django_db
def test_the_prolific_page_says_how_many_places_a_pairwise_study_takes(experimenter):
    """A fourth annotator of a set with places for three did the first pages, then read that
    the study was full; nothing in the admin turned the set into places to post (the researcher walk)."""
    from debates.demo import loader
    from debates.models import InstanceSet

    study = loader.pairs_study()
    Study.objects.filter(pk=study.pk).update(prolific_study_id="")
    pool = InstanceSet.objects.get()
    per_annotator = study.steps.get(kind="pairwise").config["per_annotator"]
    annotations = pool.instances.count() * pool.annotations_per_instance
    needed = -(-annotations // per_annotator)
    html = experimenter.get(page_of(study)).content.decode()
    assert f"<td>{needed} participants complete the study's content" in html
    assert f"= {annotations}, {per_annotator} per participant" in html
    assert f'name="places" value="{needed}"' in html  # the draft's places, filled in
    questionnaire = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", status="draft")
    assert (
        "participants complete the study's content"
        not in experimenter.get(page_of(questionnaire)).content.decode()
    )
