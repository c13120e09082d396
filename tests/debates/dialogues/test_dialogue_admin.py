"""A dialogue's turns in the admin: rows with an order, a side and a text (never JSON), checked
by the import format's rules (2 to 20 turns, sides alternating A, B, …); a new dialogue written by
hand; and, once a study that went live uses the dialogue, its turns frozen like the study's steps
(a new version offered instead), while the quality override stays the experimenter's call."""

from __future__ import annotations

import pytest
from django.utils import timezone

from debates.demo.loader import demo_cases
from debates.models import Case, Dialogue, StudyDialogue, Turn
from studies.models import Study
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

SLUG = "lighthouse-ledger-baseline"


@pytest.fixture
def dialogue(db) -> Dialogue:
    demo_cases()
    return Dialogue.objects.get(slug=SLUG)


def change_url(dialogue: Dialogue) -> str:
    return f"/admin/debates/dialogue/{dialogue.pk}/change/"


def form_data(dialogue: Dialogue | None, rows: list[dict], **fields) -> dict:
    """What the change (or add) page posts: the design, then one inline row per turn (an existing
    turn's row carries its id)."""
    initial = [r for r in rows if r.get("id")]
    data = {
        "condition": dialogue.condition if dialogue else "baseline",
        "active_side": dialogue.active_side if dialogue else "none",
        "variant": dialogue.variant if dialogue else "",
        "side_a": dialogue.side_a if dialogue else "culprit",
        "case": dialogue.case_id if dialogue else "",
        "turns-TOTAL_FORMS": len(rows),
        "turns-INITIAL_FORMS": len(initial),
        "turns-MIN_NUM_FORMS": 0,
        "turns-MAX_NUM_FORMS": 1000,
        **fields,
    }
    for n, row in enumerate(rows):
        data[f"turns-{n}-id"] = row.get("id", "")
        data[f"turns-{n}-dialogue"] = dialogue.pk if dialogue else ""
        data[f"turns-{n}-number"] = row.get("number", "")
        data[f"turns-{n}-speaker"] = row["speaker"]
        data[f"turns-{n}-text"] = row["text"]
        if row.get("delete"):
            data[f"turns-{n}-DELETE"] = "on"
    return data


def rows_of(dialogue: Dialogue) -> list[dict]:
    return [
        {"id": t.pk, "number": t.number, "speaker": t.speaker, "text": t.text} for t in dialogue.turns.all()
    ]


def turns(dialogue: Dialogue) -> list[tuple[int, str, str]]:
    return list(
        Turn.objects.filter(dialogue=dialogue).order_by("number").values_list("number", "speaker", "text")
    )


def errors(response) -> str:
    assert response.status_code == 200, response.status_code  # the page again, with its problems
    return response.content.decode()


