"""What a participant's page costs the database: the queries of the study link, of serving a
questionnaire page and of answering it are pinned, so a change that adds one shows up here
(issue #12; the CPU they cost is measured by bench/arrivals.py, not by tests).

Counts are of a study already being served by this process (its row and steps cached, its
first entry made), which is what nearly every request of a live study meets. Transactions
count their BEGIN/SAVEPOINT and COMMIT/RELEASE statements. Where the backends differ, the
larger count is pinned."""

import pytest

from devtools.formparse import default_answers
from participants.models import Participant, Response, StepVisit
from tests.support.cast import Walker, entry_url

# The study link of a new participant: the existing-participant lookup and the insert in one
# transaction (the admission checks, sister studies and recruitment, are read with the cached
# study row: none for a study without them).
ENTRY_NEW = 5
# The study link again (a second tab, a return from Prolific): lookup and one update.
ENTRY_AGAIN = 2
# A page served for the first time: the participant by token and the "served" mark.
PAGE_FIRST = 2
# The same page refreshed: the participant only.
PAGE_REFRESH = 1
# An answered questionnaire page: the participant, and in one transaction the claim of the
# step, the answers, the page's flags and its visit.
ANSWER = 7
# The last answer before the debrief also writes its free text's typing measures.
ANSWER_WITH_TEXT = 8


@pytest.fixture
def served_study(questionnaire_study):
    """The study with a first participant through the door: caches warm, study frozen."""
    first = Walker(questionnaire_study)
    first.enter()
    first.page()
    return questionnaire_study


@pytest.mark.django_db
class TestQueriesPerPage:
    def test_a_new_participant_enters_in_a_fixed_number_of_queries(
        self, served_study, django_assert_max_num_queries
    ):
        walker = Walker(served_study)
        with django_assert_max_num_queries(ENTRY_NEW):
            walker.enter()
        assert Participant.objects.filter(study=served_study, prolific_pid=walker.pid).count() == 1

    def test_coming_back_through_the_study_link_costs_two_queries(
        self, served_study, django_assert_max_num_queries
    ):
        walker = Walker(served_study)
        link = entry_url(served_study, walker.pid)
        assert walker.client.get(link).status_code == 302
        with django_assert_max_num_queries(ENTRY_AGAIN):  # the same link: Prolific's, opened again
            assert walker.client.get(link).status_code == 302
        # A new SESSION_ID (a new submission after a return): one more, to check nobody holds it.
        with django_assert_max_num_queries(ENTRY_AGAIN + 1):
            walker.enter()
        assert Participant.objects.get(study=served_study, prolific_pid=walker.pid).visits == 3

    def test_serving_a_questionnaire_page_costs_two_queries_and_a_refresh_one(
        self, served_study, django_assert_max_num_queries
    ):
        walker = Walker(served_study)
        walker.enter()
        walker.submit()  # consent
        with django_assert_max_num_queries(PAGE_FIRST):
            response, form = walker.page()
        assert response.status_code == 200 and form.position == "2"
        with django_assert_max_num_queries(PAGE_REFRESH):
            response, again = walker.page()
        assert response.status_code == 200 and again.position == "2"

    def test_answering_a_questionnaire_page_costs_a_fixed_number_of_queries(
        self, served_study, django_assert_max_num_queries
    ):
        walker = Walker(served_study)
        walker.enter()
        walker.submit()  # consent
        _, form = walker.page()
        with django_assert_max_num_queries(ANSWER):
            response = walker.client.post(walker.url, default_answers(form, {"colour": "Blue"}))
        assert response.status_code == 303
        participant = Participant.objects.get(study=served_study, prolific_pid=walker.pid)
        assert participant.position == 3
        assert Response.objects.get(participant=participant, key="colour").value == "Blue"
        assert StepVisit.objects.filter(participant=participant, position=2).count() == 1

    def test_answering_free_text_adds_only_its_typing_measures(
        self, served_study, django_assert_max_num_queries
    ):
        walker = Walker(served_study)
        walker.enter()
        walker.submit()  # consent
        walker.submit()  # page one
        walker.submit({"check_1": "Disagree"})  # page two: the attention checks, passed
        _, form = walker.page()
        assert form.position == "4"
        with django_assert_max_num_queries(ANSWER_WITH_TEXT):
            response = walker.client.post(walker.url, default_answers(form))
        assert response.status_code == 303
        participant = Participant.objects.get(study=served_study, prolific_pid=walker.pid)
        assert set(
            Response.objects.filter(participant=participant, position=4).values_list("key", flat=True)
        ) == {"age", "warmth", "why"}
        assert participant.text_entries.count() == 1
