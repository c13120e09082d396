"""A manual exclusion asks for its reason first, and keeps it with the exclusion
(participants/admin_exclusions.py, the body of the participants admin's action)."""

from __future__ import annotations

import inspect

import pytest
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.test import RequestFactory

from participants.admin_exclusions import exclude_with_reason
from participants.models import Exclusion, Participant
from tests.support.cast import Walker, experimenter_user

CHANGELIST = "/admin/participants/participant/"


def action_request(user, data: dict):
    request = RequestFactory().post(CHANGELIST, data)
    request.user = user
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


@pytest.fixture
def two_participants(questionnaire_study) -> list[Participant]:
    for _ in range(2):
        Walker(questionnaire_study).enter()
    return list(Participant.objects.filter(study=questionnaire_study))


@pytest.mark.django_db
class TestExclusionReason:
    def test_the_action_first_asks_why_and_excludes_no_one(self, two_participants):
        user = experimenter_user()
        ids = [str(p.pk) for p in two_participants]
        data = {"action": "exclude_manually", ACTION_CHECKBOX_NAME: ids}
        queryset = Participant.objects.filter(pk__in=ids)
        response = exclude_with_reason(
            admin.site._registry[Participant], action_request(user, data), queryset
        )
        html = response.render().content.decode()
        assert "Why are they excluded from analysis?" in html and 'name="reason"' in html
        assert 'name="action" value="exclude_manually"' in html and 'name="confirm" value="yes"' in html
        for p in two_participants:
            assert f'name="{ACTION_CHECKBOX_NAME}" value="{p.pk}"' in html and p.prolific_pid in html
        assert not Exclusion.objects.exists()

    def test_an_empty_reason_is_refused(self, two_participants):
        user = experimenter_user()
        data = {"action": "exclude_manually", "confirm": "yes", "reason": "  "}
        queryset = Participant.objects.filter(pk=two_participants[0].pk)
        response = exclude_with_reason(
            admin.site._registry[Participant], action_request(user, data), queryset
        )
        assert "This field is required." in response.render().content.decode()
        assert not Exclusion.objects.exists()

    def test_the_reason_is_kept_with_each_exclusion(self, two_participants):
        user = experimenter_user()
        reason = "Answered every free-text item with the same pasted text."
        data = {"action": "exclude_manually", "confirm": "yes", "reason": reason}
        queryset = Participant.objects.filter(pk__in=[p.pk for p in two_participants])
        assert (
            exclude_with_reason(admin.site._registry[Participant], action_request(user, data), queryset)
            is None
        )
        rows = Exclusion.objects.filter(reason=Exclusion.Reason.MANUAL)
        assert sorted(rows.values_list("detail", "created_by")) == [(reason, user.pk)] * 2
        assert Participant.objects.filter(excluded=True).count() == 2


WIRED = "exclude_with_reason" in inspect.getsource(type(admin.site._registry[Participant]).exclude_manually)


@pytest.mark.django_db
@pytest.mark.skipif(
    not WIRED, reason="waiting for participants/admin.py's action to call exclude_with_reason"
)
def test_the_participants_list_action_asks_for_the_reason(experimenter, two_participants):
    ids = [str(p.pk) for p in two_participants]
    page = experimenter.post(CHANGELIST, {"action": "exclude_manually", ACTION_CHECKBOX_NAME: ids})
    assert page.status_code == 200 and "Why are they excluded from analysis?" in page.content.decode()
    assert not Exclusion.objects.exists()
    data = {
        "action": "exclude_manually",
        ACTION_CHECKBOX_NAME: ids,
        "confirm": "yes",
        "reason": "Bot-like answers.",
    }
    assert experimenter.post(CHANGELIST, data).status_code == 302
    assert set(Exclusion.objects.values_list("detail", flat=True)) == {"Bot-like answers."}
