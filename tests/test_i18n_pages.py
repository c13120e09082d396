"""Every kind of participant page, in German: no English interface string is left on it.

The English interface strings are the catalog's own msgids (what the templates, forms and
scripts translate), matched with their placeholders as wildcards; a page that still showed
one would show it in English. The study's own texts are the study's business: the demo
mystery study has German texts; the other demo studies are only offered in German here."""

from __future__ import annotations

import html as html_lib
import re
from datetime import timedelta

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.utils import timezone

from debates.models import Comparison, PersuasionDialogue
from debates.persuasion import services as persuasion
from participants.i18n import participant_language
from participants.models import Participant, Response
from pilots.pages import instructed_answers
from studies.models import Step, Study, StudyTranslation
from tests.support import persuasion as ps
from tests.support.cast import Walker
from tests.support.persuasion import dialogue_study, use_offline
from tests.support.studies import QUESTIONNAIRE_STEPS, build_study
from tests.test_i18n_catalog import catalog

PLACEHOLDER = re.compile(r"%\(\w+\)s|\{\w+\}")


def english_patterns() -> list[tuple[str, re.Pattern]]:
    """The catalog's English strings of ten or more characters (placeholders aside) whose
    German differs, as patterns (a placeholder matches anything short)."""
    found = []
    for entry in catalog("de"):
        literal = PLACEHOLDER.sub("", entry.msgid)
        if len(literal.strip()) < 10 or entry.msgstr == entry.msgid:
            continue
        parts = [re.escape(part) for part in PLACEHOLDER.split(entry.msgid)]
        found.append((entry.msgid, re.compile(r".{0,60}?".join(parts), re.DOTALL)))
    return found


ENGLISH = english_patterns()

# Participant-facing English still written in code outside this change (form labels and choices
# built in debates/live/steps.py). Left out of the check below until wrapped there;
# `test_strings_written_elsewhere_are_still_english` turns red once they are, to drop this list.
ELSEWHERE: list[str] = []  # strings shown to participants but not yet in the catalog


def english_left(page: str, study: Study | None = None) -> list[str]:
    text = html_lib.unescape(page)
    for own in [*study_texts(study), *ELSEWHERE]:  # the study's content, in English where it has no German
        text = text.replace(own, "")
    return [msgid for msgid, pattern in ENGLISH if pattern.search(text)]


def study_texts(study: Study | None) -> list[str]:
    """The paragraphs of the study's own texts (titles, configuration texts, items)."""
    if study is None:
        return []
    texts = [study.title]
    for step in Step.objects.filter(study=study).prefetch_related("questions"):
        texts += [step.title, *(v for v in step.config.values() if isinstance(v, str))]
        texts += [t for q in step.questions.all() for t in (q.text, q.help_text, *q.option_list)]
    paragraphs = {p.strip() for t in texts for p in t.split("\n") if len(p.strip()) >= 10}
    return sorted(paragraphs, key=len, reverse=True)


def assert_german(response, study: Study | None = None) -> str:
    page = response.content.decode()
    assert '<html lang="de">' in page, page[:300]
    assert english_left(page, study) == []
    return page


def offered_in_german(study: Study) -> Study:
    StudyTranslation.objects.get_or_create(study=study, language="de")
    return study


