"""Watching participants in the admin: by status and step, their free text escaped, their
exclusions reversible."""

import pytest
from django.utils import timezone

from participants.models import Exclusion, Participant
from tests.support.cast import Walker


@pytest.mark.django_db
class TestWatchingAStudy:
    def test_participants_are_listed_by_status_and_step(self, experimenter, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.submit()
        page = experimenter.get(
            f"/admin/participants/participant/?study__id__exact={questionnaire_study.pk}&position=2"
        ).content.decode()
        assert w.pid in page and "2. Page one" in page
        # The study by its slug (the title on hover, escaped): the list fits a laptop's width.
        questionnaire_study.title = 'Pay <b>"now"</b>'
        questionnaire_study.save()
        page = experimenter.get("/admin/participants/participant/").content.decode()
        slug = questionnaire_study.slug
        assert f'<span title="Pay &lt;b&gt;&quot;now&quot;&lt;/b&gt;">{slug}</span>' in page
        assert "<b>" not in page.split('id="result_list"')[1]
        # Short headings, times on one line ('12-05 07:20'): the list fits 1280 px.
        listed = page.split('id="result_list"')[1]
        assert "Failed checks" in listed and ">Pilot<" in listed and "Attention failures" not in listed
        started = timezone.localtime(Participant.objects.get(prolific_pid=w.pid).started_at)
        assert f'<td class="field-started">{started:%m-%d %H:%M}</td>' in listed
        # Excluded and pilot in words: a green tick for "excluded" read as "fine" (the researcher
        # walk). The step filter waits for a study (it offered "Step 15" for any); previews are
        # a choice of "pilot / real", not a filter "By is preview".
        assert '<td class="field-excluded_text">—</td>' in listed and "icon-no.svg" not in listed
        assert '<td class="field-pilot">—</td>' in listed
        filters = page.split('id="changelist-filter"')[1]
        assert "current step" not in filters and "is preview" not in filters
        assert "Previews (staff walking the study)" in filters
        chosen = experimenter.get(
            f"/admin/participants/participant/?study__id__exact={questionnaire_study.pk}"
        ).content.decode()
        assert "By current step" in chosen and "2. Page one" in chosen.split('id="changelist-filter"')[1]
        Participant.objects.filter(prolific_pid=w.pid).update(excluded=True)
        page = experimenter.get("/admin/participants/participant/?excluded__exact=1").content.decode()
        assert '<td class="field-excluded_text">excluded</td>' in page

    def test_participant_free_text_is_escaped_in_the_admin(self, experimenter, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.walk(
            answers={
                "Page three": {"why": "<script>alert('x')</script> because"},
                "Page two": {"check_1": "Disagree"},
            }
        )
        p = Participant.objects.get(prolific_pid=w.pid)
        html = experimenter.get(f"/admin/participants/participant/{p.pk}/change/").content.decode()
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert" in html

    def test_exclusions_are_reversible_from_the_admin(self, experimenter, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.walk(answers={"Page two": {"check_1": "Agree"}})
        exclusion = Exclusion.objects.get()
        experimenter.post(
            "/admin/participants/exclusion/", {"action": "revoke", "_selected_action": [exclusion.pk]}
        )
        exclusion.refresh_from_db()
        assert exclusion.revoked_at is not None
        assert not Participant.objects.get(prolific_pid=w.pid).excluded
        experimenter.post(
            "/admin/participants/exclusion/", {"action": "reinstate", "_selected_action": [exclusion.pk]}
        )
        assert Participant.objects.get(prolific_pid=w.pid).excluded
        assert Exclusion.objects.filter(revoked_at__isnull=True).count() == 1
