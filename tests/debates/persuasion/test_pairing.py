"""The waiting room of design C through the participant's pages: arrivals paired by study and
step with opposite sides, nobody waiting past the configured time (an agent takes the empty
seat, or a polite exit with its code), a partner who leaves or falls silent (the other
completes with the configured code), and, on PostgreSQL, many arrivals at once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from debates.models import PersuasionDialogue
from debates.persuasion import services
from participants.models import Participant
from participants.services import exit_url, participant_mark_returned
from tests.support import persuasion as ps
from tests.support.threads import pool_size, run_threads

Status = PersuasionDialogue.Status
Reason = PersuasionDialogue.Reason


@pytest.fixture(autouse=True)
def offline_backend(settings):
    ps.use_offline(settings)


def humans_study(**config):
    return ps.dialogue_study(opponent="human", **config)


def shown(study):
    """A participant who reached the dialogue's page (which seats them); (walker, participant)."""
    w = ps.arrive(study)
    response, _ = w.page()
    assert response.status_code == 200
    return w, ps.person(w)


def wait_out(dialogue: PersuasionDialogue, seconds: int) -> None:
    """The dialogue has waited `seconds` for a partner (its clock moved back)."""
    PersuasionDialogue.objects.filter(pk=dialogue.pk).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )


def paired(study):
    (wa, a), (wb, b) = shown(study), shown(study)
    dialogue = ps.dialogue_of(a)
    return (wa, a), (wb, b), dialogue


STAND_IN_TEXT = "Nobody joined in time, so your opponent is an AI system."
STAND_IN_HIDDEN = f'<p class="notice" id="p-stand-in" hidden>{STAND_IN_TEXT}</p>'
STAND_IN_SHOWN = f'<p class="notice" id="p-stand-in">{STAND_IN_TEXT}</p>'


def test_the_pairing_column_holds_every_pairing():
    width = PersuasionDialogue._meta.get_field("pairing").max_length
    assert all(len(p) <= width for p in ("human_ai", "human_human", "ai_ai"))


@pytest.mark.django_db
class TestPairing:
    def test_two_arrivals_debate_each_other_on_opposite_sides_and_a_third_waits(self):
        study = humans_study()
        (wa, a), (wb, b), dialogue = paired(study)
        assert ps.dialogue_of(b).pk == dialogue.pk
        assert (dialogue.status, dialogue.pairing) == (Status.RUNNING, "human_human")
        assert {dialogue.side_of(a.pk), dialogue.side_of(b.pk)} == {"pro", "con"}
        assert dialogue.pro_agent is None and dialogue.con_agent is None
        assert dialogue.started_at is not None
        wc, c = shown(study)
        waiting = ps.dialogue_of(c)
        assert waiting.pk != dialogue.pk and waiting.status == Status.WAITING
        assert waiting.pro_participant_id == c.pk or waiting.con_participant_id == c.pk
        # The one waiting sees no commitments yet (the page's wording is the template's).
        assert 'id="stores" hidden' in wc.page()[0].content.decode()
        assert 'id="stores" hidden' not in wa.page()[0].content.decode()
        # Two people: the stand-in notice stays hidden.
        assert STAND_IN_HIDDEN in wa.page()[0].content.decode()

    def test_only_the_same_step_of_the_same_study_pairs(self):
        one, two = humans_study(), humans_study()
        _, a = shown(one)
        _, b = shown(two)
        assert ps.dialogue_of(a).status == ps.dialogue_of(b).status == Status.WAITING

    def test_two_people_debate_each_other_to_a_winner(self):
        study = humans_study()
        (wa, a), (wb, b), dialogue = paired(study)
        people = {dialogue.side_of(a.pk): a, dialogue.side_of(b.pk): b}
        for _ in range(3):
            side = services.game_of(ps.fresh(dialogue)).to_move
            ps.say(people[side], dialogue)
            ps.run_turns(dialogue.pk)
        side = services.game_of(ps.fresh(dialogue)).to_move
        winner = "pro" if side == "con" else "con"
        claim = dialogue.topic.claim_of(winner)
        ps.say(people[side], dialogue, f"I concede that {claim[0].lower()}{claim[1:]}")
        ps.run_turns(dialogue.pk)
        ended = ps.fresh(dialogue)
        assert (ended.status, ended.end_reason, ended.winner) == (Status.FINISHED, Reason.CONCEDED, winner)
        assert ended.turns.filter(author="agent").count() == 0
        for w in (wa, wb):
            assert w.submit().status_code == 303
            assert w.page()[1].title == "Thanks"
        outcomes = dict(
            Participant.objects.filter(pk__in=[a.pk, b.pk])
            .filter(responses__key="persuasion_outcome")
            .values_list("pk", "responses__value")
        )
        assert outcomes == {people[winner].pk: "won", people[side].pk: "lost"}


