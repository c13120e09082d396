"""A case is edited in the admin as forms, never as JSON: its suspects and evidence units as
rows, its recall question as three fields; what is saved is the import format's shape, bad
input is refused with clear errors and nothing typed is lost."""

from __future__ import annotations

import json

import pytest

from debates.demo.loader import demo_cases, mystery_study
from debates.dialogues.imports import cases_parse
from debates.models import Case

SLUG = "lighthouse-ledger"


def rows(prefix: str, items: list[dict]) -> dict:
    """What the browser posts for a table of rows (Django's formset management form)."""
    data = {f"{prefix}-TOTAL_FORMS": str(len(items)), f"{prefix}-INITIAL_FORMS": "0"}
    for i, item in enumerate(items):
        data |= {f"{prefix}-{i}-{name}": value for name, value in item.items()}
    return data


def case_post(case: Case, *, suspects=None, evidence=None, **fields) -> dict:
    recall = case.recall or {}
    data = {
        "title": case.title,
        "story": case.story,
        "culprit": case.culprit,
        "rival": case.rival,
        "recall_question": recall.get("question", ""),
        "recall_options": "\n".join(recall.get("options", [])),
        "recall_answer": recall.get("answer", ""),
    }
    data |= rows("suspects", case.suspects if suspects is None else suspects)
    data |= rows("evidence", case.evidence if evidence is None else evidence)
    return data | fields


@pytest.fixture
def case(db) -> Case:
    demo_cases()
    return Case.objects.get(slug=SLUG)


def url(case: Case) -> str:
    return f"/admin/debates/case/{case.pk}/change/"


@pytest.mark.django_db
class TestEditingACase:
    def test_the_page_edits_suspects_evidence_and_recall_as_form_fields_not_json(self, experimenter, case):
        page = experimenter.get(url(case)).content.decode()
        assert 'name="suspects-0-name"' in page and 'name="suspects-0-description"' in page
        assert 'name="evidence-0-number"' in page and 'name="evidence-0-text"' in page
        assert 'name="recall_question"' in page and 'name="recall_answer"' in page
        assert "Add a suspect" in page and "Add an evidence unit" in page and "js/rows.js" in page
        assert 'name="suspects"' not in page and '[{"name"' not in page and "{&quot;name" not in page

    def test_an_edit_is_saved_in_the_import_format(self, experimenter, case):
        suspects = [dict(s) for s in case.suspects]
        suspects[3] |= {"DELETE": "on"}  # Gus Larkin goes
        suspects.append({"name": "Ada Pell", "description": "A guest who held Tobias's arm."})
        suspects.append({"name": "", "description": ""})  # a blank row is ignored
        evidence = [dict(e) for e in case.evidence[:2]] + [{"number": 3, "text": "A new clue."}]
        response = experimenter.post(
            url(case),
            case_post(
                case,
                suspects=suspects,
                evidence=evidence,
                recall_question="Where was the ledger found?",
                recall_options="In the storeroom\nUnder the lectern\n",
                recall_answer="In the storeroom",
            ),
        )
        assert response.status_code == 302, response.content.decode()[-3000:]
        case.refresh_from_db()
        assert [s["name"] for s in case.suspects] == [
            "Wren Hadley",
            "Tobias Finch",
            "Marguerite Olsen",
            "Ada Pell",
        ]
        assert case.suspects[3] == {"name": "Ada Pell", "description": "A guest who held Tobias's arm."}
        assert case.evidence[2] == {"number": 3, "text": "A new clue."} and len(case.evidence) == 3
        assert case.recall == {
            "question": "Where was the ledger found?",
            "options": ["In the storeroom", "Under the lectern"],
            "answer": "In the storeroom",
        }
        fields = ("slug", "title", "story", "suspects", "culprit", "rival", "evidence", "recall")
        document = {"format": "rostrum.cases/1", "cases": [{f: getattr(case, f) for f in fields}]}
        cases, _, _ = cases_parse(json.dumps(document))  # the import format accepts what was saved
        assert cases[0]["suspects"] == case.suspects

    def test_clearing_the_recall_fields_removes_the_recall_question(self, experimenter, case):
        data = case_post(case, recall_question="", recall_options="", recall_answer="")
        assert experimenter.post(url(case), data).status_code == 302
        case.refresh_from_db()
        assert case.recall == {}

    def test_bad_rows_are_refused_with_clear_errors_and_nothing_typed_is_lost(self, experimenter, case):
        before = Case.objects.values().get(pk=case.pk)
        suspects = [dict(s) for s in case.suspects] + [
            {"name": "Wren Hadley", "description": "A second Wren"}
        ]
        evidence = [{"number": 0, "text": "Zero is not a number here."}, {"number": 5, "text": "Five"}]
        evidence.append({"number": 5, "text": "Five again"})
        data = case_post(
            case,
            suspects=suspects,
            evidence=evidence,
            recall_options="Only one option",
            recall_answer="Something else",
        )
        response = experimenter.post(url(case), data)
        page = response.content.decode()
        assert response.status_code == 200
        assert "The suspect &#x27;Wren Hadley&#x27; appears twice." in page
        assert "Ensure this value is greater than or equal to 1." in page
        assert "Correct the rows marked below." in page
        assert "Give 2 to 8 options, one per line." in page
        # What was typed comes back in the form, row by row.
        assert 'value="A second Wren"' in page and "Zero is not a number here." in page
        assert "Only one option" in page and 'value="Something else"' in page
        assert 'name="evidence-2-text"' in page and "Five again" in page
        assert Case.objects.values().get(pk=case.pk) == before

    def test_duplicate_evidence_numbers_and_too_few_suspects_are_refused(self, experimenter, case):
        evidence = [{"number": 1, "text": "One"}, {"number": 1, "text": "One again"}]
        data = case_post(case, suspects=[case.suspects[0]], evidence=evidence)
        page = experimenter.post(url(case), data).content.decode()
        assert "Give at least two suspects." in page
        assert "The evidence number 1 appears twice." in page
        case.refresh_from_db()
        assert len(case.suspects) == 4 and case.evidence[0]["text"] != "One"

    def test_the_culprit_and_the_rival_must_be_two_different_suspects(self, experimenter, case):
        page = experimenter.post(url(case), case_post(case, culprit="Nobody Known"))
        text = page.content.decode()
        assert page.status_code == 200
        assert (
            "&#x27;Nobody Known&#x27; is not one of the suspects." in text and 'value="Nobody Known"' in text
        )
        same = experimenter.post(url(case), case_post(case, rival=case.culprit)).content.decode()
        assert "The rival must differ from the culprit." in same
        case.refresh_from_db()
        assert (case.culprit, case.rival) == ("Wren Hadley", "Tobias Finch")

    def test_the_page_refuses_outsiders_and_staff_without_permission(
        self, outsider, staff_without_permissions, case
    ):
        response = outsider.get(url(case))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        assert staff_without_permissions.get(url(case)).status_code == 403
        assert staff_without_permissions.post(url(case), case_post(case, culprit="x")).status_code == 403
        case.refresh_from_db()
        assert case.culprit == "Wren Hadley"


@pytest.mark.django_db
def test_a_case_a_live_study_uses_shows_its_lists_as_tables_not_inputs(experimenter):
    mystery_study()
    case = Case.objects.get(slug=SLUG)
    page = experimenter.get(url(case)).content.decode()
    assert "gone live with this case" in page
    assert 'name="suspects-0-name"' not in page and "<th>Name</th>" in page
    assert "Marguerite Olsen" in page and "<td>12</td>" in page
    assert "In a box of calendars in the storeroom (correct)" in page
