"""The study link: creating and resuming participants, clear pages for bad links, previews."""

import pytest
from django.test import Client

from participants.models import Participant
from studies.models import Study
from studies.services import study_set_status
from tests.support.cast import Walker, entry_url, pid


@pytest.mark.django_db
class TestStudyLink:
    def test_it_creates_a_participant_and_sends_them_to_their_step_page(self, questionnaire_study):
        prolific_pid = pid()
        response = Client().get(entry_url(questionnaire_study, prolific_pid))
        participant = Participant.objects.get(prolific_pid=prolific_pid)
        assert response.status_code == 302
        assert response["Location"] == f"/p/{participant.token}/"
        assert participant.status == Participant.Status.ACTIVE
        assert participant.position == 1
        assert participant.prolific_study_id == "a" * 24
        assert len(participant.prolific_session_id) == 24

    def test_it_resumes_the_same_participant_on_a_second_visit(self, questionnaire_study):
        walker = Walker(questionnaire_study)
        walker.enter()
        walker.submit()  # consent
        again = Client().get(entry_url(questionnaire_study, walker.pid))
        assert again["Location"] == walker.url
        participant = Participant.objects.get(prolific_pid=walker.pid)
        assert participant.position == 2
        assert participant.visits == 2
        assert Participant.objects.filter(study=questionnaire_study).count() == 1

    def test_a_visit_with_a_new_session_id_keeps_a_finished_submissions_id(self, questionnaire_study):
        """A participant who reopened their link after completing, with another SESSION_ID, had the
        completed submission's id overwritten: Prolific's review and sync lost their submission
        (the researcher walk). While in progress, a new SESSION_ID is a new submission after a
        return, and is kept."""
        walker = Walker(questionnaire_study)
        walker.enter()
        first = Participant.objects.get(prolific_pid=walker.pid).prolific_session_id
        Client().get(entry_url(questionnaire_study, walker.pid))  # in progress: a new submission
        second = Participant.objects.get(prolific_pid=walker.pid).prolific_session_id
        assert second != first
        walker.walk()
        participant = Participant.objects.get(prolific_pid=walker.pid)
        assert participant.status == Participant.Status.COMPLETED
        again = Client().get(entry_url(questionnaire_study, walker.pid))
        assert again.status_code == 302
        participant.refresh_from_db()
        assert participant.prolific_session_id == second and participant.visits == 3

    def test_a_session_id_another_participant_holds_stays_theirs(self, questionnaire_study):
        """Re-entering with someone else's SESSION_ID gave two participants one submission (the
        hostile-traffic probe)."""
        first, other = Walker(questionnaire_study), Walker(questionnaire_study)
        first.enter()
        other.enter()
        held = Participant.objects.get(prolific_pid=first.pid).prolific_session_id
        own = Participant.objects.get(prolific_pid=other.pid).prolific_session_id
        link = (
            f"/s/{questionnaire_study.slug}/?PROLIFIC_PID={other.pid}&STUDY_ID={'a' * 24}&SESSION_ID={held}"
        )
        assert Client().get(link)["Location"] == other.url  # they come back to their own page
        assert Participant.objects.get(prolific_pid=other.pid).prolific_session_id == own

    def test_pids_are_compared_without_regard_to_case(self, questionnaire_study):
        prolific_pid = pid()
        first = Client().get(entry_url(questionnaire_study, prolific_pid))
        second = Client().get(entry_url(questionnaire_study, prolific_pid.upper()))
        assert first["Location"] == second["Location"]

    @pytest.mark.parametrize(
        "query, message",
        [
            ("", "missing PROLIFIC_PID"),
            (
                "?PROLIFIC_PID=abc&STUDY_ID=" + "a" * 24 + "&SESSION_ID=" + "b" * 24,
                "does not look like a Prolific id",
            ),
            ("?PROLIFIC_PID=" + "c" * 24 + "&SESSION_ID=" + "b" * 24, "missing STUDY_ID"),
            ("?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID=x&SESSION_ID=y", "does not look like a Prolific id"),
        ],
    )
    def test_missing_or_malformed_parameters_get_a_clear_page(self, questionnaire_study, query, message):
        response = Client().get(f"/s/{questionnaire_study.slug}/{query}")
        assert response.status_code == 400
        assert message in response.content.decode()
        assert "go back to Prolific and open the study link again" in response.content.decode()
        assert not Participant.objects.exists()

    def test_a_link_for_another_prolific_study_is_refused(self, questionnaire_study):
        Study.objects.filter(pk=questionnaire_study.pk).update(prolific_study_id="f" * 24)
        response = Client().get(entry_url(questionnaire_study))
        assert response.status_code == 400
        assert "different Prolific study" in response.content.decode()

    def test_an_unknown_study_is_a_404(self, db):
        assert Client().get(f"/s/nope/?PROLIFIC_PID={pid()}").status_code == 404

    def test_a_head_request_on_the_study_link_answers_and_enters_nobody(self, questionnaire_study):
        """Link checkers ask with HEAD: it was a 405 (read as a broken link)."""
        response = Client().head(entry_url(questionnaire_study))
        assert response.status_code == 200 and response.content == b""
        assert response["Cache-Control"] == "no-store, max-age=0"
        assert not Participant.objects.exists()
        assert Client().head(f"/s/nope/?PROLIFIC_PID={pid()}").status_code == 404

    @pytest.mark.parametrize("status", ["draft", "paused", "closed"])
    def test_a_study_that_is_not_live_accepts_nobody_new(self, questionnaire_study, status):
        Study.objects.filter(pk=questionnaire_study.pk).update(status=status)
        response = Client().get(entry_url(questionnaire_study))
        assert response.status_code == 400
        assert "not accepting participants" in response.content.decode()

    def test_participants_already_in_a_paused_study_can_finish(self, questionnaire_study, settings):
        settings.STUDY_CACHE_SECONDS = 0
        walker = Walker(questionnaire_study)
        walker.enter()
        Study.objects.filter(pk=questionnaire_study.pk).update(status="paused")
        walker.enter()  # the study link itself still resumes them
        walker.walk()
        assert walker.exit_url.endswith("cc=CDONE")

    def test_an_unknown_token_is_a_404(self, questionnaire_study):
        assert Client().get("/p/not-a-token/").status_code == 404

    def test_tokens_are_long_and_random(self, questionnaire_study):
        for _ in range(20):
            Client().get(entry_url(questionnaire_study))
        tokens = set(Participant.objects.values_list("token", flat=True))
        assert len(tokens) == 20
        assert all(len(t) >= 43 for t in tokens)


