"""common.compiled: querysets of a fixed shape compiled once per connection. Every compiled
query of ours must take the compiled path on the database the tests run on (SQLite here,
PostgreSQL in the backend phase), and give what the ORM gives, related objects included."""

from __future__ import annotations

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common.compiled import CompiledQuery
from debates.live import services as live_services
from debates.models import LiveSession, LiveTurn
from participants import services as participant_services
from participants.models import Participant
from tests.support.cast import Walker

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(claim_study) -> LiveSession:
    w = Walker(claim_study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    live_services.live_initial_record(session=session, answer=True, confidence=30, now=timezone.now())
    return session


def test_every_compiled_query_of_ours_compiles_and_reads_what_the_orm_reads(session):
    participant = Participant.objects.get(pk=session.participant_id)
    assert participant_services._participant_with_token(participant.token) == participant
    found = participant_services._participant_where(
        study_id=participant.study_id, prolific_pid=participant.prolific_pid
    )
    assert (
        found == participant
        and found.token == participant.token
        and found.started_at == participant.started_at
    )
    assert (
        participant_services._participant_where(study_id=participant.study_id, prolific_pid="nobody") is None
    )
    other = second_session(session)
    with transaction.atomic():
        locked = live_services._SESSIONS_LOCKED.rows(pks=[other.pk, session.pk])
        assert live_services._SESSIONS_LOCKED.rows(pks=[session.pk]) == [session]
        assert live_services._SESSION_LOCKED_ANY.one(pk=session.pk) == session
    assert locked == sorted([session, other], key=lambda s: s.pk)  # in id order, as locked
    assert locked[0].claim_id == min([session, other], key=lambda s: s.pk).claim_id
    turns = live_services._TURNS.rows(session_id=session.pk)
    assert turns == list(session.turns.order_by("seq")) and turns
    both = live_services._TURNS_OF.rows(session_ids=[session.pk, other.pk])
    assert both == list(LiveTurn.objects.filter(session__in=[session, other]).order_by("session_id", "seq"))
    turn = turns[-1]
    with CaptureQueriesContext(connection) as queries:
        (read,) = live_services._TURNS_TO_WRITE.rows(pks=[turn.pk])
        # select_related: the session, its claim, debaters and participant come with it.
        names = (read.session.claim.slug, read.session.debater_a.model, read.session.participant.token)
    assert len(queries) == 1 and names[2] == participant.token
    assert read.session.debater_b_id == session.debater_b_id
    assert live_services.turns_before(turn) == turns[:-1]
    assert live_services.turns_before(turns[0]) == []
    for query in (
        participant_services._BY_TOKEN,
        participant_services._BY_PID,
        live_services._SESSIONS_LOCKED,
        live_services._SESSION_LOCKED_ANY,
        live_services._TURNS,
        live_services._TURNS_OF,
        live_services._TURNS_TO_WRITE,
    ):
        assert query.is_compiled_on(connections["default"]), query.build


def second_session(session: LiveSession) -> LiveSession:
    """Another participant's session of the same study, in its chat phase with turn 1 due."""
    w = Walker(session.participant.study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    other = LiveSession.objects.get(participant__prolific_pid=w.pid)
    live_services.live_initial_record(session=other, answer=False, confidence=70, now=timezone.now())
    return other


def test_a_list_of_values_is_compiled_once_for_each_length(session):
    """`pk__in` takes one placeholder per value: each length is compiled once and run with each
    call's values, duplicates and equal values included."""
    other = second_session(session)
    rows = CompiledQuery(
        lambda *, pks, session_id: LiveTurn.objects.filter(pk__in=pks, session_id=session_id).order_by("pk")
    )
    mine = list(session.turns.order_by("pk")) + list(LiveTurn.objects.filter(session=other))
    first, theirs = mine[0], mine[-1]
    assert rows.rows(pks=[first.pk], session_id=session.pk) == [first]
    assert rows.rows(pks=(first.pk, theirs.pk), session_id=session.pk) == [first]  # a tuple: a list
    assert rows.rows(pks={theirs.pk, first.pk}, session_id=other.pk) == [theirs]  # a set too
    assert rows.rows(pks=[first.pk, first.pk], session_id=session.pk) == [first]  # duplicates
    assert rows.rows(pks=[7, 7], session_id=7) == []  # equal values, compiled already
    assert rows.is_compiled_on(connections["default"])
    assert sorted(rows._compiled) == [(1,), (2,)]
    assert rows.rows(pks=[], session_id=session.pk) == []  # no value: the ORM says nothing
    assert not rows.is_compiled_on(connections["default"])


def test_the_compiled_sql_runs_with_each_calls_values(session):
    rows = CompiledQuery(lambda *, pk, session_id: LiveTurn.objects.filter(pk=pk, session_id=session_id))
    first = session.turns.order_by("seq").first()
    assert rows.one(pk=first.pk, session_id=session.pk + 1000) is None
    assert rows.is_compiled_on(connections["default"])
    assert rows.one(pk=first.pk, session_id=session.pk) == first  # each call's values
    assert rows.one(pk=first.pk + 1000, session_id=session.pk) is None


def test_equal_values_do_not_decide_the_order_of_parameters(session):
    """Compiled with equal values first (ids in a fresh database often are), then run with
    different ones: each value still goes to its own parameter."""
    rows = CompiledQuery(lambda *, b, a: LiveTurn.objects.filter(session_id=b, pk=a))
    first = session.turns.order_by("seq").first()
    rows.rows(a=7, b=7)
    assert rows.is_compiled_on(connections["default"])
    assert rows.one(a=first.pk, b=session.pk) == first
    assert rows.one(a=session.pk + 1000, b=first.pk) is None


def test_a_queryset_whose_parameters_are_not_its_values_runs_through_the_orm(session):
    rows = CompiledQuery(lambda *, text: LiveTurn.objects.filter(text__icontains=text))  # "%text%"
    assert rows.rows(text="zzz-nothing") == []
    assert not rows.is_compiled_on(connections["default"])


def test_a_query_its_stand_ins_cannot_compile_runs_through_the_orm(session):
    """A negative stand-in makes `seq__lt` on a positive field match nothing at compile time
    (Django's EmptyResultSet): the query is not compiled, and still answers right."""
    before = CompiledQuery(
        lambda *, session_id, seq: LiveTurn.objects.filter(session_id=session_id, seq__lt=seq).order_by("seq")
    )
    turns = list(session.turns.order_by("seq"))
    assert list(before.rows(session_id=session.pk, seq=turns[-1].seq)) == turns[:-1]
    assert not before.is_compiled_on(connections["default"])
