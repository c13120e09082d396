"""Pilot participants at the study link: a signed pilot token (made with the server's
SECRET_KEY) marks them, lets them into a draft study and never takes a real participant's
place; a forged, tampered, another study's or expired token is refused like a bad link; the
exports, the overview and reports leave pilots out, and a pilot's report reads them only."""

from urllib.parse import quote

import pytest
from django.core import signing
from django.test import Client
from django.utils import timezone

from analysis.exports import TABLES, csv_lines
from analysis.exports.table import pilot_data
from analysis.overview import study_overview
from participants import services
from participants.models import Participant
from participants.places import holds_place_q
from studies.models import Study
from tests.support.cast import entry_url, pid


def pilot_url(study: Study, token: str, prolific_pid: str | None = None) -> str:
    return f"{entry_url(study, prolific_pid)}&pilot={quote(token)}"


def participants_exported(study: Study) -> list[str]:
    lines = list(csv_lines(TABLES["participants"], study))
    header = lines[0].strip().split(",")
    column = header.index("prolific_pid")
    return [line.strip().split(",")[column] for line in lines[1:]]


@pytest.mark.django_db
class TestPilotToken:
    def test_a_valid_token_makes_a_pilot_that_holds_no_place_and_leaves_the_study_open(
        self, questionnaire_study
    ):
        token = services.pilot_token(questionnaire_study)
        response = Client().get(pilot_url(questionnaire_study, token))
        assert response.status_code == 302
        pilot = Participant.objects.get(study=questionnaire_study)
        assert pilot.is_pilot and not pilot.is_preview
        assert response["Location"] == f"/p/{pilot.token}/"
        questionnaire_study.refresh_from_db()
        assert questionnaire_study.entered_at is None  # a pilot is not a real participant entering
        now = timezone.now()
        assert not Participant.objects.filter(holds_place_q(now, ""), pk=pilot.pk).exists()
        real = Client().get(entry_url(questionnaire_study))
        assert real.status_code == 302
        assert Participant.objects.filter(holds_place_q(now, ""), is_pilot=False).count() == 1

    def test_a_pilot_may_enter_a_draft_study_but_nobody_else_may(self, questionnaire_study):
        Study.objects.filter(pk=questionnaire_study.pk).update(status=Study.Status.DRAFT)
        questionnaire_study.refresh_from_db()
        refused = Client().get(entry_url(questionnaire_study))
        assert refused.status_code == 400
        assert b"not accepting participants" in refused.content
        admitted = Client().get(pilot_url(questionnaire_study, services.pilot_token(questionnaire_study)))
        assert admitted.status_code == 302
        assert list(Participant.objects.values_list("is_pilot", flat=True)) == [True]

    @pytest.mark.parametrize("forge", ["made_up", "tampered", "other_study", "other_key", "expired"])
    def test_a_forged_or_expired_token_is_refused_like_a_bad_link(
        self, questionnaire_study, forge, monkeypatch
    ):
        token = services.pilot_token(questionnaire_study)
        if forge == "made_up":
            token = "1:questionnaire:abc"
        elif forge == "tampered":
            study_pk, rest = token.split(":", 1)  # "pk:slug:timestamp:signature": another study's pk
            token = f"{int(study_pk) + 1}:{rest}"
        elif forge == "other_study":
            other = Study.objects.create(slug="another-study", title="Another")
            token = services.pilot_token(other)
        elif forge == "other_key":
            token = signing.TimestampSigner(key="x" * 50, salt=services.PILOT_SALT).sign(
                f"{questionnaire_study.pk}:{questionnaire_study.slug}"
            )
        else:
            monkeypatch.setattr(services, "PILOT_TOKEN_MAX_AGE", -1)  # every token is past its age
        response = Client().get(pilot_url(questionnaire_study, token))
        assert response.status_code == 400
        assert b"This link is not valid" in response.content
        assert not Participant.objects.exists()

    def test_a_pilot_link_never_resumes_a_real_participant(self, questionnaire_study):
        prolific_pid = pid()
        Client().get(entry_url(questionnaire_study, prolific_pid))
        token = services.pilot_token(questionnaire_study)
        response = Client().get(pilot_url(questionnaire_study, token, prolific_pid))
        assert response.status_code == 400
        assert Participant.objects.get().is_pilot is False


@pytest.mark.django_db
def test_exports_and_the_overview_leave_pilots_out_and_a_pilots_report_reads_only_them(questionnaire_study):
    real_pid, pilot_pid = pid(), pid()
    Client().get(entry_url(questionnaire_study, real_pid))
    Client().get(pilot_url(questionnaire_study, services.pilot_token(questionnaire_study), pilot_pid))
    assert participants_exported(questionnaire_study) == [real_pid]
    overview = study_overview(questionnaire_study)
    assert sum(step["active"] for step in overview["steps"]) == 1
    with pilot_data():
        assert participants_exported(questionnaire_study) == [pilot_pid]
    pilot = Participant.objects.get(prolific_pid=pilot_pid)
    with pilot_data([pilot.pk + 1000]):  # another run's pilots: none of these
        assert participants_exported(questionnaire_study) == []
    assert participants_exported(questionnaire_study) == [real_pid]  # the switch is off again
