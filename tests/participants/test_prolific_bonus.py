"""Bonuses: Prolific's pay call is not idempotent, so Rostrum records a bonus before sending it
and sends it at most once, whatever happens: a double click, a lost answer, a crash between
"sending" and "sent" (settled by looking at Prolific's side, never by paying again). Our fake
Prolific counts its pay calls, so each test asserts exactly one.

These tests commit (transaction=True): the claim must be committed before Prolific is called."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from devtools.fakeprolific import FakeProlific
from participants import prolific_review
from participants.models import Bonus
from participants.tasks import prolific_sync
from tests.participants.prolific_support import (  # noqa: F401
    fake_fixture,
    paid_fixture,
    prolific_server_fixture,
)
from tests.support.threads import pool_size, run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def record(participant, cents: int = 150, key: str = "form-1", reason: str = "Thanks") -> Bonus:
    return prolific_review.bonus_record(participant=participant, amount_cents=cents, reason=reason, key=key)


def test_a_bonus_is_recorded_before_it_is_sent_and_sent_once(fake: FakeProlific, paid):
    bonus = record(paid)
    assert bonus.state == Bonus.State.RECORDED and fake.pays() == 0
    bonus = prolific_review.bonus_send(bonus=bonus)
    assert bonus.state == Bonus.State.SENT and fake.pays() == 1
    assert fake.submissions[paid.prolific_session_id]["bonus_payments"] == [150]
    assert prolific_review.bonus_send(bonus=bonus).state == Bonus.State.SENT and fake.pays() == 1


def test_a_double_click_records_one_bonus_and_pays_it_once(fake: FakeProlific, paid, experimenter):
    url = f"/admin/studies/study/{paid.study_id}/prolific/"
    form = {
        "action": "bonus",
        "key": "the-form-key",
        "amount": "1.50",
        "reason": "Thanks",
        "row": f"{paid.pk}:",
    }
    first, second = experimenter.post(url, form), experimenter.post(url, form)
    assert first.status_code == second.status_code == 302
    assert Bonus.objects.count() == 1 and Bonus.objects.get().state == Bonus.State.SENT
    assert fake.pays() == 1


def test_a_crash_between_sending_and_sent_is_settled_on_prolifics_side_without_paying_again(
    fake: FakeProlific, paid
):
    fake.script("POST", r"/pay/$", drop=True)  # Prolific pays; the answer never arrives
    bonus = prolific_review.bonus_send(bonus=record(paid))
    assert bonus.state == Bonus.State.SENDING and "outcome unknown" in bonus.error and fake.pays() == 1
    assert prolific_review.bonus_send(bonus=bonus).state == Bonus.State.SENDING  # a second click: nothing
    assert prolific_review.bonus_resolve(bonus=bonus).state == Bonus.State.SENT
    assert fake.pays() == 1


def test_a_crash_before_the_pay_call_is_settled_as_not_paid_then_sent_once(fake: FakeProlific, paid):
    bonus = record(paid)
    # What a process killed right after its claim leaves behind: claimed, Prolific never called.
    Bonus.objects.filter(pk=bonus.pk).update(state=Bonus.State.SENDING, sending_at=timezone.now())
    assert prolific_review.bonus_send(bonus=bonus).state == Bonus.State.SENDING and fake.pays() == 0
    bonus = prolific_review.bonus_resolve(bonus=bonus)
    assert bonus.state == Bonus.State.FAILED and "never made" in bonus.error
    assert prolific_review.bonus_retry(bonus=bonus).state == Bonus.State.SENT
    assert fake.pays() == 1


def test_an_unknown_outcome_not_seen_on_prolific_fails_only_after_the_settle_time(
    fake: FakeProlific, paid, settings
):
    fake.script("POST", r"/pay/$", status=502)  # an error page: did it pay? (here: no)
    bonus = prolific_review.bonus_send(bonus=record(paid))
    assert bonus.state == Bonus.State.SENDING and fake.pays() == 0
    assert prolific_review.bonus_resolve(bonus=bonus).state == Bonus.State.SENDING  # Prolific may be slow
    later = timezone.now() + timedelta(minutes=settings.PROLIFIC_BONUS_SETTLE_MINUTES + 1)
    assert prolific_review.bonus_resolve(bonus=bonus, now=later).state == Bonus.State.FAILED
    assert prolific_review.bonus_retry(bonus=bonus).state == Bonus.State.SENT
    assert fake.pays() == 1


def test_the_periodic_task_settles_a_bonus_left_sending(fake: FakeProlific, paid):
    fake.script("POST", r"/pay/$", drop=True)
    bonus = prolific_review.bonus_send(bonus=record(paid))
    Bonus.objects.filter(pk=bonus.pk).update(sending_at=timezone.now() - timedelta(minutes=2))
    prolific_sync()
    bonus.refresh_from_db()
    assert bonus.state == Bonus.State.SENT and fake.pays() == 1


def test_a_refused_bonus_fails_unpaid_and_can_be_sent_again(fake: FakeProlific, paid):
    fake.script("POST", r"/bonus-payments/$", status=400)
    bonus = prolific_review.bonus_send(bonus=record(paid))
    assert bonus.state == Bonus.State.FAILED and fake.pays() == 0
    assert prolific_review.bonus_retry(bonus=bonus).state == Bonus.State.SENT and fake.pays() == 1


def test_one_participants_bonuses_are_sent_one_at_a_time(fake: FakeProlific, paid):
    fake.script("POST", r"/pay/$", drop=True)
    prolific_review.bonus_send(bonus=record(paid, key="first"))
    with pytest.raises(prolific_review.BonusBusy):
        prolific_review.bonus_send(bonus=record(paid, key="second", reason="A second bonus"))
    assert fake.pays() == 1 and Bonus.objects.get(request_key="second").state == Bonus.State.RECORDED


def test_an_amount_outside_the_limits_is_refused(paid, settings):
    with pytest.raises(ValidationError, match="at least 1 cent"):
        record(paid, cents=0)
    with pytest.raises(ValidationError, match="at most 50.00"):
        record(paid, cents=settings.PROLIFIC_BONUS_MAX_CENTS + 1)
    assert prolific_review.amount_cents("1.5") == 150 and prolific_review.amount_cents("2") == 200


def test_sending_inside_a_transaction_is_refused(fake: FakeProlific, paid):
    bonus = record(paid)
    with pytest.raises(RuntimeError, match="outside a transaction"), transaction.atomic():
        prolific_review.bonus_send(bonus=bonus)
    assert fake.pays() == 0


@pytest.mark.postgres
def test_many_clicks_at_once_pay_once(fake: FakeProlific, paid):
    bonus = record(paid)
    with pool_size(12):
        errors = run_threads(lambda n: prolific_review.bonus_send(bonus=Bonus.objects.get(pk=bonus.pk)), 8)
    assert errors == [] and fake.pays() == 1
    assert Bonus.objects.get(pk=bonus.pk).state == Bonus.State.SENT
