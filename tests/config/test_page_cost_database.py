"""PostgreSQL runs participant pages' queries as prepared statements (parsed and planned once
per connection: issue #12), unless a transaction pooler in front of it cannot keep them."""

import pytest
from django.db import connection

from config.settings import database_from_url
from participants.services import participant_by_token, participant_enter

URL = "postgres://u:p@db.example:5432/rostrum"


def test_postgres_binds_parameters_on_the_server_and_prepares_repeated_queries(monkeypatch):
    monkeypatch.delenv("DB_PREPARED_STATEMENTS", raising=False)
    options = database_from_url(URL)["OPTIONS"]
    assert options["server_side_binding"] is True
    assert options["prepare_threshold"] == 2


def test_prepared_statements_can_be_turned_off_for_a_transaction_pooler(monkeypatch):
    monkeypatch.setenv("DB_PREPARED_STATEMENTS", "0")
    options = database_from_url(URL)["OPTIONS"]
    assert "server_side_binding" not in options
    assert "prepare_threshold" not in options
    assert "pool" in options


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_participant_lookup_run_again_is_a_prepared_statement(questionnaire_study):
    participant = participant_enter(study=questionnaire_study, prolific_pid="a" * 24, is_pilot=True)

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            return cursor.fetchone()[0]

    before = prepared()
    for _ in range(3):
        assert participant_by_token(participant.token).pk == participant.pk
    assert prepared() > before
