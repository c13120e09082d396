"""A bonus exactly once across two admin tabs: each tab's form has its own key, so the key alone
cannot tell that two forms mean the same bonus. The rule: one bonus per participant and reason
(case and spacing aside; no reason counts as one); another bonus needs another reason. Checked
under a lock on the participant's row inside the transaction that records the bonus, so two tabs
sending at the same moment record one bonus, and our fake Prolific is paid once.

These tests commit (transaction=True): sending needs its claim committed, and the race needs two
connections."""

from __future__ import annotations

import contextlib
import threading

import pytest

from devtools.fakeprolific import FakeProlific
from participants.models import Bonus
from tests.participants.prolific_support import (  # noqa: F401
    fake_fixture,
    on_prolific,
    paid_fixture,
    participant_of,
    prolific_server_fixture,
)
from tests.support.cast import experimenter_user, logged_in
from tests.support.threads import pool_size, run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def tab_form(participant, key: str, amount: str = "1.50", reason: str = "Accuracy bonus") -> dict:
    """What one open review page sends: its own key, the amount and reason typed in it."""
    return {"action": "bonus", "key": key, "amount": amount, "reason": reason, "row": f"{participant.pk}:"}


def url(participant) -> str:
    return f"/admin/studies/study/{participant.study_id}/prolific/"


def test_a_second_tab_with_the_same_reason_records_nothing_and_says_why(fake: FakeProlific, paid):
    tabs = logged_in(experimenter_user("first")), logged_in(experimenter_user("second"))
    tabs[0].post(url(paid), tab_form(paid, "tab-one"))
    page = tabs[1].post(
        url(paid), tab_form(paid, "tab-two", amount="2.00", reason="  accuracy   BONUS"), follow=True
    )
    html = page.content.decode()
    assert "already has a bonus for “Accuracy bonus” (1.50, sent to prolific)" in html
    assert Bonus.objects.count() == 1 and fake.pays() == 1
    assert fake.submissions[paid.prolific_session_id]["bonus_payments"] == [150]


def test_a_different_reason_is_a_different_bonus(fake: FakeProlific, paid, experimenter):
    experimenter.post(url(paid), tab_form(paid, "tab-one", reason="Accuracy bonus"))
    experimenter.post(url(paid), tab_form(paid, "tab-two", amount="0.50", reason="Follow-up question"))
    assert sorted(Bonus.objects.values_list("reason", "state")) == [
        ("Accuracy bonus", Bonus.State.SENT),
        ("Follow-up question", Bonus.State.SENT),
    ]
    assert fake.pays() == 2 and fake.submissions[paid.prolific_session_id]["bonus_payments"] == [150, 50]


def test_one_refused_participant_does_not_stop_the_others_bonuses(fake: FakeProlific, paid, experimenter):
    other = participant_of(on_prolific(fake, paid.study))
    experimenter.post(url(paid), tab_form(paid, "first"))
    both = {**tab_form(paid, "second"), "row": [f"{paid.pk}:", f"{other.pk}:"]}
    html = experimenter.post(url(paid), both, follow=True).content.decode()
    assert "already has a bonus" in html and "1 bonus(es) sent to Prolific" in html
    assert Bonus.objects.filter(participant=other, state=Bonus.State.SENT).count() == 1
    assert fake.pays() == 2


@pytest.mark.postgres
def test_two_tabs_sending_the_same_bonus_at_once_record_and_pay_it_once(
    fake: FakeProlific, paid, monkeypatch
):
    """The race itself: two logged-in tabs (two threads, two database connections) post their
    forms at the same moment, released by a barrier. To make the race certain rather than likely,
    each request, having checked and about to insert its bonus, waits up to two seconds for the
    other to get that far too: without the lock both get there (and two bonuses would be
    recorded); with it the second waits for the first to commit, then finds its bonus."""
    tabs = [logged_in(experimenter_user(f"tab{n}")) for n in range(2)]
    answers = {}
    both_checked = threading.Barrier(2, timeout=2)
    create = Bonus.objects.create

    def create_when_both_checked(**fields):
        with contextlib.suppress(threading.BrokenBarrierError):
            both_checked.wait()
        return create(**fields)

    monkeypatch.setattr(Bonus.objects, "create", create_when_both_checked)

    def post(n: int) -> None:
        answers[n] = tabs[n].post(url(paid), tab_form(paid, f"tab-{n}"), follow=True).content.decode()

    with pool_size(6):
        errors = run_threads(post, 2)
    assert errors == []
    assert Bonus.objects.filter(participant=paid).count() == 1
    assert Bonus.objects.get(participant=paid).state == Bonus.State.SENT
    assert fake.pays() == 1 and fake.submissions[paid.prolific_session_id]["bonus_payments"] == [150]
    assert sum("already has a bonus" in html for html in answers.values()) == 1
