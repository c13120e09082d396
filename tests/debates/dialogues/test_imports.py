"""The case and dialogue import: every problem named by line and field, nothing half-written."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from debates.dialogues.imports import cases_import
from debates.imports import ImportInvalid, decode
from debates.models import Case, Condition, Dialogue, DialogueAssignment, Turn
from tests.support.cast import Walker


def case(slug="harbour", **overrides) -> dict:
    return {
        "slug": slug,
        "title": "The Harbour Lamp",
        "story": "Once upon a tide.\n\nThe lamp went out.",
        "suspects": [{"name": "Ann", "description": "keeper"}, {"name": "Bo"}, {"name": "Cy"}],
        "culprit": "Ann",
        "rival": "Bo",
        "evidence": [{"number": 1, "text": "Oil on Ann's sleeve."}, {"number": 2, "text": "Bo's boat left."}],
        **overrides,
    }


def dialogue(slug="harbour-baseline", case_slug="harbour", **overrides) -> dict:
    return {
        "slug": slug,
        "case": case_slug,
        "condition": "baseline",
        "active_side": "none",
        "variant": "",
        "side_a": "culprit",
        "turns": [{"speaker": "AB"[n % 2], "text": f"Turn {n + 1} words here."} for n in range(6)],
        **overrides,
    }


def document(cases=None, dialogues=None) -> str:
    doc = {"format": "rostrum.cases/1", "cases": cases or [case()], "dialogues": dialogues or [dialogue()]}
    return json.dumps(doc, indent=2)


def problems_of(text: str) -> list[str]:
    with pytest.raises(ImportInvalid) as info:
        cases_import(text=text)
    return [str(p) for p in info.value.problems]


@pytest.mark.django_db
class TestImport:
    def test_a_valid_file_imports_cases_dialogues_and_turns(self):
        summary = cases_import(text=document())
        assert (summary.cases_created, summary.dialogues_created) == (1, 1)
        d = Dialogue.objects.get(slug="harbour-baseline")
        assert d.case.culprit == "Ann" and d.case.suspect_names == ["Ann", "Bo", "Cy"]
        assert [t.speaker for t in d.turns.all()] == list("ABABAB")
        assert d.words == 6 * 4

    def test_importing_again_updates_in_place(self):
        cases_import(text=document())
        summary = cases_import(text=document([case(title="Renamed")]))
        assert (summary.cases_updated, summary.dialogues_updated, summary.dialogues_unchanged) == (1, 0, 1)
        assert Case.objects.get().title == "Renamed"
        assert Turn.objects.count() == 6

    def test_the_same_file_again_changes_nothing_and_says_so(self):
        """It reported '1 updated' for a case and each dialogue (the researcher walk)."""
        cases_import(text=document())
        turns = list(Turn.objects.values_list("pk", flat=True))
        summary = cases_import(text=document())
        assert (
            str(summary) == "cases: 0 new, 0 updated, 1 unchanged; dialogues: 0 new, 0 updated, 1 unchanged"
        )
        assert list(Turn.objects.values_list("pk", flat=True)) == turns  # not rewritten

    def test_one_mistake_in_a_case_is_said_once_not_once_more_per_dialogue(self):
        """A bad rival also added "no case with slug 'harbour'" for every dialogue of the case
        (6 problems for 2 mistakes; the researcher walk)."""
        dialogues = [
            dialogue(),
            dialogue(slug="harbour-two"),
            dialogue(slug="elsewhere", case_slug="nowhere"),
        ]
        problems = problems_of(document([case(rival="Zed")], dialogues))
        assert len(problems) == 2, problems
        assert "rival" in problems[0]
        assert "no case with slug 'nowhere'" in problems[1]  # a case the file does not have at all

    def test_errors_name_the_line_and_the_field(self):
        text = document(
            dialogues=[dialogue(turns=[{"speaker": "A", "text": "x"}, {"speaker": "A", "text": "y"}])]
        )
        problems = problems_of(text)
        speaker_lines = [n for n, row in enumerate(text.splitlines(), 1) if '"speaker": "A"' in row]
        line = speaker_lines[1]  # the second turn's speaker
        assert any(
            p == f'line {line}, dialogues[0].turns[1].speaker: must be "B" (turns alternate A, B, A, B, …)'
            for p in problems
        ), problems
        one_turn = problems_of(document(dialogues=[dialogue(turns=[{"speaker": "A", "text": "x"}])]))
        assert any(
            "dialogues[0].turns: must have 2 to 20 turns (the paper's have 6), has 1" in p for p in one_turn
        )

    def test_a_bad_file_imports_nothing(self):
        good = case(slug="good-case")
        bad = case(slug="bad-case", culprit="Nobody")
        problems = problems_of(document([good, bad], [dialogue(case_slug="good-case")]))
        assert any("cases[1].culprit: 'Nobody' is not one of the suspects" in p for p in problems)
        assert not Case.objects.exists() and not Dialogue.objects.exists()

    @pytest.mark.parametrize(
        "overrides, message",
        [
            (
                {"condition": "sarcasm"},
                "dialogues[0].condition: no condition 'sarcasm': use one of anchoring",
            ),
            (
                {"condition": "anchoring", "active_side": "none", "variant": "V1"},
                'active_side: must be "culprit"',
            ),
            (
                {"condition": "anchoring", "active_side": "rival", "variant": "V12345"},
                "variant: at most 4 characters",
            ),
            ({"active_side": "rival"}, 'must be "none" for a baseline dialogue'),
            ({"side_a": "butler"}, 'side_a: must be "culprit" or "rival"'),
            ({"case": "elsewhere"}, "dialogues[0].case: no case with slug 'elsewhere'"),
            ({"slug": "Bad Slug"}, "dialogues[0].slug: use lowercase letters"),
            ({"extra": 1}, "dialogues[0].extra: unknown field"),
            ({"turns": "six"}, "dialogues[0].turns: must be a list"),
        ],
    )
    def test_dialogue_fields_are_checked(self, overrides, message):
        problems = problems_of(document(dialogues=[dialogue(**overrides)]))
        assert any(message in p for p in problems), problems

    def test_a_file_defines_a_new_condition_and_its_dialogues_use_it(self):
        sarcasm = {"slug": "sarcasm", "label": "Sarcasm", "description": "Sarcasm — a side mocked the other"}
        text = json.loads(
            document(dialogues=[dialogue(condition="sarcasm", active_side="rival", variant="V1")])
        )
        text["conditions"] = [sarcasm]
        summary = cases_import(text=json.dumps(text))
        assert summary.conditions_created == 1 and "conditions: 1 new" in str(summary)
        assert Condition.objects.get(slug="sarcasm").description.startswith("Sarcasm —")
        assert Dialogue.objects.get().condition == "sarcasm"
        text["conditions"] = [{**sarcasm, "label": "Mockery", "baseline": True}]
        problems = problems_of(json.dumps(text))
        assert any("the condition 'sarcasm' exists with label 'Sarcasm'" in p for p in problems), problems

    def test_dialogues_of_another_length_than_six_turns_import(self):
        turns = [{"speaker": "AB"[n % 2], "text": f"turn {n}"} for n in range(4)]
        cases_import(text=document(dialogues=[dialogue(turns=turns)]))
        dialogue_row = Dialogue.objects.get()
        assert [t.phase for t in dialogue_row.turns.order_by("number")] == ["Opening"] * 2 + ["Summary"] * 2

    def test_a_case_recall_question_is_checked(self):
        bad = case(recall={"question": "Where?", "options": ["Here", "There"], "answer": "Nowhere"})
        problems = problems_of(document([bad]))
        assert any("cases[0].recall.answer: must be one of the options" in p for p in problems), problems
        good = case(recall={"question": "Where?", "options": ["Here", "There"], "answer": "There"})
        cases_import(text=document([good]))
        assert Case.objects.get().recall == {
            "question": "Where?",
            "options": ["Here", "There"],
            "answer": "There",
        }

    def test_duplicate_slugs_and_suspects_are_reported(self):
        problems = problems_of(
            document(
                [case(), case(suspects=[{"name": "Ann"}, {"name": "Ann"}])],
                [dialogue(), dialogue()],
            )
        )
        assert any("cases[1].slug: slug 'harbour' appears twice" in p for p in problems)
        assert any("cases[1].suspects[1].name: suspect 'Ann' appears twice" in p for p in problems)
        assert any("dialogues[1].slug: slug 'harbour-baseline' appears twice" in p for p in problems)

    def test_broken_json_reports_its_line(self):
        text = document().replace('"title": "The Harbour Lamp",', '"title": "The Harbour Lamp"')
        problems = problems_of(text)
        assert len(problems) == 1
        assert problems[0].startswith("line 6: not valid JSON: expected ',' or '}'"), problems

    def test_wrong_format_and_non_utf8_are_reported(self):
        assert any("format: must be" in p for p in problems_of(document().replace("rostrum.cases/1", "v0")))
        with pytest.raises(ImportInvalid) as info:
            decode(b'{"format":\n"\xff"}')
        assert str(info.value.problems[0]) == "line 2: the file is not valid UTF-8 text"

    def test_a_dialogue_participants_have_read_cannot_change(self, mystery_study):
        w = Walker(mystery_study)
        w.enter()
        w.walk(stop_before="The debate")
        slug = DialogueAssignment.objects.get().dialogue.slug
        from debates.demo.mystery import CASES_FILE

        data = json.loads(CASES_FILE.read_text())
        for d in data["dialogues"]:
            if d["slug"] == slug:
                d["turns"][0]["text"] += " Edited."
        problems = problems_of(json.dumps(data, indent=1))
        assert any(f"slug {slug!r}" in p and "cannot change" in p for p in problems)
        # The unchanged file still re-imports cleanly.
        cases_import(text=CASES_FILE.read_text())

    def test_the_command_reports_problems_and_succeeds_on_good_files(self, tmp_path):
        bad = tmp_path / "bad.json"
        bad.write_text(document(dialogues=[dialogue(side_a="nobody")]))
        with pytest.raises(CommandError) as info:
            call_command("import_cases", str(bad))
        assert "nothing was imported" in str(info.value) and "side_a" in str(info.value)
        good = tmp_path / "good.json"
        good.write_text(document())
        call_command("import_cases", str(good))
        assert Dialogue.objects.count() == 1

    def test_the_demo_file_is_valid(self):
        from debates.demo.mystery import CASES_FILE

        summary = cases_import(text=CASES_FILE.read_text())
        assert summary.cases_created >= 2
        conditions = set(Dialogue.objects.values_list("condition", "active_side"))
        assert ("baseline", "none") in conditions
        assert {side for _, side in conditions} >= {"culprit", "rival"}


def test_a_new_dialogue_beside_the_ones_a_running_study_offers_stays_editable(mystery_study):
    """The importer freezes dialogue by dialogue, as the admin does: a study in use freezes the
    dialogues it offers (and its cases), not every dialogue of those cases."""
    from debates.demo.mystery import CASES_FILE

    Walker(mystery_study).enter()  # a real participant: the study is locked
    data = json.loads(CASES_FILE.read_text())
    offered = data["dialogues"][0]
    extra = {**offered, "slug": f"{offered['slug']}-v2", "turns": [dict(t) for t in offered["turns"]]}
    data["dialogues"].append(extra)
    cases_import(text=json.dumps(data))
    extra["turns"][0]["text"] += " Edited."
    cases_import(text=json.dumps(data))  # before: refused, as every dialogue of the case was frozen
    assert Dialogue.objects.get(slug=extra["slug"]).turns.first().text.endswith(" Edited.")
    offered["turns"][0]["text"] += " Edited."
    assert any(
        f"slug {offered['slug']!r}" in p and "cannot change" in p for p in problems_of(json.dumps(data))
    )
