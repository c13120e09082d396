"""Pairwise persuasiveness comparisons (design D): the sampler, the annotator's session,
quotas, attention checks, import/export, the ranking and the export."""

import csv
import io
import json
import random
import re
import secrets
from collections import Counter
from datetime import timedelta
from itertools import combinations

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from analysis.metrics.ranking import bradley_terry, win_matrix
from common.downloads import csv_line
from debates.demo import loader
from debates.imports import ImportInvalid
from debates.models import Comparison, Dialogue, Instance, InstanceSet
from debates.pairwise.imports import set_csv_lines, set_import, set_json
from debates.pairwise.sampler import ExcerptSpec, dialogue_excerpts, sample_instances
from debates.pairwise.services import CHECKS, comparisons_assign, valid_per_instance, with_checks
from participants.models import Participant
from participants.services import participant_enter, participant_mark_returned, release_expired_leases
from studies.models import Step
from tests.support.cast import Walker
from tests.support.downloads import streamed_body

# --- The sampler (no database) -------------------------------------------------------------


def excerpts(interlocutors=("x", "y", "z", "w"), stances=("left", "right"), debates=3, per_debate=2):
    specs = []
    for who in interlocutors:
        for stance in stances:
            for d in range(debates):
                for n in range(per_debate):
                    specs.append(
                        ExcerptSpec(
                            key=f"{who}-{stance}-{d}-{n}",
                            debate=f"{who}-{stance}-{d}",
                            speaker_a=who,
                            speaker_b="someone",
                            stance=stance,
                            turns=({"speaker": "A", "text": "t"},),
                        )
                    )
    return specs


def test_every_pair_of_interlocutors_gets_m_instances_half_per_stance():
    sample = sample_instances(excerpts(), per_pair=6, seed=7)
    assert not sample.shortfalls
    per_pair = Counter(frozenset((a.speaker_a, b.speaker_a)) for a, b, _ in sample.pairs)
    assert set(per_pair) == {frozenset(p) for p in combinations("xyzw", 2)}
    assert set(per_pair.values()) == {6}
    per_stance = Counter((frozenset((a.speaker_a, b.speaker_a)), s) for a, b, s in sample.pairs)
    assert set(per_stance.values()) == {3}


def test_instances_pair_different_debates_same_stance_without_replacement():
    sample = sample_instances(excerpts(), per_pair=6, seed=7)
    keys = [frozenset((a.key, b.key)) for a, b, _ in sample.pairs]
    assert len(keys) == len(set(keys))
    for a, b, stance in sample.pairs:
        assert a.debate != b.debate
        assert a.stance == b.stance == stance
        assert a.speaker_a != b.speaker_a


def test_the_same_seed_rebuilds_the_same_set_and_another_seed_does_not():
    def shape(sample):
        return [(a.key, b.key, s) for a, b, s in sample.pairs]

    assert shape(sample_instances(excerpts(), 6, seed=3)) == shape(sample_instances(excerpts(), 6, seed=3))
    assert shape(sample_instances(excerpts(), 6, seed=3)) != shape(sample_instances(excerpts(), 6, seed=4))
    shuffled = list(reversed(excerpts()))
    assert shape(sample_instances(shuffled, 6, seed=3)) == shape(sample_instances(excerpts(), 6, seed=3))


def test_an_odd_m_and_too_few_candidates_are_handled_and_reported():
    sample = sample_instances(excerpts(interlocutors=("x", "y"), debates=1, per_debate=1), per_pair=5, seed=1)
    assert len(sample.pairs) == 2  # one candidate per stance
    assert {s["stance"] for s in sample.shortfalls} == {"left", "right"}
    assert sum(s["wanted"] for s in sample.shortfalls) == 5