@pytest.mark.django_db
class TestNobodyComes:
    def test_the_agent_takes_the_empty_seat_after_the_wait_and_the_dialogue_runs(self):
        study = humans_study(no_partner="ai", wait_seconds=60)
        w, a = shown(study)
        dialogue = ps.dialogue_of(a)
        design = ps.design_of(study)
        assert services.waiting_resolve(dialogue_id=dialogue.pk, design=design, now=timezone.now()) is None
        assert ps.fresh(dialogue).status == Status.WAITING  # not yet
        assert STAND_IN_HIDDEN in w.page()[0].content.decode()
        wait_out(dialogue, 61)
        page = w.page()[0].content.decode()  # the page notices the wait is over
        # ... and tells the participant who their opponent is now.
        assert STAND_IN_SHOWN in page
        dialogue = ps.fresh(dialogue)
        side = dialogue.side_of(a.pk)
        other = "con" if side == "pro" else "pro"
        assert (dialogue.status, dialogue.pairing) == (Status.RUNNING, "human_ai")
        assert dialogue.agent_of(other).name == "demo-yielding"
        ended = ps.debate_to_end({side: a}, dialogue)
        assert (ended.status, ended.winner, ended.end_reason) == (Status.FINISHED, side, Reason.CONCEDED)
        assert w.submit().status_code == 303
        assert w.page()[1].title == "Thanks"
        # Someone arriving now finds no seat to take: they wait in a dialogue of their own.
        _, late = shown(study)
        assert ps.dialogue_of(late).status == Status.WAITING

    def test_an_approved_design_may_leave_the_stand_in_untold(self):
        study = humans_study(no_partner="ai", wait_seconds=60, tell_stand_in=False)
        w, a = shown(study)
        wait_out(ps.dialogue_of(a), 61)
        page = w.page()[0].content.decode()
        assert ps.fresh(ps.dialogue_of(a)).pairing == "human_ai"
        assert 'id="p-stand-in"' not in page and STAND_IN_TEXT not in page

    def test_with_a_polite_exit_the_participant_leaves_with_the_no_partner_code(self):
        study = humans_study(no_partner="exit", no_partner_code="CNOBODY", wait_seconds=60)
        w, a = shown(study)
        dialogue = ps.dialogue_of(a)
        wait_out(dialogue, 61)
        page = w.page()[0].content.decode()
        assert "No partner became free in time." in page
        dialogue = ps.fresh(dialogue)
        assert (dialogue.status, dialogue.end_reason) == (Status.ABANDONED, Reason.NO_PARTNER)
        assert dialogue.ended_by == ("con" if dialogue.side_of(a.pk) == "pro" else "pro")
        response = w.submit()
        a.refresh_from_db()
        assert (a.status, a.exit_code) == (Participant.Status.COMPLETED, "CNOBODY")
        assert exit_url(a).endswith("CNOBODY")
        assert response["Location"] == exit_url(a)
        assert a.responses.get(key="persuasion_outcome").value == "abandoned"

    def test_a_partner_arriving_after_the_polite_exit_is_not_seated_in_it(self):
        study = humans_study(no_partner="exit", no_partner_code="CNOBODY", wait_seconds=60)
        w, a = shown(study)
        wait_out(ps.dialogue_of(a), 61)
        w.page()
        _, b = shown(study)
        assert ps.dialogue_of(b).pk != ps.dialogue_of(a).pk


