"""The generation job's form in the admin (the kind's own checks included), and a built
dialogue's page: its quality scores, how it was made, and the one thing the experimenter
may change, offering it despite a failed check."""

import pytest
from django.urls import reverse

from debates.demo import loader
from debates.demo.generation import generation_job
from debates.dialogues import services
from debates.generation import kinds
from debates.models import Case, Dialogue, Job

pytestmark = pytest.mark.django_db


def test_a_generation_job_is_added_from_its_form_and_a_case_without_evidence_is_refused(experimenter):
    loader.demo_cases()
    url = reverse("admin:debates_job_add") + f"?kind={kinds.GENERATE}"
    page = experimenter.get(url).content.decode()
    assert "config__conditions" in page and "Pro-jargon, Baseline vs. Active, V2" in page
    data = {
        "name": "build-two",
        "kind": kinds.GENERATE,
        "title": "",
        "concurrency": 2,
        "note": "",
        "config__cases": ["orchard-recital"],
        "config__conditions": ["1", "14"],
        "config__side_a": "rival",
        "config__generator_model": "gpt-4o",
        "config__generator_temperature": "0.7",
        "config__judge_model": "gpt-4o",
        "config__judge_temperature": "0",
        "config__pass_mark": "27",
        "config__max_tokens": "700",
        "config__seed": "1",
        "config__words_per_turn": "170",
        "config__attempts": "3",
        "config__turns": "6",
    }
    Case.objects.filter(slug="orchard-recital").update(evidence=[])
    refused = experimenter.post(url, data)
    assert refused.status_code == 200 and "at least 4 numbered evidence units" in refused.content.decode()
    assert not Job.objects.filter(name="build-two").exists()

    loader.demo_cases()  # the evidence back
    Case.objects.filter(slug="orchard-recital").update(
        evidence=Case.objects.get(slug="lighthouse-ledger").evidence
    )
    experimenter.post(url, data)
    job = Job.objects.get(name="build-two")
    assert job.config["conditions"] == ["1", "14"] and job.config["side_a"] == "rival"


def test_a_built_dialogues_page_shows_its_scores_and_provenance_and_only_the_override_is_editable(
    experimenter,
):
    loader.demo_cases()
    generation_job()
    built = Dialogue.objects.filter(provenance__job="demo-generation").order_by("slug").first()
    url = reverse("admin:debates_dialogue_change", args=[built.pk])
    html = experimenter.get(url).content.decode()
    assert "Clarity" in html and "/30" in html and "Pass mark: 27 of 30" in html
    assert "demo-generation" in html and "demo-writer" in html and "dialogue_rollout v1" in html
    assert f"?job_item__id__exact={built.provenance['item_id']}" in html
    assert 'name="quality_override"' in html and 'name="condition"' not in html
    experimenter.post(url, {"quality_override": "on", **inline_management()})
    built.refresh_from_db()
    assert built.quality_override is True
    listing = experimenter.get(reverse("admin:debates_dialogue_changelist") + "?quality_passed__exact=1")
    assert built.slug in listing.content.decode()


def test_a_built_dialogues_turns_never_change_by_hand_but_a_new_version_can(experimenter):
    loader.demo_cases()
    generation_job()
    built = Dialogue.objects.filter(provenance__job="demo-generation").order_by("slug").first()
    first = built.turns.order_by("number").first()
    with pytest.raises(services.DialogueFrozen, match="built by job demo-generation"):
        first.text = "Written over by hand."
        services.dialogue_turns_save(dialogue=built, turns=[first], deleted=[])
    assert built.turns.get(pk=first.pk).text != "Written over by hand."
    html = experimenter.get(reverse("admin:debates_dialogue_change", args=[built.pk])).content.decode()
    assert "Built by the job demo-generation" in html and "Make a new version" in html
    copy = services.dialogue_new_version(dialogue=built)
    assert services.dialogue_built_by(copy) == ""
    turn = copy.turns.order_by("number").first()
    turn.text = "Edited in the copy."
    services.dialogue_turns_save(dialogue=copy, turns=[turn, *copy.turns.exclude(pk=turn.pk)], deleted=[])
    assert copy.turns.get(number=turn.number).text == "Edited in the copy."


def inline_management() -> dict:
    return {
        "turns-TOTAL_FORMS": "0",
        "turns-INITIAL_FORMS": "0",
        "turns-MIN_NUM_FORMS": "0",
        "turns-MAX_NUM_FORMS": "0",
    }
