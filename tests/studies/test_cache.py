"""The per-process cache of study rows."""

import pytest

from studies import services
from studies.models import Study
from tests.support.studies import CONSENT_STEP, build_study


@pytest.mark.django_db
def test_study_rows_are_reread_after_the_cache_time(monkeypatch, settings):
    settings.STUDY_CACHE_SECONDS = 5
    clock = [1000.0]
    monkeypatch.setattr(services.time, "monotonic", lambda: clock[0])
    study = build_study([CONSENT_STEP])
    assert services.study_cached(slug=study.slug).status == "live"
    Study.objects.filter(pk=study.pk).update(status="paused")
    clock[0] += 4
    assert services.study_cached(slug=study.slug).status == "live"  # still cached
    assert services.study_cached(pk=study.pk).status == "live"  # one entry for both keys
    clock[0] += 2
    assert services.study_cached(slug=study.slug).status == "paused"
    assert services.study_cached(slug="nope") is None