def german_walker(study: Study) -> Walker:
    walker = Walker(study, client=Client(HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9"))
    walker.enter()
    return walker


def walk_checking(
    walker: Walker, until_kind: str | None = None, answers: dict | None = None
) -> dict[str, str]:
    """Answer page after page (checking each is German) until `until_kind` or the end; the
    pages seen, by step kind (the last one: "finished")."""
    seen = {}
    for _ in range(30):
        response, form = walker.page()
        page = assert_german(response, walker.study)
        if not form.position:
            seen["finished"] = page
            return seen
        seen[form.kind] = page
        if form.kind == until_kind:
            return seen
        response = walker.submit((answers or {}).get(form.kind), form)
        assert response.status_code in (302, 303), (form.kind, form.errors)
        if walker.exit_url:
            seen["finished"] = assert_german(walker.client.get(walker.url), walker.study)
            return seen
    raise AssertionError("the study did not end")


def test_the_catalog_gives_enough_english_strings_to_look_for():
    assert len(ENGLISH) > 100
    assert english_left("<p>Please check the answers marked below.</p>") == [
        "Please check the answers marked below."
    ]
    assert english_left("<p>Step 3 of 11</p>") == []  # too short to look for alone
    assert english_left("<span>Comparison 2 of 10</span>") == ["Comparison %(number)s of %(count)s"]


@pytest.mark.django_db
class TestGermanPages:
    def test_the_mystery_study_is_german_from_consent_to_the_end(self, mystery_study):
        seen = walk_checking(german_walker(mystery_study))
        for kind in [
            "consent",
            "instructions",
            "story",
            "dialogue",
            "judgement",
            "attention_check",
            "bias_detection",
            "recall_check",
            "questionnaire",
            "debrief",
            "finished",
        ]:
            assert kind in seen, kind
        assert (
            "Information und Einwilligung" in seen["consent"]
            and "Ich bin mit der Teilnahme" in seen["consent"]
        )
        assert "Die Geschichte erneut lesen" in seen["dialogue"] and "Verdächtige" in seen["story"]
        assert "Welche Seite hat für die Person argumentiert" in seen["judgement"]
        assert "Stimme überhaupt nicht zu" in seen["attention_check"]
        assert "Vielen Dank – Sie haben die Studie abgeschlossen" in seen["finished"]

    def test_questionnaire_widgets_and_errors_are_german(self, db):
        study = offered_in_german(build_study(QUESTIONNAIRE_STEPS))
        walker = german_walker(study)
        walk_checking(walker, until_kind="questionnaire")
        walker.submit({"_position": "1", "consent": "yes"})
        walker.submit({"colour": "Red", "agree": "Yes"})
        walker.submit({"check_1": "Disagree", "check_2": "Seven"})
        response, form = walker.page()
        page = assert_german(response)
        assert "Bewegen Sie den Schieberegler, um zu antworten" in page and "Mindestens 10 Zeichen." in page
        response = walker.client.post(
            walker.url, {"_position": str(form.position), "age": "7", "why": "short"}
        )
        page = assert_german(response)
        assert "Bitte prüfen Sie die unten markierten Antworten." in page
        assert "Geben Sie eine ganze Zahl von 18 bis 99 ein." in page
        assert "Bitte bewegen Sie den Schieberegler" in page
        assert "This field is required" not in page and "at least 10 characters" not in page

    def test_every_way_out_is_german(self, db):
        study = offered_in_german(build_study(QUESTIONNAIRE_STEPS))
        walker = german_walker(study)
        walker.page()
        participant = Participant.objects.get(prolific_pid=walker.pid)
        headings = {
            "completed": "Vielen Dank – Sie haben die Studie abgeschlossen",
            "no_consent": "Sie haben sich gegen eine Teilnahme entschieden",
            "failed_check": "Einige Fragen baten Sie",
            "screened_out": "Vielen Dank für Ihre Antworten.",
            "study_full": "Leider ist diese Studie voll",
            "returned": "Diese Einreichung wurde zurückgegeben",
        }
        for status, heading in headings.items():
            past = timezone.now() - timedelta(days=1)  # a time-out is not undone on the next visit
            Participant.objects.filter(pk=participant.pk).update(
                status=status, finished_at=past, expires_at=past
            )
            page = assert_german(walker.client.get(walker.url))
            assert heading in page, (status, page[page.find("<h1>") : page.find("</h1>")])
        # A time-out is undone on the next visit while the place is free: the page as it is rendered.
        Participant.objects.filter(pk=participant.pk).update(status="timed_out")
        participant.refresh_from_db()
        with participant_language("de", "en"):
            page = render_to_string(
                "participants/finished.html", {"participant": participant, "study": study}
            )
        assert "Die Zeitgrenze ist abgelaufen" in page and english_left(page) == []

    def test_an_entry_error_is_german(self, db):
        study = offered_in_german(build_study(QUESTIONNAIRE_STEPS))
        response = Client(HTTP_ACCEPT_LANGUAGE="de").get(f"/s/{study.slug}/?PROLIFIC_PID=x")
        assert response.status_code == 400
        assert "Wir konnten die Studie nicht starten" in assert_german(response)

    def test_the_claim_sessions_pages_are_german(self, claim_study):
        walker = german_walker(offered_in_german(claim_study))
        seen = walk_checking(walker, until_kind="claim_session")
        assert "Meine erste Antwort speichern" in seen["claim_session"]
        assert walker.submit().status_code in (302, 303)
        chat = assert_german(walker.page()[0], claim_study)
        assert "Frage senden" in chat and "Aussetzen – keine Frage" in chat and 'id="ui-live"' in chat

    def test_the_pairwise_comparisons_are_german_and_store_the_same_answers(self, pairs_study):
        walker = german_walker(offered_in_german(pairs_study))
        walk_checking(walker, until_kind="pairwise")
        pages, checks = [], []
        for _ in range(10):
            response, form = walker.page()
            if form.kind != "pairwise":
                break
            page = html_lib.unescape(assert_german(response, pairs_study))
            pages.append(page)
            current = Comparison.objects.get(participant__prolific_pid=walker.pid, order=form.hidden["_item"])
            if current.is_check:
                checks.append((page, current, form))
            assert walker.submit({"confidence": "4"}, form).status_code in (302, 303), form.errors
        assert len(pages) == 5 and len(checks) == 2
        for page in pages:
            assert "Vergleich" in page and "Alles lesen" in page
            assert "Welche Person in der Rolle „Sprecher A“ hat – allein nach den Debattenprotokollen" in page
            assert "Wie sicher sind Sie sich Ihrer Wahl?" in page
            assert "Sehr unsicher" in page and "Eher sicher" in page and "Sehr sicher" in page
            assert "Sprecher A aus Debatte 1" in page and "Beide waren gleich überzeugend" in page
        labels = {"debate1": "Sprecher A aus Debatte 1", "debate2": "Sprecher A aus Debatte 2"}
        labels["equal"] = "Beide waren gleich überzeugend"
        for page, check, form in checks:
            # The instruction names the option as the German form labels it.
            assert f"(AUFMERKSAMKEITSPRÜFUNG: wählen Sie „{labels[check.check_answer]}“)" in page
            assert "ATTENTION CHECK" not in page and "select '" not in page
            # A pilot reads the German instruction as a person would.
            assert check.check_answer in instructed_answers(form).values()
        # Stored as in every language: the choices' values, confidence 1..5, checks passed.
        rows = Comparison.objects.filter(participant__prolific_pid=walker.pid)
        assert {r.choice for r in rows} <= {"debate1", "debate2", "equal"}
        assert {r.confidence for r in rows} == {4}
        assert all(r.check_passed for r in rows if r.is_check)
        assert all(r.check_instruction.startswith("select '") for r in rows if r.is_check)

    def test_the_dialogue_questions_are_german_and_store_the_same_answers(self, mystery_study):
        walker = german_walker(mystery_study)
        seen = walk_checking(walker, until_kind="bias_detection")
        assert "Seite A – hat argumentiert, dass" in seen["judgement"]
        assert "Seite B – hat argumentiert, dass" in seen["judgement"]
        page = html_lib.unescape(seen["bias_detection"])
        assert "Ja" in page and "Nein" in page and "Nicht sicher" in page and "Seite A" in page
        assert "Etwas anderes, oder ich bin mir nicht sicher" in page
        response, form = walker.page()
        response = walker.client.post(walker.url, {**form.hidden, "present": "yes"})  # side, type unanswered
        page = assert_german(response, mystery_study)
        assert page.count("Bitte beantworten Sie dies, da Sie oben mit Ja geantwortet haben.") == 2
        response = walker.submit({"present": "yes", "side": "B", "bias_type": "other"}, form)
        assert response.status_code in (302, 303)
        stored = dict(
            Response.objects.filter(participant__prolific_pid=walker.pid).values_list("key", "value")
        )
        assert stored["judgement_side"] in ("A", "B")
        assert (stored["bias_present"], stored["bias_side"], stored["bias_type"]) == ("yes", "B", "other")

    def test_the_persuasion_dialogue_is_german(self, db, settings):
        use_offline(settings)
        study = offered_in_german(dialogue_study())
        walker = german_walker(study)
        seen = walk_checking(walker, until_kind="persuasion_dialogue")
        page = seen["persuasion_dialogue"]
        assert "So funktioniert der Dialog" in page and 'id="ui-persuasion"' in page
        # The dialogue ends at its time limit: the page says so in German.
        participant = Participant.objects.get(prolific_pid=walker.pid)
        dialogue = ps.dialogue_of(participant)
        persuasion.dialogue_end(
            dialogue,
            PersuasionDialogue.Status.FINISHED,
            PersuasionDialogue.Reason.TIME_LIMIT,
            now=timezone.now(),
        )
        page = assert_german(walker.page()[0], study)
        assert "Der Dialog hat sein Zeitlimit erreicht: unentschieden." in page

    def test_the_persuasion_waiting_room_is_german(self, db, settings):
        use_offline(settings)
        study = offered_in_german(dialogue_study(opponent="human", wait_seconds=300))
        seen = walk_checking(german_walker(study), until_kind="persuasion_dialogue")
        assert (
            "Warten auf eine weitere teilnehmende Person (höchstens 5 Minuten) …"
            in seen["persuasion_dialogue"]
        )


def test_the_claim_judgement_form_is_german(claim_study):
    seen = walk_checking(german_walker(offered_in_german(claim_study)), until_kind="claim_session")
    page = html_lib.unescape(seen["claim_session"])
    assert "Ist die Behauptung wahr oder falsch?" in page
    assert "Wie sicher sind Sie, dass Ihre Antwort richtig ist?" in page
    assert "How confident are you that your answer is correct?" not in page
