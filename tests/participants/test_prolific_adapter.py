"""The adapter to Prolific's API against our fake Prolific on loopback: the token, JSON, pages,
and its one error type, which says whether retrying can help and whether a call may have taken
effect; 429 waits as Retry-After says; a call that pays is never repeated on an unknown outcome."""

import logging

import pytest

from devtools.fakeprolific import FakeProlific
from participants import prolific
from participants.prolific import Client, ProlificError
from tests.participants.prolific_support import fake_fixture, prolific_server_fixture  # noqa: F401
from tests.support.servers import free_port


def a_study_body(**changes) -> dict:
    body = {
        "name": "A study",
        "internal_name": "rostrum test",
        "description": "Read a debate and judge it.",
        "external_study_url": "https://example.org/s/x/?PROLIFIC_PID={{%PROLIFIC_PID%}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {"code": "CDONE", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
        ],
        "total_available_places": 10,
        "estimated_completion_time": 10,
        "maximum_allowed_time": 19,
        "reward": 250,
    }
    return {**body, **changes}


class TestCalls:
    def test_it_sends_the_token_and_reads_prolifics_answer(self, fake: FakeProlific):
        created = Client().study_create(a_study_body())
        assert created["status"] == "UNPUBLISHED" and created["id"] in fake.studies
        assert fake.headers_seen[-1]["authorization"] == f"Token {fake.token}"

    def test_it_reads_every_page_of_a_list(self, fake: FakeProlific):
        fake.page_size = 2
        study = fake.study_add()
        for _ in range(5):
            fake.submission_add(study["id"])
        assert len(Client().submissions(study["id"])) == 5
        assert sum(1 for _, path in fake.requests if path.endswith("/submissions/")) == 3

    def test_it_never_follows_a_next_page_to_another_host(self, fake: FakeProlific):
        fake.page_size = 1
        study = fake.study_add()
        fake.submission_add(study["id"])
        fake.submission_add(study["id"])
        fake.base = "http://elsewhere.example"
        with pytest.raises(ProlificError) as error:
            Client().submissions(study["id"])
        assert error.value.kind == "malformed" and not error.value.retryable

    def test_statuses_are_read_in_any_of_prolifics_spellings(self):
        assert (
            prolific.status_key("AWAITING REVIEW")
            == prolific.status_key("AWAITING_REVIEW")
            == "AWAITING_REVIEW"
        )
        assert prolific.status_key("TIMED-OUT") == "TIMED_OUT"
        assert prolific.status_key("partially approved") == "PARTIALLY_APPROVED"
        assert prolific.status_key("SOMETHING NEW") == "UNKNOWN"


class TestErrors:
    def test_a_429_waits_as_retry_after_says_then_goes_on(self, fake: FakeProlific):
        fake.script("POST", r"^/studies/$", status=429, retry_after="1")
        api = Client()
        created = api.study_create(a_study_body())
        assert created["id"] in fake.studies and len(fake.studies) == 1
        assert api.waits == [1.0]

    def test_a_429_that_lasts_gives_a_retryable_error_after_the_retries(self, fake: FakeProlific):
        fake.script("GET", r"^/studies/", status=429, retry_after="0", times=10)
        with pytest.raises(ProlificError) as error:
            Client().studies()
        assert error.value.kind == "rate_limited" and error.value.retryable and error.value.status == 429
        assert error.value.retry_after == 0 and len(fake.requests) == 3  # PROLIFIC_MAX_RETRIES = 2

    def test_a_validation_error_names_the_fields_and_is_not_retried(self, fake: FakeProlific):
        with pytest.raises(ProlificError) as error:
            Client().study_create(a_study_body(description="", maximum_allowed_time=12))
        assert error.value.kind == "invalid" and not error.value.retryable and not error.value.maybe_done
        assert set(error.value.detail) == {"description", "maximum_allowed_time"}
        assert "description" in error.value.message and len(fake.requests) == 1

    def test_a_wrong_token_is_refused_and_never_shown(self, fake: FakeProlific, caplog):
        caplog.set_level(logging.DEBUG)
        with pytest.raises(ProlificError) as error:
            Client(token="a-wrong-secret-token").studies()
        assert error.value.kind == "unauthorized" and not error.value.retryable
        assert "a-wrong-secret-token" not in str(error.value) + repr(Client(token="a-wrong-secret-token"))
        assert "a-wrong-secret-token" not in caplog.text

    def test_the_token_is_never_logged_while_retrying(self, fake: FakeProlific, caplog):
        caplog.set_level(logging.DEBUG)
        fake.script("GET", r"^/studies/", status=503, times=1)
        fake.script("GET", r"^/studies/", status=429, retry_after="0", times=1)
        Client().studies()
        assert "retrying" in caplog.text and fake.token not in caplog.text

    def test_without_a_token_nothing_is_sent(self, fake: FakeProlific, settings):
        settings.PROLIFIC_API_TOKEN = ""
        with pytest.raises(ProlificError) as error:
            Client()
        assert error.value.kind == "not_configured" and "PROLIFIC_API_TOKEN" in str(error.value)
        assert fake.requests == []

    def test_an_unreachable_prolific_is_a_retryable_error_that_did_nothing(self, settings):
        settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_MAX_RETRIES = "token", 0
        with pytest.raises(ProlificError) as error:
            Client(base_url=f"http://127.0.0.1:{free_port()}/api/v1").studies()
        assert error.value.kind == "connection" and error.value.retryable and not error.value.maybe_done


class TestPayingIsNotRepeated:
    def setup_bulk(self, fake: FakeProlific) -> str:
        study = fake.study_add()
        submission = fake.submission_add(study["id"], status="APPROVED")
        return Client().bonus_setup(study["id"], [(submission["participant_id"], 150)])["id"]

    def test_a_lost_answer_to_a_pay_call_is_an_unknown_outcome_and_no_retry(self, fake: FakeProlific):
        bulk = self.setup_bulk(fake)
        fake.script("POST", r"/pay/$", drop=True)
        with pytest.raises(ProlificError) as error:
            Client().bonus_pay(bulk)
        assert error.value.maybe_done and fake.pay_calls[bulk] == 1

    def test_a_server_error_on_a_pay_call_is_not_retried(self, fake: FakeProlific):
        bulk = self.setup_bulk(fake)
        fake.script("POST", r"/pay/$", status=502)
        with pytest.raises(ProlificError) as error:
            Client().bonus_pay(bulk)
        assert error.value.maybe_done and error.value.retryable
        assert [p for _, p in fake.requests].count(f"/bulk-bonus-payments/{bulk}/pay/") == 1

    def test_a_429_on_a_pay_call_is_retried_because_it_did_nothing(self, fake: FakeProlific):
        bulk = self.setup_bulk(fake)
        fake.script("POST", r"/pay/$", status=429, retry_after="0")
        Client().bonus_pay(bulk)
        assert fake.pay_calls[bulk] == 1