class TestEditingTurns:
    def test_the_change_page_shows_the_turns_as_rows_with_readable_names(self, experimenter, dialogue):
        html = experimenter.get(change_url(dialogue)).content.decode()
        assert "Turn 1 (opening, side A)" in html and "Turn 6 (summary, side B)" in html
        assert 'name="turns-0-text"' in html and 'name="turns-5-speaker"' in html
        assert "Turn object" not in html and '[{"speaker"' not in html

    def test_a_changed_text_is_saved_and_the_word_count_follows(self, experimenter, dialogue):
        rows = rows_of(dialogue)
        rows[2]["text"] = "Side A rebuts <b>briefly</b>: the ledger was moved."
        response = experimenter.post(change_url(dialogue), form_data(dialogue, rows))
        assert response.status_code == 302
        assert turns(dialogue)[2] == (3, "A", "Side A rebuts <b>briefly</b>: the ledger was moved.")
        dialogue.refresh_from_db()
        assert dialogue.words == sum(len(r["text"].split()) for r in rows)
        page = experimenter.get(change_url(dialogue)).content.decode()
        assert "&lt;b&gt;briefly&lt;/b&gt;" in page and "<b>briefly</b>" not in page

    def test_two_rounds_swap_places_by_their_order(self, experimenter, dialogue):
        rows = rows_of(dialogue)
        first, second = rows[0]["text"], rows[1]["text"]
        rows[2]["number"], rows[4]["number"] = 5, 3  # A's rebuttal and A's summary swap
        rows[3]["number"], rows[5]["number"] = 6, 4
        assert experimenter.post(change_url(dialogue), form_data(dialogue, rows)).status_code == 302
        texts = [t for _, _, t in turns(dialogue)]
        assert texts[:2] == [first, second]
        assert texts[2:] == [rows[4]["text"], rows[5]["text"], rows[2]["text"], rows[3]["text"]]

    def test_a_turn_added_without_an_order_goes_last_and_one_removed_closes_the_gap(
        self, experimenter, dialogue
    ):
        rows = rows_of(dialogue)
        rows += [{"speaker": "A", "text": "A last word from side A."}, {"speaker": "B", "text": "And B's."}]
        assert experimenter.post(change_url(dialogue), form_data(dialogue, rows)).status_code == 302
        assert [n for n, _, _ in turns(dialogue)] == [1, 2, 3, 4, 5, 6, 7, 8]
        assert turns(dialogue)[-1] == (8, "B", "And B's.")
        rows = rows_of(dialogue)
        rows[6]["delete"] = rows[7]["delete"] = True
        assert experimenter.post(change_url(dialogue), form_data(dialogue, rows)).status_code == 302
        assert len(turns(dialogue)) == 6

    def test_sides_that_do_not_alternate_are_refused_with_the_turn_named(self, experimenter, dialogue):
        rows = rows_of(dialogue)
        rows[3]["speaker"] = "A"
        html = errors(experimenter.post(change_url(dialogue), form_data(dialogue, rows)))
        assert "Turn 4: the side must be &quot;B&quot; (turns alternate A, B, A, B, …)." in html
        assert turns(dialogue)[3][1] == "B"

    def test_too_few_or_too_many_turns_are_refused(self, experimenter, dialogue):
        rows = rows_of(dialogue)
        for row in rows[1:]:
            row["delete"] = True
        html = errors(experimenter.post(change_url(dialogue), form_data(dialogue, rows)))
        assert "The dialogue must have 2 to 20 turns (the paper&#x27;s have 6), has 1." in html
        rows = rows_of(dialogue) + [{"speaker": "AB"[n % 2], "text": f"More {n}."} for n in range(15)]
        html = errors(experimenter.post(change_url(dialogue), form_data(dialogue, rows)))
        assert "has 21." in html
        assert len(turns(dialogue)) == 6

    def test_orders_with_a_gap_or_twice_the_same_are_refused(self, experimenter, dialogue):
        rows = rows_of(dialogue)
        rows[5]["number"] = 9
        html = errors(experimenter.post(change_url(dialogue), form_data(dialogue, rows)))
        assert "Number the turns 1, 2, 3, … in reading order, each once: found 1, 2, 3, 4, 5, 9." in html
        rows[5]["number"] = 5
        assert "found 1, 2, 3, 4, 5, 5." in errors(
            experimenter.post(change_url(dialogue), form_data(dialogue, rows))
        )


