"""An option that opens a text box ("Prefer to self-describe"): the box shows only with that
option (show_if), its text is required then and stored as <key>_specify, and it is dropped
when another option is chosen; the item's settings are checked."""

import pytest
from django.core.exceptions import ValidationError

from participants.models import Response
from studies.models import Question
from tests.support.cast import Walker

pytestmark = pytest.mark.django_db
ABOUT_YOU = "About you"


def walk_to_about_you(study) -> Walker:
    w = Walker(study)
    w.enter()
    w.walk(stop_before=ABOUT_YOU, answers={"A quick question": {"attention_1": "Strongly disagree"}})
    return w


def test_choosing_self_describe_asks_for_the_words_and_stores_them(mystery_study):
    w = walk_to_about_you(mystery_study)
    response, form = w.page()
    html = response.content.decode()
    assert 'data-show-if="gender=Prefer to self-describe"' in html and 'name="gender_specify"' in html
    refused = w.submit({"gender": "Prefer to self-describe", "gender_specify": ""}, form)
    assert refused.status_code == 200 and "Please describe it in a few words" in refused.content.decode()
    assert not Response.objects.filter(key="gender").exists()
    w.submit({"gender": "Prefer to self-describe", "gender_specify": "Genderfluid"}, form)
    stored = dict(Response.objects.filter(participant__prolific_pid=w.pid).values_list("key", "value"))
    assert stored["gender"] == "Prefer to self-describe" and stored["gender_specify"] == "Genderfluid"


def test_words_typed_before_choosing_another_option_are_not_kept(mystery_study):
    w = walk_to_about_you(mystery_study)
    _, form = w.page()
    w.submit({"gender": "Woman", "gender_specify": "typed then changed my mind"}, form)
    stored = dict(Response.objects.filter(participant__prolific_pid=w.pid).values_list("key", "value"))
    assert stored["gender"] == "Woman" and "gender_specify" not in stored


def test_the_specify_option_must_be_one_of_a_single_choice_items_options(mystery_study):
    q = Question.objects.get(step__study=mystery_study, key="gender")
    q.specify_option = "Something else"
    with pytest.raises(ValidationError, match="one of the options"):
        q.full_clean()
    q.specify_option, q.kind = "Woman", Question.Kind.LIKERT
    with pytest.raises(ValidationError, match="single-choice"):
        q.full_clean()
