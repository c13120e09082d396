"""Flags: honeypots, pages answered without being served or too fast, and how free text was
written. Evidence for the experimenter, never an exclusion nor an error for the participant."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django import forms
from django.utils import timezone

from debates.live import services as live_services
from debates.models import LiveSession
from devtools.formparse import default_answers
from participants import flags
from participants.models import Exclusion, Flag, Participant, Response, TextEntry
from tests.participants.flagging import SPAM, TEXT, NaiveBot, Person, backdate, typed
from tests.support.cast import Walker
from tests.support.live import drain_turns

Kind = Flag.Kind
CHECK = {"Page two": {"check_1": "Disagree"}}


def participant(w: Walker) -> Participant:
    return Participant.objects.get(study=w.study, prolific_pid=w.pid)


def kinds(w: Walker, position: int | None = None) -> list[str]:
    rows = Flag.objects.filter(participant=participant(w))
    if position is not None:
        rows = rows.filter(position=position)
    return sorted(rows.values_list("kind", flat=True))


def at_page_three(study) -> Person:
    person = Person(study)
    person.enter()
    person.walk(stop_before="Page three", answers=CHECK)
    return person


@pytest.mark.django_db
class TestPeopleAndBots:
    def test_a_person_who_reads_and_types_raises_no_flag(self, questionnaire_study):
        person = Person(questionnaire_study)
        person.enter()
        person.walk(answers=CHECK)
        assert person.exit_url.endswith("cc=CDONE")
        assert kinds(person) == []
        entry = TextEntry.objects.get(participant=participant(person))
        assert (entry.position, entry.field, entry.key, entry.chars) == (4, "why", "why", len(TEXT))
        assert (entry.keys, entry.pastes, entry.pasted_chars) == (len(TEXT) + 6, 0, 0)
        assert entry.typing_ms == len(TEXT) * 250
        assert 89_000 <= entry.page_ms < 200_000

    def test_the_form_parser_never_sees_the_honeypot_so_default_answers_leave_it_empty(
        self, questionnaire_study
    ):
        w = Walker(questionnaire_study)
        w.enter()
        for _ in range(5):
            response, form = w.page()
            html = response.content.decode()
            assert f'name="{flags.HONEYPOT}"' in html
            assert flags.HONEYPOT not in form.field_names | set(form.hidden)
            assert flags.HONEYPOT not in default_answers(form)
            w.submit(CHECK.get(form.title), form)
        assert Flag.objects.filter(kind=Kind.HONEYPOT).count() == 0

    def test_every_step_page_carries_a_honeypot_hidden_from_people(self, mystery_study):
        w = Walker(mystery_study)
        w.enter()
        seen = set()
        for _ in range(12):
            response, form = w.page()
            if not form.position:
                break
            html = response.content.decode()
            start = html.index(f'name="{flags.HONEYPOT}"')
            box = html[html.rindex("<div", 0, start) : html.index("</div>", start)]
            assert 'class="hp-field" aria-hidden="true"' in box
            assert 'type="text"' in box and 'tabindex="-1"' in box and 'autocomplete="off"' in box
            assert 'form="step-form"' in box and 'id="step-form"' in html
            seen.add(form.kind)
            w.submit(form=form)
        assert {"consent", "questionnaire", "judgement", "attention_check", "recall_check"} <= seen

    def test_a_naive_bot_filling_every_text_box_is_flagged_on_every_page_but_never_stopped(
        self, questionnaire_study
    ):
        bot = NaiveBot(questionnaire_study)
        bot.enter()
        bot.walk(answers=CHECK)
        assert bot.exit_url.endswith("cc=CDONE")  # no error, no end: a flag is evidence only
        p = participant(bot)
        assert p.status == Participant.Status.COMPLETED and not p.excluded
        assert not Exclusion.objects.filter(participant=p).exists()
        honeypots = Flag.objects.filter(participant=p, kind=Kind.HONEYPOT)
        assert sorted(honeypots.values_list("position", flat=True)) == [1, 2, 3, 4, 5]
        assert honeypots.first().detail == f"the hidden field came back with {len(SPAM)} characters"
        assert not Response.objects.filter(participant=p, value=SPAM).exists()  # never stored as an answer

    def test_a_filled_honeypot_is_never_shown_as_an_error(self, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        response = w.submit({flags.HONEYPOT: "http://spam.example"})
        assert response.status_code == 303 and response["Location"] == w.url
        page = w.client.get(w.url).content.decode()
        assert "Page one" in page and 'class="error' not in page
        assert kinds(w, 1) == ["fast_page", "honeypot"]

    def test_a_stale_or_invalid_form_records_no_flag(self, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.submit()  # consent
        _, page_one = w.page()
        invalid = w.client.post(w.url, default_answers(page_one, {"colour": "Green", flags.HONEYPOT: "x"}))
        assert invalid.status_code == 200
        assert kinds(w, 2) == []
        w.submit({flags.HONEYPOT: "x"}, page_one)
        stale = w.client.post(w.url, default_answers(page_one, {flags.HONEYPOT: "x"}))
        assert stale["Location"].endswith("?moved=1")
        assert kinds(w, 2) == ["fast_page", "honeypot"]


@pytest.mark.django_db
class TestPageViews:
    def test_an_answer_to_a_page_never_served_is_flagged(self, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()  # the link redirects; the consent page itself is never fetched
        response = w.client.post(w.url, {"_position": "1", "consent": "yes"})
        assert response.status_code == 303
        assert "no_page_view" in kinds(w, 1)
        assert participant(w).position == 2  # accepted all the same
        w.submit()  # page two is fetched first
        assert "no_page_view" not in kinds(w, 2)

    def test_a_refresh_keeps_the_first_time_the_page_was_served(self, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.page()
        first = participant(w).served_at
        w.page()
        assert participant(w).served_at == first
        w.submit()
        assert participant(w).served_at is None  # the next page has not been served yet
        w.page()
        assert participant(w).served_at > first

    def test_each_page_of_a_multi_page_step_must_be_served(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.submit()  # consent
        while True:
            _, form = w.page()
            if form.kind == "pairwise":
                break
            w.submit(form=form)
        position = int(form.position)
        w.submit(form=form)  # the first comparison, served
        assert "no_page_view" not in kinds(w, position)
        # The second comparison, posted blind: the next item number without fetching its page.
        blind = {**form.hidden, "_item": str(int(form.hidden["_item"]) + 1), "choice": "debate1"}
        response = w.client.post(w.url, {**blind, "confidence": "3"})
        assert response.status_code == 303 and not response["Location"].endswith("?moved=1")
        assert kinds(w, position).count("no_page_view") == 1


@pytest.mark.django_db
class TestFastPages:
    def test_a_page_answered_in_under_its_seconds_per_item_is_flagged(self, questionnaire_study, settings):
        settings.PARTICIPANT_FLAGS = {"seconds_per_item": 30}  # wide margins: no test depends on speed
        slow, fast = Person(questionnaire_study), Walker(questionnaire_study)
        for w in (slow, fast):
            w.enter()
            w.submit()  # consent
        slow.answer()  # page one served 90 s ago: 2 items need 60 s
        _, form = fast.page()
        backdate(fast, 20)
        fast.submit(form=form)
        assert kinds(slow, 2) == []
        flag = Flag.objects.get(participant=participant(fast), position=2)
        assert flag.kind == Kind.FAST_PAGE and flag.threshold == 60
        assert 20 <= flag.value < 60 and flag.detail.endswith("s on the page for 2 item(s)")

    def test_pages_without_items_are_never_too_fast(self, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.walk(answers=CHECK)
        assert kinds(w, 5) == []  # the debrief: a text and a button


@pytest.mark.django_db
class TestFreeText:
    def answer(self, study, counts: dict, seconds: float = 90) -> Person:
        person = at_page_three(study)
        person.seconds = seconds
        person.answer(counts)
        return person

    def test_pasting_is_recorded_and_mostly_pasted_text_is_flagged(self, questionnaire_study):
        person = self.answer(
            questionnaire_study, typed("why", keys=2, pastes=1, pasted=len(TEXT), typing_ms=90)
        )
        entry = TextEntry.objects.get(participant=participant(person))
        assert (entry.pastes, entry.pasted_chars, entry.pasted_share) == (1, len(TEXT), 1.0)
        flag = Flag.objects.get(participant=participant(person))
        assert (flag.kind, flag.field, flag.value, flag.threshold) == (Kind.PASTED_TEXT, "why", 1.0, 0.5)
        assert flag.detail == f"{len(TEXT)} of {len(TEXT)} characters pasted (1 paste(s))"

    def test_a_short_paste_into_typed_text_is_recorded_but_not_flagged(self, questionnaire_study):
        person = self.answer(questionnaire_study, typed("why", pastes=1, pasted=10))
        assert TextEntry.objects.get(participant=participant(person)).pastes == 1
        assert kinds(person) == []

    def test_text_that_appeared_without_key_presses_is_flagged(self, questionnaire_study):
        person = self.answer(questionnaire_study, typed("why", keys=0, typing_ms=0))
        flag = Flag.objects.get(participant=participant(person))
        assert (flag.kind, flag.value) == (Kind.UNTYPED_TEXT, 0)
        assert flag.detail == f"0 key presses for {len(TEXT)} characters not pasted"

    def test_typing_faster_than_a_person_is_flagged_by_the_browsers_typing_time(self, questionnaire_study):
        person = self.answer(questionnaire_study, typed("why", typing_ms=1000))
        flag = Flag.objects.get(participant=participant(person))
        assert flag.kind == Kind.FAST_TYPING and flag.value == pytest.approx(len(TEXT))
        assert flag.detail == f"{len(TEXT):.1f} characters per second of typing time"

    def test_typing_faster_than_a_person_is_flagged_by_the_servers_clock_whatever_the_browser_says(
        self, questionnaire_study, settings
    ):
        settings.PARTICIPANT_FLAGS = {"max_chars_per_second": 5, "seconds_per_item": 0}
        person = self.answer(questionnaire_study, typed("why"), seconds=3)  # 82 characters in ~3 s
        flag = Flag.objects.get(participant=participant(person))
        assert flag.kind == Kind.FAST_TYPING and flag.threshold == 5
        assert "of time on the page" in flag.detail and "typing time" not in flag.detail

    def test_text_without_the_browsers_counts_is_flagged_as_unmeasured(self, questionnaire_study):
        person = self.answer(questionnaire_study, {"why": TEXT})
        entry = TextEntry.objects.get(participant=participant(person))
        assert (entry.keys, entry.pastes, entry.pasted_chars, entry.typing_ms) == (None, None, None, None)
        assert kinds(person) == ["unmeasured_text"]

    def test_numbers_from_the_browser_are_clamped(self, questionnaire_study):
        counts = {
            "why": TEXT,
            "_keys.why": "-40",
            "_pastes.why": "1e3",
            "_pasted.why": "99999999999999",
            "_typing_ms.why": str(10**12),
            "_keys.age": "5",  # not a free-text field: ignored
            "_keys.nothing": "5",
        }
        person = self.answer(questionnaire_study, counts)
        (entry,) = TextEntry.objects.filter(participant=participant(person))
        assert entry.field == "why"
        assert (entry.keys, entry.pastes) == (0, None)
        assert (entry.pasted_chars, entry.typing_ms) == (flags.COUNT_MAX, flags.MS_MAX)
        assert kinds(person) == ["unmeasured_text"]

    def test_short_texts_are_recorded_but_never_flagged(self, questionnaire_study):
        person = self.answer(questionnaire_study, typed("why", "Warm enough.", keys=0, typing_ms=0))
        assert TextEntry.objects.get(participant=participant(person)).chars == 12
        assert kinds(person) == []

    def test_the_judgements_reasoning_is_measured_as_its_answer(self, mystery_study):
        w = Person(mystery_study)
        w.enter()
        w.walk(stop_before="Your judgement")
        w.answer({**typed("reasoning", keys=3, pastes=1, pasted=len(TEXT)), "side": "A"})
        entry = TextEntry.objects.get(participant=participant(w))
        assert (entry.step_kind, entry.field, entry.key) == ("judgement", "reasoning", "judgement_reasoning")
        assert Response.objects.get(participant=participant(w), key=entry.key).value == TEXT
        assert kinds(w) == ["pasted_text"]

    def test_a_claim_sessions_justification_is_measured_on_its_last_page(self, claim_study):
        w = Person(claim_study)
        w.enter()
        w.walk(stop_before="Claim 1 of 2")
        w.answer({"answer": "true", "confidence": "40"})
        session = LiveSession.objects.select_related("claim").get(participant=participant(w))
        while not live_services.chat_complete(session, list(session.turns.order_by("seq"))):
            if live_services.judge_may_write(session, list(session.turns.order_by("seq"))):
                live_services.judge_ask(
                    session_id=session.pk, participant_id=session.participant_id, text="", target="pass"
                )
            drain_turns(session.pk)
            session.refresh_from_db()
        w.answer()  # leave the conversation
        w.answer({**typed("justification", typing_ms=500), "answer": "false", "confidence": "70"})
        entry = TextEntry.objects.get(participant=participant(w))
        assert (entry.field, entry.key) == ("justification", f"claim_{session.claim.slug}_justification")
        flag = Flag.objects.get(participant=participant(w))
        assert (flag.kind, flag.field, flag.position) == (Kind.FAST_TYPING, "justification", session.position)


class TwoItems(forms.Form):
    colour = forms.ChoiceField(choices=[("red", "Red")])
    why = forms.CharField(widget=forms.Textarea)


@pytest.mark.django_db
class TestThresholds:
    """The default thresholds at their edges, with the page's times given exactly."""

    def record(self, w: Walker, seconds: float, text: str, counts: flags.TypingCounts) -> list[str]:
        form = TwoItems(data={"colour": "red", "why": text})
        assert form.is_valid()
        now = timezone.now()
        page = flags.Page(
            participant=participant(w),
            position=2,
            step_kind="questionnaire",
            form=form,
            served_at=now - timedelta(seconds=seconds),
            started_at=None,
            now=now,
        )
        evidence = flags.Evidence(typing={"why": counts})
        recorded = flags.flags_record(page=page, evidence=evidence)
        Flag.objects.all().delete()
        return sorted(f.kind for f in recorded)

    @pytest.fixture
    def w(self, questionnaire_study) -> Walker:
        w = Walker(questionnaire_study)
        w.enter()
        return w

    def test_one_second_per_item(self, w):
        human = flags.TypingCounts(keys=30, pastes=0, pasted_chars=0, typing_ms=10_000)
        assert self.record(w, 1.999, "short", human) == ["fast_page"]
        assert self.record(w, 2.0, "short", human) == []

    def test_twenty_characters_a_second(self, w):
        text = "x" * 40
        assert self.record(w, 1.99, text, flags.TypingCounts(40, 0, 0, 10_000)) == [
            "fast_page",
            "fast_typing",
        ]
        assert self.record(w, 2.0, text, flags.TypingCounts(40, 0, 0, 10_000)) == []
        assert self.record(w, 60, text, flags.TypingCounts(40, 0, 0, 1_999)) == ["fast_typing"]
        assert self.record(w, 60, text, flags.TypingCounts(40, 0, 0, 2_000)) == []

    def test_half_the_text_pasted_and_half_a_key_press_per_character(self, w):
        text = "x" * 40
        assert self.record(w, 60, text, flags.TypingCounts(40, 1, 20, 10_000)) == ["pasted_text"]
        assert self.record(w, 60, text, flags.TypingCounts(40, 1, 19, 10_000)) == []
        assert self.record(w, 60, text, flags.TypingCounts(19, 0, 0, 10_000)) == ["untyped_text"]
        assert self.record(w, 60, text, flags.TypingCounts(20, 0, 0, 10_000)) == []

    def test_texts_under_twenty_characters_are_not_judged(self, w):
        assert self.record(w, 60, "x" * 19, flags.TypingCounts(0, 0, 0, 0)) == []
        assert self.record(w, 60, "x" * 20, flags.TypingCounts(0, 0, 0, 0)) == ["untyped_text"]
