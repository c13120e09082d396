"""The study overview: where participants are, how full each place is, who is excluded."""

import pytest

from tests.support.cast import Walker


@pytest.mark.django_db
def test_the_overview_shows_steps_fill_and_exclusions(experimenter, mystery_study):
    w = Walker(mystery_study)
    w.enter()
    w.walk(stop_before="The debate")
    response = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/overview/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "In progress, by step" in html and "Fill per dialogue" in html
    assert "1 / 6" in html
    partial = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/overview/", HTTP_HX_REQUEST="true")
    assert "<html" not in partial.content.decode() and "Fill per dialogue" in partial.content.decode()