class TestANewDialogueByHand:
    def test_it_is_written_with_its_turns_and_counted(self, experimenter, dialogue):
        case = Case.objects.get(slug="lighthouse-ledger")
        page = experimenter.get("/admin/debates/dialogue/add/").content.decode()
        assert 'name="turns-TOTAL_FORMS" value="2"' in page and "the sides alternating A, B" in page
        data = form_data(
            None,
            [
                {"speaker": "A", "text": "Wren did it: the ledger."},
                {"speaker": "B", "text": "No, Gus: the key."},
            ],
            slug="lighthouse-ledger-hand-1",
            case=case.pk,
            condition="anchoring",
            active_side="culprit",
            variant="H1",
            side_a="culprit",
        )
        response = experimenter.post("/admin/debates/dialogue/add/", data)
        assert response.status_code == 302
        made = Dialogue.objects.get(slug="lighthouse-ledger-hand-1")
        assert (made.condition, made.active_side, made.variant, made.words) == (
            "anchoring",
            "culprit",
            "H1",
            9,
        )
        assert turns(made) == [(1, "A", "Wren did it: the ledger."), (2, "B", "No, Gus: the key.")]

    def test_the_design_follows_the_import_formats_rules(self, experimenter, dialogue):
        data = form_data(
            None,
            [{"speaker": "A", "text": "One."}, {"speaker": "B", "text": "Two."}],
            slug="lighthouse-ledger-hand-2",
            case=Case.objects.get(slug="lighthouse-ledger").pk,
            condition="baseline",
            active_side="culprit",
            variant="V1",
        )
        html = errors(experimenter.post("/admin/debates/dialogue/add/", data))
        assert "Must be &quot;none&quot; for a baseline dialogue." in html
        assert "Must be &quot;&quot; for a baseline dialogue." in html
        data.update(condition="verbosity", active_side="none", variant="")
        assert "Must be &quot;culprit&quot; or &quot;rival&quot;." in errors(
            experimenter.post("/admin/debates/dialogue/add/", data)
        )
        assert not Dialogue.objects.filter(slug="lighthouse-ledger-hand-2").exists()


class TestAFrozenDialogue:
    @pytest.fixture
    def live(self, dialogue) -> Study:
        """A study that went live offering the dialogue (its snapshot holds the dialogue's hash)."""
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="live")
        StudyDialogue.objects.create(study=study, dialogue=dialogue)
        Study.objects.filter(pk=study.pk).update(locked_at=timezone.now())
        return study

    def test_its_turns_cannot_change_and_the_page_says_why(self, experimenter, dialogue, live):
        before = turns(dialogue)
        html = experimenter.get(change_url(dialogue)).content.decode()
        assert f"{live.title} has gone live with this dialogue" in html
        assert "Make a new version" in html and 'name="turns-0-text"' not in html
        rows = rows_of(dialogue)
        rows[0]["text"] = "Changed behind the freeze."
        experimenter.post(change_url(dialogue), form_data(dialogue, rows, condition="verbosity"))
        assert turns(dialogue) == before
        dialogue.refresh_from_db()
        assert dialogue.condition == "baseline"

    def test_the_quality_override_stays_the_experimenters_call(self, experimenter, dialogue, live):
        Dialogue.objects.filter(pk=dialogue.pk).update(quality_passed=False)
        response = experimenter.post(
            change_url(dialogue), {**form_data(dialogue, []), "quality_override": "on"}
        )
        assert response.status_code == 302
        dialogue.refresh_from_db()
        assert dialogue.quality_override

    def test_a_new_version_copies_the_turns_under_a_new_slug_free_to_change(
        self, experimenter, dialogue, live
    ):
        response = experimenter.post(f"/admin/debates/dialogue/{dialogue.pk}/new-version/")
        copy = Dialogue.objects.get(slug=f"{SLUG}-v2")
        assert response.status_code == 302 and response.url.endswith(f"/{copy.pk}/change/")
        assert [t[1:] for t in turns(copy)] == [t[1:] for t in turns(dialogue)]
        assert copy.quality_passed is None and copy.provenance == {}
        rows = rows_of(copy)
        rows[0]["text"] = "A fresh opening."
        assert experimenter.post(change_url(copy), form_data(copy, rows)).status_code == 302
        assert turns(copy)[0][2] == "A fresh opening." and turns(dialogue)[0][2] != "A fresh opening."

    def test_the_service_refuses_too_whatever_the_page(self, dialogue, live):
        from debates.dialogues import services

        with pytest.raises(services.DialogueFrozen):
            services.dialogue_turns_save(dialogue=dialogue, turns=[], deleted=list(dialogue.turns.all()))
        assert len(turns(dialogue)) == 6