@pytest.mark.django_db
def test_dialogue_excerpts_take_each_sides_view_and_interlocutor():
    from debates.demo.mystery import CASES_FILE
    from debates.dialogues.imports import cases_import

    cases_import(text=CASES_FILE.read_text())
    d = Dialogue.objects.get(slug="lighthouse-ledger-anchoring-culprit")
    specs = dialogue_excerpts([d], 4)
    assert [s.key.split(":", 2)[2] for s in specs] == ["A:1", "A:3", "B:2"]
    for s in specs:
        assert [t["speaker"] for t in s.turns] == ["A", "B", "A", "B"]
        focus = s.key.split(":")[2]
        assert s.speaker_a == ("anchoring" if d.active_side_letter == focus else "baseline")
        assert s.stance == (d.side_a if focus == "A" else d.side_b)
    b_view = specs[2]
    assert b_view.turns[0]["text"] == d.turns.get(number=2).text  # side B's opening, as Speaker A


@pytest.mark.django_db
def test_finished_live_debates_give_excerpts_by_debater_configuration(claim_study):
    from debates.live import services as live_services
    from debates.models import DebaterConfig, LiveSession
    from debates.pairwise.sampler import live_excerpts
    from tests.support.live import drain_turns

    w = Walker(claim_study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    session = LiveSession.objects.get()
    other = DebaterConfig.objects.create(name="rival-config", model="m")
    LiveSession.objects.filter(pk=session.pk).update(protocol="debate", side_a="true", debater_b=other)
    w.submit({"answer": "true", "confidence": "50"})
    for _ in range(3):
        drain_turns(session.pk)
        session.refresh_from_db()
        if live_services.judge_may_write(session, list(session.turns.all())):
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text="", target="pass"
            )
    session = LiveSession.objects.select_related("claim", "debater_a", "debater_b").get()
    specs = live_excerpts([session], 4)
    assert {s.speaker_a for s in specs} == {"demo-debater", "rival-config"}
    for s in specs:
        assert [t["speaker"] for t in s.turns] == ["A", "B", "A", "B"]  # the judge's turns left out
        assert s.stance == ("true" if s.speaker_a == "demo-debater" else "false")
        assert s.topic == session.claim.text


# --- The annotator's session -----------------------------------------------------------------


def test_checks_land_at_random_positions_among_the_instances():
    chosen, spare = [11, 12, 13], [20, 21, 22, 23]
    check_slots = set()
    for seed in range(12):
        items = with_checks(chosen, spare, 2, random.Random(seed))
        assert sorted(i for i, check in items if check is None) == chosen
        assert [check is not None for _, check in items].count(True) == 2
        assert all(i in spare and check in CHECKS for i, check in items if check is not None)
        check_slots.add(tuple(n for n, (_, check) in enumerate(items, start=1) if check is not None))
    assert len(check_slots) > 3  # the twelve seeds put the checks in different slots


@pytest.mark.django_db
def test_assignment_draws_check_positions_from_the_generator_it_is_given(pairs_study):
    step = Step.objects.get(study=pairs_study, kind="pairwise")
    pool = InstanceSet.objects.get()

    def check_slots(seed: int) -> tuple[int, ...]:
        participant = participant_enter(study=pairs_study, prolific_pid=secrets.token_hex(12))
        comparisons_assign(
            participant=participant,
            position=step.position,
            instance_set=pool,
            per_annotator=3,
            checks=2,
            now=timezone.now(),
            rng=random.Random(seed),
        )
        rows = Comparison.objects.filter(participant=participant).order_by("order")
        return tuple(c.order for c in rows if c.is_check)

    slots = [check_slots(seed) for seed in range(8)]
    assert len(set(slots)) > 1 and all(len(s) == 2 for s in slots)
    assert check_slots(3) == slots[3]  # the same seed, the same places (with fresh fill)


def comparisons_of(w: Walker) -> list[Comparison]:
    return list(Comparison.objects.filter(participant__prolific_pid=w.pid).order_by("order"))


