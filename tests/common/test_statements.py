"""common.statements: fixed UPDATE/INSERT statements for the hot writes, on the database the
tests run on (SQLite here, PostgreSQL in the backend phase). What they write must read back
through the ORM exactly as the ORM would have written it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common.statements import Statement, padded
from participants.models import Participant, Response
from tests.support.cast import Walker
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study

pytestmark = pytest.mark.django_db

SERVED = Statement(Participant, sets=["served_at"], where=["pk", "position"], where_null=["served_at"])
ANSWERS = Statement(
    Response,
    insert=[
        "participant",
        "position",
        "step_kind",
        "key",
        "value",
        "value_num",
        "is_check",
        "passed",
        "created_at",
    ],
)


@pytest.fixture
def participant():
    walker = Walker(build_study(QUESTIONNAIRE_STEPS))
    walker.enter()
    person = Participant.objects.get(prolific_pid=walker.pid)
    Participant.objects.filter(pk=person.pk).update(served_at=None)
    return Participant.objects.get(pk=person.pk)


def test_an_update_changes_only_the_rows_its_conditions_name_and_says_how_many(participant):
    when = timezone.now() - timedelta(minutes=3)
    assert SERVED.update([when], [participant.pk, participant.position + 1]) == 0  # another position
    assert SERVED.update([when], [participant.pk, participant.position]) == 1
    assert (
        Participant.objects.get(pk=participant.pk).served_at == when
    )  # an aware datetime, to the microsecond
    assert SERVED.update([timezone.now()], [participant.pk, participant.position]) == 0  # no longer NULL
    assert Participant.objects.get(pk=participant.pk).served_at == when


def test_an_insert_writes_every_row_in_one_statement(participant):
    now = timezone.now()
    rows = [
        (participant.pk, 9, "questionnaire", "a", "x'); DROP TABLE x; --", None, False, None, now),
        (participant.pk, 9, "questionnaire", "b", "7", 7.0, True, True, now),
        (participant.pk, 9, "questionnaire", "c", "ünïcödé", 0.5, True, False, now),
    ]
    with CaptureQueriesContext(connection) as queries:
        ANSWERS.insert_rows(rows)
    assert len(queries) == 1
    stored = {r.key: r for r in Response.objects.filter(participant=participant, position=9)}
    assert stored["a"].value == "x'); DROP TABLE x; --" and stored["a"].value_num is None
    assert (stored["b"].value_num, stored["b"].is_check, stored["b"].passed) == (7.0, True, True)
    assert (stored["c"].value, stored["c"].passed) == ("ünïcödé", False)
    assert {r.created_at for r in stored.values()} == {now}
    ANSWERS.insert_rows([])  # nothing to write: no statement


def test_an_update_of_several_rows_names_them_in_a_list(participant):
    second = Walker(participant.study)
    second.enter()
    other = Participant.objects.get(prolific_pid=second.pid)
    marked = Statement(Participant, sets=["served_at"], where=["position"], where_in="pk")
    when = timezone.now() - timedelta(minutes=5)
    assert marked.update([when], [participant.position], among=[participant.pk, other.pk]) == 2
    assert marked.update([timezone.now()], [participant.position + 1], among=[participant.pk]) == 0
    assert marked.update([when], [participant.position], among=[other.pk + 1000]) == 0
    assert {p.served_at for p in Participant.objects.filter(pk__in=[participant.pk, other.pk])} == {when}
    with pytest.raises(ValueError, match="where_in"):
        marked.update([when], [participant.position])  # no row named: refused, not "every row"


def test_a_list_for_in_is_padded_to_a_power_of_two_with_its_last_value():
    assert [padded(range(n)) for n in (0, 1, 2, 3, 5)] == [
        [],
        [0],
        [0, 1],
        [0, 1, 2, 2],
        [0, 1, 2, 3, 4, 4, 4, 4],
    ]


def test_an_insert_can_return_the_new_rows_keys_in_order(participant):
    now = timezone.now()
    rows = [(participant.pk, 8, "questionnaire", key, key, None, False, None, now) for key in "xyz"]
    keys = ANSWERS.insert_rows(rows, returning=True)
    assert [Response.objects.get(pk=pk).key for pk in keys] == ["x", "y", "z"]
    assert ANSWERS.insert_rows([], returning=True) == []


def test_keys_are_returned_by_a_database_without_returning_too(participant, monkeypatch):
    """An SQLite older than 3.35 (Django 5.2 supports 3.31): one row at a time, lastrowid."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL always has RETURNING")
    monkeypatch.setattr(connection.features, "can_return_columns_from_insert", False)
    now = timezone.now()
    rows = [(participant.pk, 9, "questionnaire", key, key, None, False, None, now) for key in "pq"]
    with CaptureQueriesContext(connection) as queries:
        keys = ANSWERS.insert_rows(rows, returning=True)
    assert len(queries) == 2 and not any("RETURNING" in query["sql"] for query in queries)
    assert [Response.objects.get(pk=pk).key for pk in keys] == ["p", "q"]
    made = Statement.every_column(Participant).insert_new(
        Participant(
            study=participant.study,
            prolific_pid="old-sqlite",
            started_at=now,
            last_seen_at=now,
            expires_at=now,
        )
    )
    assert Participant.objects.get(pk=made.pk).prolific_pid == "old-sqlite"


def test_a_new_instance_is_inserted_with_its_defaults_and_reads_back_as_the_orms_would(participant):
    now = timezone.now()
    made = Participant(
        study=participant.study, prolific_pid="new-one", started_at=now, last_seen_at=now, expires_at=now
    )
    with CaptureQueriesContext(connection) as queries:
        saved = Statement.every_column(Participant).insert_new(made)
    assert len(queries) == 1 and queries[0]["sql"].startswith("INSERT")
    assert saved is made and made.pk and not made._state.adding
    again = Participant.objects.get(pk=made.pk)
    stored = {f.attname: getattr(again, f.attname) for f in Participant._meta.concrete_fields}
    assert stored == {f.attname: getattr(made, f.attname) for f in Participant._meta.concrete_fields}
    assert len(again.token) >= 32 and again.token != participant.token  # the token's default made
    assert (again.status, again.position, again.visits, again.served_at) == ("active", 1, 1, None)
    made.visits = 2
    made.save(update_fields=["visits"])  # the ORM takes it as a saved row
    assert Participant.objects.get(pk=made.pk).visits == 2


def test_a_statement_refuses_what_it_was_not_made_for():
    with pytest.raises(ValueError, match="either inserts"):
        Statement(Participant, sets=["served_at"], insert=["position"])
    with pytest.raises(ValueError, match="expected 1 values"):
        SERVED.update([timezone.now(), 1], [1, 1])
