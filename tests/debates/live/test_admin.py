"""Design B's admin: the claim import, debater configurations with checked prompt
templates, live sessions, the call log, and the claim study's overview."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from debates.models import Claim, DebaterConfig, LiveSession
from tests.support.cast import Walker
from tests.support.live import drain_turns


@pytest.mark.django_db
class TestLiveDebatesAdmin:
    def test_claims_are_imported_from_a_csv_upload(self, experimenter):
        body = (
            b"slug,text,truth,domain,side,source_title,source_excerpt,source_url\n"
            b"tea,Tea dehydrates you.,false,health,false,Fluid balance,Tea counts as fluid.,\n"
        )
        response = experimenter.post(
            "/admin/debates/claim/import/", {"file": SimpleUploadedFile("claims.csv", body)}, follow=True
        )
        assert "Imported: claims: 1 new" in response.content.decode()
        assert Claim.objects.get().truth is False

    def test_a_nul_byte_in_a_csv_cell_is_listed_as_a_problem_not_a_server_error(self, experimenter):
        """PostgreSQL refuses NUL in text: the clean-looking file failed on writing (a 500)."""
        body = (
            b"slug,text,truth,domain,side,source_title,source_excerpt,source_url\n"
            b"tea,Tea dehydrates\x00 you.,false,health,false,Fluid balance,Tea counts as fluid.,\n"
        )
        response = experimenter.post(
            "/admin/debates/claim/import/", {"file": SimpleUploadedFile("claims.csv", body)}
        )
        assert response.status_code == 200
        assert (
            "line 2, text: a control character (U+0000) is not allowed in text" in response.content.decode()
        )
        assert not Claim.objects.exists()

    def test_a_prompt_template_with_an_unknown_placeholder_is_refused(self, experimenter, db):
        config = DebaterConfig.objects.create(name="draft-debater")  # no running study uses it
        response = experimenter.post(
            f"/admin/debates/debaterconfig/{config.pk}/change/",
            {
                "name": config.name,
                "model": "m",
                "temperature": 0.2,
                "max_tokens": 100,
                "max_words": 50,
                "system_prompt": "You argue {stance} about {claimm}.",
            },
        )
        assert "unknown placeholder {claimm}" in response.content.decode()
        experimenter.post(
            f"/admin/debates/debaterconfig/{config.pk}/change/",
            {
                "name": config.name,
                "model": "m",
                "temperature": 0.2,
                "max_tokens": 100,
                "max_words": 50,
                "system_prompt": "You argue {stance} about {claim}.",
            },
        )
        config.refresh_from_db()
        assert config.template_version == 2  # recorded calls name the version they used

    def test_live_sessions_the_call_log_and_the_overview(self, experimenter, claim_study):
        w = Walker(claim_study)
        w.enter()
        w.walk(stop_before="Claim 1 of 2")
        w.page()
        w.submit({"answer": "true", "confidence": "20"})
        session = LiveSession.objects.get()
        drain_turns(session.pk)
        live = experimenter.get("/admin/debates/livesession/?phase__exact=chat").content.decode()
        assert w.pid in live and "Turn now" in live
        transcript = experimenter.get(f"/admin/debates/livesession/{session.pk}/change/").content.decode()
        assert session.turns.first().text[:40].replace("'", "&#x27;") in transcript
        calls = experimenter.get("/admin/debates/llmcall/").content.decode()
        assert "Totals of the calls listed" in calls and claim_study.slug in calls
        overview = experimenter.get(f"/admin/studies/study/{claim_study.pk}/overview/").content.decode()
        assert "places per group × protocol × claim" in overview and session.claim.slug in overview
        assert "1 conversation in progress now" in overview