@pytest.mark.django_db
class TestSession:
    def test_an_annotator_gets_n_instances_and_j_checks_and_completes(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.walk()
        assert w.exit_url.endswith("cc=CPAIRDONE")
        items = comparisons_of(w)
        assert len(items) == 5 and sum(c.is_check for c in items) == 2
        assert all(c.answered_at and c.choice and c.confidence for c in items)
        assert all(c.check_passed for c in items if c.is_check)
        assert len({c.instance_id for c in items if not c.is_check}) == 3

    def test_the_page_shows_both_excerpts_in_the_recorded_order_and_the_papers_questions(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.submit()  # consent
        response, form = w.page()
        html = response.content.decode()
        first = comparisons_of(w)[0]
        shown = (
            [first.instance.excerpt_2, first.instance.excerpt_1]
            if first.swapped
            else [
                first.instance.excerpt_1,
                first.instance.excerpt_2,
            ]
        )
        assert html.index(shown[0].turns[0]["text"][:40].replace("'", "&#x27;")) < html.index(
            shown[1].turns[0]["text"][:40].replace("'", "&#x27;")
        )
        assert (
            "Based only on the debate transcripts, which Speaker A presented the more persuasive arguments?"
            in html
        )
        assert "Very unsure" in html and "Very confident" in html
        assert ("ATTENTION CHECK" in html) == first.is_check
        assert set(form.radios["choice"]) == {"debate1", "debate2", "equal"}

    def test_an_answer_is_stored_in_the_instances_own_terms(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.walk(stop_before="About you", answers={"Compare the two Speaker As": {"confidence": "4"}})
        for c in comparisons_of(w):
            if not c.is_check:
                assert c.choice == "debate1"
                assert c.winner == ("2" if c.swapped else "1")
                assert c.confidence == 4

    def test_a_stale_page_stores_nothing(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.submit()
        _, first = w.page()
        w.submit(form=first)
        response = w.client.post(w.url, {**first.hidden, "choice": "equal", "confidence": "1"})
        assert response["Location"].endswith("?moved=1")
        assert comparisons_of(w)[0].choice != "equal" or comparisons_of(w)[0].is_check

    def test_failing_two_checks_ends_with_the_failed_check_code_and_keeps_the_answers(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.submit()
        wrong = {"debate1": "debate2", "debate2": "equal", "equal": "debate1"}
        for _ in range(5):
            _, form = w.page()
            if not form.position:
                break
            current = Comparison.objects.get(participant__prolific_pid=w.pid, order=form.hidden["_item"])
            choice = wrong[current.check_answer] if current.is_check else "debate2"
            w.submit({"choice": choice}, form)
            if w.exit_url:
                break
        assert not w.exit_url  # explained on a page of ours first, with the code and a button
        page = w.client.get(w.url).content.decode()
        assert 'href="https://app.prolific.com/submissions/complete?cc=CPAIRFAIL"' in page
        p = Participant.objects.get(prolific_pid=w.pid)
        assert p.status == Participant.Status.FAILED_CHECK and p.excluded
        assert [c.check_passed for c in comparisons_of(w) if c.is_check and c.answered_at] == [False, False]


# --- Quotas ------------------------------------------------------------------------------------


@pytest.mark.django_db
class TestQuotas:
    def test_instances_fill_to_exactly_r_and_late_arrivals_are_told_politely(self, db):
        study = loader.pairs_study(set_overrides={"annotations_per_instance": 1})
        pool = InstanceSet.objects.get()
        capacity = pool.instances.count()
        walkers = []
        for _ in range(capacity):  # 3 instances each: ceil(capacity / 3) annotators fill it
            w = Walker(study)
            w.enter()
            w.walk()
            walkers.append(w)
            if sum(valid_per_instance(pool).values()) == capacity:
                break
        assert set(valid_per_instance(pool).values()) == {1}
        late = Walker(study)
        late.enter()
        late.submit()
        page = late.page()[0].content.decode()
        assert "this study is full" in page

    def test_no_annotator_sees_an_instance_twice_even_across_studies_sharing_the_pool(self, db):
        first = loader.pairs_study(set_overrides={"annotations_per_instance": 50})
        second = loader.pairs_study(slug="persuasion-pairs-2")
        pid = "ab" * 12
        seen = []
        for study in (first, second):
            w = Walker(study, prolific_pid=pid)
            w.enter()
            w.walk()
            seen += [
                c.instance_id for c in Comparison.objects.filter(participant__study=study, is_check=False)
            ]
        assert len(seen) == 6 and len(set(seen)) == 6

    def test_failed_returned_and_timed_out_annotators_free_their_instances(self, db):
        study = loader.pairs_study(set_overrides={"annotations_per_instance": 1})
        pool = InstanceSet.objects.get()
        Instance.objects.filter(instance_set=pool, number__gt=3).delete()  # exactly one annotator's worth
        holder = Walker(study)
        holder.enter()
        holder.walk(stop_before="Compare the two Speaker As")
        holder.page()
        blocked = Walker(study)
        blocked.enter()
        blocked.submit()
        assert "this study is full" in blocked.page()[0].content.decode()
        participant_mark_returned(participant=Participant.objects.get(prolific_pid=holder.pid))
        newcomer = Walker(study)
        newcomer.enter()
        newcomer.walk()
        assert newcomer.exit_url.endswith("cc=CPAIRDONE")
        assert set(valid_per_instance(pool).values()) == {1}

    def test_a_timed_out_annotator_whose_instances_were_taken_is_told_so(self, db):
        study = loader.pairs_study(set_overrides={"annotations_per_instance": 1})
        pool = InstanceSet.objects.get()
        Instance.objects.filter(instance_set=pool, number__gt=3).delete()
        late = Walker(study)
        late.enter()
        late.walk(stop_before="Compare the two Speaker As")
        late.page()
        Participant.objects.filter(prolific_pid=late.pid).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        release_expired_leases()
        replacement = Walker(study)
        replacement.enter()
        replacement.walk()
        assert "time limit has passed" in late.page()[0].content.decode()


# --- Import, export, ranking -------------------------------------------------------------------


def bad_set_problems(text: str) -> list[str]:
    with pytest.raises(ImportInvalid) as info:
        set_import(text=text)
    return [str(p) for p in info.value.problems]


@pytest.mark.django_db
class TestInstanceSetFiles:
    def test_json_and_csv_round_trip(self, pairs_study):
        pool = InstanceSet.objects.get()
        text = set_json(pool)
        copy = json.loads(text)
        copy["set"]["slug"] = "copied"
        imported = set_import(text=json.dumps(copy))
        original = [(i.number, i.excerpt_1.key, i.excerpt_2.key) for i in pool.instances.order_by("number")]
        assert [
            (i.number, i.excerpt_1.key, i.excerpt_2.key) for i in imported.instances.order_by("number")
        ] == original
        target = InstanceSet.objects.create(slug="from-csv", title="From CSV")
        set_import(text="".join(set_csv_lines(pool)), filename="pairs.csv", into=target)
        assert [
            (i.number, i.excerpt_1.key, i.excerpt_2.key) for i in target.instances.order_by("number")
        ] == original
        first = target.instances.get(number=1).excerpt_1
        assert first.turns == pool.excerpts.get(key=first.key).turns

    def test_a_pair_of_one_interlocutor_against_itself_is_refused(self, pairs_study):
        """Paper 003 compares every pair of interlocutors; one against itself counted its own wins
        (the report's record and win-matrix diagonal)."""
        pool = InstanceSet.objects.get()
        doc = json.loads(set_json(pool))
        doc["set"]["slug"] = "selves"
        first = doc["instances"][0]
        by_key = {e["key"]: e for e in doc["excerpts"]}
        by_key[first["excerpt_2"]]["speaker_a"] = by_key[first["excerpt_1"]]["speaker_a"]
        with pytest.raises(ImportInvalid) as refused:
            set_import(text=json.dumps(doc))
        name = by_key[first["excerpt_1"]]["speaker_a"]
        assert any(f"both excerpts' Speaker A is {name!r}" in str(p) for p in refused.value.problems)
        rows = list(csv.reader(io.StringIO("".join(set_csv_lines(pool)))))
        header, row = rows[0], rows[1]
        row[header.index("excerpt_2_speaker_a")] = row[header.index("excerpt_1_speaker_a")]
        text = "".join(csv_line(r, guard=False) for r in [header, row])
        target = InstanceSet.objects.create(slug="selves-csv", title="From CSV")
        with pytest.raises(ImportInvalid) as refused:
            set_import(text=text, filename="pairs.csv", into=target)
        assert [str(p) for p in refused.value.problems] == [
            f"line 2: both excerpts' Speaker A is {row[header.index('excerpt_1_speaker_a')]!r}: a pair "
            "compares two different interlocutors"
        ]

    def test_the_csv_export_is_guarded_against_formulas_and_imports_back_as_written(self, pairs_study):
        """The set's text comes from an imported file: a spreadsheet opening the export must not
        run it, and the export must still import as it was."""
        pool = InstanceSet.objects.get()
        excerpt = pool.instances.get(number=1).excerpt_1
        topic, speaker = '=HYPERLINK("http://evil.example","click")', "@SUM(1+1)"
        pool.excerpts.filter(debate=excerpt.debate).update(topic=topic, speaker_a=speaker)
        text = "".join(set_csv_lines(pool))
        rows = list(csv.DictReader(io.StringIO(text)))
        row = next(r for r in rows if r["excerpt_1_key"] == excerpt.key)
        assert (row["excerpt_1_topic"], row["excerpt_1_speaker_a"]) == ("'" + topic, "'" + speaker)
        assert not any(cell[:1] in "=+@" for r in rows for cell in r.values())
        target = InstanceSet.objects.create(slug="from-guarded-csv", title="From CSV")
        set_import(text=text, filename="pairs.csv", into=target)
        copied = target.instances.get(number=1).excerpt_1
        assert (copied.topic, copied.speaker_a) == (topic, speaker)

    def test_a_json_pool_without_instances_is_sampled_with_its_seed(self, pairs_study):
        pool = InstanceSet.objects.get()
        doc = json.loads(set_json(pool))
        del doc["instances"]
        doc["set"]["slug"] = "resampled"
        again = set_import(text=json.dumps(doc))
        assert [(i.excerpt_1.key, i.excerpt_2.key) for i in again.instances.order_by("number")] == [
            (i.excerpt_1.key, i.excerpt_2.key) for i in pool.instances.order_by("number")
        ]

    def test_bad_files_name_the_line_and_import_nothing(self, pairs_study):
        doc = json.loads(set_json(InstanceSet.objects.get()))
        doc["set"]["slug"] = "broken"
        doc["instances"][0]["excerpt_2"] = doc["instances"][0]["excerpt_1"]  # same debate
        doc["instances"][1]["excerpt_1"] = "nope"
        text = json.dumps(doc, indent=1)
        with pytest.raises(ImportInvalid) as info:
            set_import(text=text)
        problems = [str(p) for p in info.value.problems]
        assert any("instances[0]: the two excerpts come from the same debate" in p for p in problems)
        assert any("instances[1].excerpt_1: no excerpt with key 'nope'" in p for p in problems)
        assert all(p.startswith("line ") for p in problems)
        assert not InstanceSet.objects.filter(slug="broken").exists()
        lines = list(csv.reader(io.StringIO("".join(set_csv_lines(InstanceSet.objects.get())))))
        lines[2][8] = "no speaker here"  # excerpt 1 turns of the second instance
        out = io.StringIO()
        csv.writer(out).writerows(lines)
        target = InstanceSet.objects.create(slug="target", title="t")
        with pytest.raises(ImportInvalid) as info:
            set_import(text=out.getvalue(), filename="x.csv", into=target)
        assert "excerpt_1_turns: write each turn as 'A: text' or 'B: text'" in str(info.value.problems[0])

    def test_numbers_past_their_fields_range_are_refused_and_nothing_is_written(self, pairs_study):
        doc = json.loads(set_json(InstanceSet.objects.get()))
        doc["set"].update(slug="too-big", seed=4294967301, excerpt_turns=65540, per_pair=0)
        doc["instances"][0]["number"] = -1
        doc["instances"][1]["number"] = 2**31
        problems = bad_set_problems(json.dumps(doc, indent=1))
        assert all(p.startswith("line ") for p in problems)
        for expected in [
            "set.seed: must be a whole number from 1 to 2147483647",
            "set.excerpt_turns: must be a whole number from 1 to 32767",
            "set.per_pair: must be a whole number from 1 to 32767",
            "instances[0].number: must be a whole number from 0 to 2147483647",
            "instances[1].number: must be a whole number from 0 to 2147483647",
        ]:
            assert any(p.endswith(expected) for p in problems), expected
        assert not InstanceSet.objects.filter(slug="too-big").exists()

    def test_a_csv_instance_number_must_be_ascii_digits_in_range_and_unique(self, pairs_study):
        lines = list(csv.reader(io.StringIO("".join(set_csv_lines(InstanceSet.objects.get())))))
        lines[1][0], lines[2][0], lines[3][0], lines[4][0] = "\u00b2", str(2**31), "01", "1"
        out = io.StringIO()
        csv.writer(out).writerows(lines)
        target = InstanceSet.objects.create(slug="target", title="t")
        with pytest.raises(ImportInvalid) as info:
            set_import(text=out.getvalue(), filename="x.csv", into=target)
        assert [f"{p.path}: {p.message}" for p in info.value.problems] == [
            "number: must be a whole number",
            "number: must be a whole number from 0 to 2147483647",
            "number: number 1 appears twice",
        ]
        assert not target.instances.exists()

    @pytest.mark.postgres
    def test_on_postgresql_a_number_that_would_wrap_is_refused_not_stored_wrapped(self, pairs_study):
        """PostgreSQL binds 4294967301 as a 4-byte integer, 5, and 65540 as a 2-byte one, 4:
        the set was stored with them and reported imported. 65535 wrapped to -1 and broke the
        field's check constraint (a 500)."""
        pool = InstanceSet.objects.get()
        for slug, seed, turns in [("wrapped", 4294967301, 65540), ("negative", 1, 65535)]:
            doc = json.loads(set_json(pool))
            doc["set"].update(slug=slug, seed=seed, excerpt_turns=turns)
            del doc["instances"]
            problems = bad_set_problems(json.dumps(doc, indent=1))
            assert any("set.excerpt_turns: must be a whole number from 1 to 32767" in p for p in problems)
            assert not InstanceSet.objects.filter(slug=slug).exists()
        assert InstanceSet.objects.get() == pool

    def test_the_import_command_reads_a_json_set_and_names_the_lines_of_a_bad_one(
        self, pairs_study, tmp_path
    ):
        doc = json.loads(set_json(InstanceSet.objects.get()))
        doc["set"]["slug"] = "from-command"
        good = tmp_path / "set.json"
        good.write_text(json.dumps(doc, indent=1))
        out = io.StringIO()
        call_command("import_instances", str(good), stdout=out)
        assert f"'from-command': {len(doc['instances'])} instances" in out.getvalue()
        doc["set"]["slug"] = "Bad Slug"
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(doc, indent=1))
        with pytest.raises(CommandError, match=r"line \d+, set\.slug: use lowercase letters"):
            call_command("import_instances", str(bad))
        as_csv = tmp_path / "set.csv"
        as_csv.write_text("".join(set_csv_lines(InstanceSet.objects.get(slug="from-command"))))
        with pytest.raises(CommandError, match="give a .json file"):
            call_command("import_instances", str(as_csv))

    def test_a_set_annotators_have_used_cannot_be_rebuilt(self, pairs_study):
        w = Walker(pairs_study)
        w.enter()
        w.walk()
        pool = InstanceSet.objects.get()
        with pytest.raises(ImportInvalid):
            set_import(text=set_json(pool))


def test_the_win_matrix_splits_ties_and_the_ranking_follows_the_wins():
    outcomes = [("a", "b", "1")] * 6 + [("b", "c", "1")] * 6 + [("a", "c", "tie")] * 2 + [("c", "a", "2")] * 4
    labels, wins = win_matrix(outcomes)
    assert labels == ["a", "b", "c"]
    assert wins[0, 1] == 6 and wins[1, 2] == 6
    assert wins[0, 2] == 1 + 4 and wins[2, 0] == 1
    ranking = bradley_terry(labels, wins)
    assert [label for label, _ in ranking.ordered()] == ["a", "b", "c"]
    assert abs(ranking.strengths.mean()) < 1e-9
    with pytest.raises(ValueError):
        win_matrix([("a", "b", "both")])
    assert np.all(bradley_terry(["a", "b"], np.zeros((2, 2))).strengths == 0)


@pytest.mark.django_db
def test_the_ranking_page_and_the_comparisons_export(experimenter, pairs_study):
    for _ in range(2):
        w = Walker(pairs_study)
        w.enter()
        w.walk()
    client = experimenter
    pool = InstanceSet.objects.get()
    page = client.get(f"/admin/debates/instanceset/{pool.pk}/ranking/").content.decode()
    assert "6 valid comparisons" in page and "Bradley–Terry ranking" in page and "baseline" in page
    # The win matrix's rows and columns are both in rank order: its diagonal is empty.
    matrix = page.split("<h2>Win matrix</h2>")[1].split("</table>")[0]
    header = re.findall(r"<th>([^<]+)</th>", matrix.split("</thead>")[0])
    body_rows = re.findall(r"<tr><th>([^<]+)</th>(.*?)</tr>", matrix.split("<tbody>")[1])
    assert header == [label for label, _cells in body_rows]
    for n, (_label, cells) in enumerate(body_rows):
        assert re.findall(r"<td>([^<]*)</td>", cells)[n] == "0"
    overview = client.get(f"/admin/studies/study/{pairs_study.pk}/overview/").content.decode()
    assert "Pairwise comparisons: instance set demo-pairs" in overview
    assert f"6 of {pool.instances.count() * 3} valid annotations" in overview
    rows = list(
        csv.DictReader(
            io.StringIO(
                streamed_body(client.get(f"/admin/studies/study/{pairs_study.pk}/export/comparisons.csv"))
            )
        )
    )
    assert len(rows) == 10
    real = [r for r in rows if r["is_check"] == "0"]
    assert all(r["valid"] == "1" for r in real)
    for r in real:
        expected = r["interlocutor_2"] if r["shown_first"] == "2" else r["interlocutor_1"]
        assert r["winner_interlocutor"] == expected  # every answer was "Debate 1"
    assert all(r["check_passed"] == "1" for r in rows if r["is_check"] == "1")


@pytest.mark.django_db
def test_a_new_pairwise_step_shows_no_instance_set_as_chosen(pairs_study):
    """The step's form showed the first set as selected while none was saved, and going live
    then said 'instance_set: This field is required' (the researcher walk)."""
    from debates.pairwise.steps import PairwiseConfig

    form = PairwiseConfig()
    html = str(form["instance_set"])
    assert html.index('<option value="" selected>') < html.index('<option value="demo-pairs">')
    assert not PairwiseConfig(data={"per_annotator": 3, "checks": 2, "button_label": "Go"}).is_valid()
