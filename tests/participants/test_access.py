"""Who may see what: the admin needs a staff login with permissions; a participant sees and
changes only their own current step."""

import pytest
from django.test import Client

from debates.models import InstanceSet
from participants.models import Participant
from tests.support.cast import Walker


@pytest.mark.django_db
class TestAccess:
    @pytest.mark.parametrize(
        "path",
        [
            "/admin/",
            "/admin/debates/case/import/",
            "/admin/studies/study/1/overview/",
            "/admin/studies/study/1/export/participants.csv",
        ],
    )
    def test_admin_pages_need_a_staff_login(self, questionnaire_study, path, outsider):
        for client in (Client(), outsider):
            response = client.get(path)
            assert response.status_code == 302 and "/admin/login/" in response["Location"]

    def test_staff_without_permissions_see_no_study_data(self, pairs_study, staff_without_permissions):
        Walker(pairs_study).enter()
        pool = InstanceSet.objects.get()
        for path in [
            f"/admin/studies/study/{pairs_study.pk}/overview/",
            f"/admin/studies/study/{pairs_study.pk}/export/participants.csv",
            "/admin/studies/study/export/codebook.csv",
            f"/admin/debates/instanceset/{pool.pk}/ranking/",
            f"/admin/debates/instanceset/{pool.pk}/export.csv",
            "/admin/participants/participant/",
        ]:
            response = staff_without_permissions.get(path)
            assert response.status_code in (403, 404), path
        for path in ["/admin/debates/case/import/", "/admin/debates/claim/import/"]:
            response = staff_without_permissions.post(path, {})
            assert response.status_code in (302, 403) and "import" not in response.get("Location", ""), path

    def test_a_participant_sees_only_their_own_pages(self, questionnaire_study):
        a, b = Walker(questionnaire_study), Walker(questionnaire_study)
        a.enter()
        b.enter()
        a.submit()
        assert a.url != b.url
        assert b.page()[1].title == "Consent"
        # Posting to one's own token cannot touch anyone else's row.
        assert Participant.objects.get(prolific_pid=b.pid).position == 1