@pytest.mark.django_db
class TestPartnerGone:
    def test_a_partner_who_returns_the_study_ends_it_and_the_other_completes_with_the_code(self):
        study = humans_study(partner_left_code="CLEFT")
        (wa, a), (wb, b), dialogue = paired(study)
        participant_mark_returned(participant=a)
        response = wb.submit()
        dialogue = ps.fresh(dialogue)
        assert (dialogue.status, dialogue.end_reason) == (Status.ABANDONED, Reason.PARTNER_LEFT)
        assert dialogue.ended_by == dialogue.side_of(a.pk)
        b.refresh_from_db()
        assert (b.status, b.exit_code) == (Participant.Status.COMPLETED, "CLEFT")
        assert response["Location"] == exit_url(b) and exit_url(b).endswith("cc=CLEFT")
        assert b.responses.get(key="persuasion_outcome").value == "abandoned"

    def test_a_silent_partner_ends_it_and_the_other_completes_with_the_code(self):
        study = humans_study(partner_left_code="CLEFT", silence_seconds=60)
        (wa, a), (wb, b), dialogue = paired(study)
        silent = services.game_of(dialogue).to_move
        quiet = ps.fresh(dialogue).last_move_at + timedelta(seconds=60)
        assert services.dialogue_check(dialogue_id=dialogue.pk, now=quiet)
        dialogue = ps.fresh(dialogue)
        assert (dialogue.end_reason, dialogue.ended_by) == (Reason.PARTNER_SILENT, silent)
        talker, talker_walker = (b, wb) if dialogue.side_of(a.pk) == silent else (a, wa)
        talker_walker.submit()
        talker.refresh_from_db()
        assert (talker.status, talker.exit_code) == (Participant.Status.COMPLETED, "CLEFT")

    def test_the_one_to_reply_is_told_the_seconds_left_and_each_side_why_it_ended(self):
        """The silent participant's partner read 'Your partner left the dialogue' (they had
        not left), and nothing told the one to reply that a limit was running."""
        study = humans_study(silence_seconds=60)
        _, _, dialogue = paired(study)
        silent = services.game_of(dialogue).to_move
        talker = "con" if silent == "pro" else "pro"
        fresh = ps.fresh(dialogue)
        assert 50 <= services.snapshot_for(fresh, silent, {})["silence_left"] <= 60
        assert services.snapshot_for(fresh, talker, {})["silence_left"] is None
        assert services.dialogue_check(
            dialogue_id=dialogue.pk, now=fresh.last_move_at + timedelta(seconds=60)
        )
        ended = ps.fresh(dialogue)
        assert services.outcome_text(ended, talker) == (
            "Your partner did not reply in time. Thank you: press Continue to go on."
        )
        assert (
            services.outcome_text(ended, silent)
            == "The dialogue ended because no reply came from you in time."
        )

    def test_without_a_code_the_remaining_participant_goes_on_with_the_study(self):
        study = humans_study(partner_left_code="")
        (wa, a), (wb, b), dialogue = paired(study)
        participant_mark_returned(participant=a)
        wb.submit()
        b.refresh_from_db()
        assert b.status == Participant.Status.ACTIVE and not b.exit_code
        assert wb.page()[1].title == "Thanks"

    def test_the_one_who_fell_silent_gets_no_completion_code(self):
        study = humans_study(partner_left_code="CLEFT")
        pair = dict(zip(("a", "b"), paired(study)[:2], strict=True))
        dialogue = ps.dialogue_of(pair["a"][1])
        silent = "a" if dialogue.side_of(pair["a"][1].pk) == "pro" else "b"  # pro moves first
        later = dialogue.last_move_at + timedelta(seconds=dialogue.silence_seconds + 1)
        assert services.dialogue_check(dialogue_id=dialogue.pk, now=later)
        walker, person = pair[silent]
        walker.submit()
        person.refresh_from_db()
        assert person.exit_code != "CLEFT"
        assert person.responses.get(key="persuasion_outcome").value == "abandoned"


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_many_arrivals_at_once_are_paired_two_by_two():
    study = humans_study()
    count = 9
    people = [ps.person(ps.arrive(study)) for _ in range(count)]
    design = ps.design_of(study)

    def arrive(n: int) -> None:
        services.dialogue_assign(
            participant=people[n], position=ps.POSITION, design=design, now=timezone.now()
        )

    with pool_size(count + 4):
        errors = run_threads(arrive, count)
    assert not errors, errors[0]
    dialogues = list(PersuasionDialogue.objects.filter(study=study))
    seats = [p for d in dialogues for p in (d.pro_participant_id, d.con_participant_id) if p]
    assert sorted(seats) == sorted(p.pk for p in people)  # everyone seated, once
    assert sum(d.status == Status.WAITING for d in dialogues) == 1  # never two waiting
    running = [d for d in dialogues if d.status == Status.RUNNING]
    assert len(running) == count // 2
    assert all(d.pro_participant_id and d.con_participant_id for d in running)


@pytest.mark.django_db
def test_studies_running_before_the_notice_existed_keep_their_page():
    """The migration that brought `tell_stand_in` writes it off for locked studies (their
    participants so far saw no notice), and leaves drafts to the new default."""
    import importlib

    from django.apps import apps

    from studies.models import Step, Study

    migration = importlib.import_module("debates.migrations.0011_tell_stand_in_kept_off_where_running")
    running, draft = humans_study(), humans_study()
    Study.objects.filter(pk=running.pk).update(locked_at=timezone.now())
    Study.objects.filter(pk=draft.pk).update(locked_at=None)
    for study in (running, draft):
        step = Step.objects.get(study=study, kind="persuasion_dialogue")
        step.config.pop("tell_stand_in", None)
        step.save()
    migration.keep_running_studies_as_they_were(apps, None)
    kept = Step.objects.get(study=running, kind="persuasion_dialogue").config
    new = Step.objects.get(study=draft, kind="persuasion_dialogue").config
    assert kept["tell_stand_in"] is False and "tell_stand_in" not in new
    assert ps.design_of(draft) and registry_config(draft)["tell_stand_in"] is True


def registry_config(study) -> dict:
    from studies import registry
    from studies.models import Step

    return registry.get("persuasion_dialogue").config(
        Step.objects.get(study=study, kind="persuasion_dialogue")
    )