@pytest.mark.django_db
class TestPreview:
    def test_preview_needs_a_staff_login(self, questionnaire_study):
        response = Client().get(f"/s/{questionnaire_study.slug}/preview/")
        assert response.status_code == 302
        assert "/admin/login/" in response["Location"]
        assert not Participant.objects.exists()

    def test_staff_who_may_not_see_studies_are_refused_and_nothing_is_made(
        self, questionnaire_study, staff_without_permissions
    ):
        """Any staff account could walk any study (and spend live debates' model calls) through
        this link, while the admin's own preview page asks for the permission to see studies
        (the hostile-traffic probe)."""
        response = staff_without_permissions.get(f"/s/{questionnaire_study.slug}/preview/")
        assert response.status_code == 403
        assert not Participant.objects.exists()

    def test_staff_can_walk_a_draft_study_without_counting(self, questionnaire_study, experimenter):
        study_set_status(study=questionnaire_study, status="draft")
        client = experimenter
        response = client.get(f"/s/{questionnaire_study.slug}/preview/")
        participant = Participant.objects.get()
        assert participant.is_preview
        walker = Walker(questionnaire_study, client=client)
        walker.url = response["Location"]
        walker.walk()
        # No redirect to Prolific: the finished page shows where it would have gone.
        page = client.get(walker.url).content.decode()
        assert "Preview" in page and "cc=CDONE" in page
        assert not walker.exit_url
        questionnaire_study.refresh_from_db()
        assert questionnaire_study.locked_at is None  # previews never freeze the design
