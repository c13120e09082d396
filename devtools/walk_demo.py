"""Walk simulated participants through the demo studies of a running server, over HTTP and
websockets as browsers would: `python -m devtools.walk_demo --base-url http://127.0.0.1:8000`.

The walking is the pilots' (`pilots.walker`, `pilots.policies`: pages parsed, forms posted,
the live conversation and the persuasion dialogue over their websockets). Unlike a pilot,
this walker runs beside the server with the same environment and reads the database to
answer as an attentive participant mostly would: it knows the attention checks' expected
answers and the cases' recall answers, and answers them right most of the time; it moves a
dialogue's start back so reading looks human. Its participants are real ones (not pilots),
so the demo studies' overviews, exports and reports have data to show.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
from datetime import timedelta

from pilots.pages import StepForm
from pilots.policies import ScriptedPolicy
from pilots.walker import SimulatedParticipant

DEMO_STUDIES = ("mystery-debate", "claim-debate", "persuasion-pairs", "persuasion-live")


class DemoPolicy(ScriptedPolicy):
    """The scripted answers, plus what the database knows (checks, recall, the culprit)."""

    def answers(self, form: StepForm, person: SimulatedParticipant) -> dict[str, str]:
        chosen = super().answers(form, person)
        if form.kind == "consent":
            chosen["consent"] = "yes" if person.rng.random() < 0.97 else "no"
        chosen.update(self.known_answers(form, person))
        if form.kind == "dialogue":
            self.read_for(person, person.rng.randint(150, 420))
        return chosen

    def known_answers(self, form: StepForm, person: SimulatedParticipant) -> dict:
        """Checks, recall and the pairwise checks answered as instructed, if attentive."""
        from debates.models import Comparison, DialogueAssignment
        from studies.models import Question

        if not person.attentive and person.rng.random() < 0.5:
            return {}
        found = {}
        for q in Question.objects.filter(step__study__slug=person.slug, key__in=list(form.radios)):
            if q.is_check:
                found[q.key] = person.rng.choice(q.expected_list)
        assignment = DialogueAssignment.objects.filter(
            participant__study__slug=person.slug, participant__prolific_pid=person.pid
        ).first()
        if form.kind == "recall_check" and assignment is not None:
            recall = assignment.dialogue.case.recall
            found["answer"] = recall.get("answer") or assignment.dialogue.suspect_for("A")
        if form.kind == "judgement" and assignment is not None and person.rng.random() < 0.62:
            found["side"] = assignment.dialogue.culprit_side
        if form.kind == "pairwise":
            current = Comparison.objects.filter(
                participant__study__slug=person.slug,
                participant__prolific_pid=person.pid,
                order=form.hidden.get("_item"),
            ).first()
            if current is not None and current.is_check:
                found["choice"] = current.check_answer
        return found

    def read_for(self, person: SimulatedParticipant, seconds: int) -> None:
        """Read the dialogue at a human pace without waiting minutes: the step's start is
        moved back by the reading time, which the browser's timer then reports too."""
        from django.utils import timezone

        from participants.models import Participant

        started = timezone.now() - timedelta(seconds=seconds)
        Participant.objects.filter(study__slug=person.slug, prolific_pid=person.pid).update(shown_at=started)
        person.reading_ms = seconds * 1000 - person.rng.randint(0, 20_000)


def walk_one(base_url: str, slug: str, rng: random.Random) -> str:
    """One participant to the end; the ending (the Prolific URL or "finished page")."""
    outcome = SimulatedParticipant(base_url, slug, rng, DemoPolicy()).run()
    if outcome.stuck is not None:
        stuck = outcome.stuck
        raise RuntimeError(f"{slug}: stuck at step {stuck.position} {stuck.title!r}: {stuck.reason}")
    return outcome.ending


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--participants", type=int, default=12, help="per study (default 12)")
    parser.add_argument("--studies", nargs="*", default=list(DEMO_STUDIES))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line a request otherwise
    rng = random.Random(args.seed)
    for slug in args.studies:
        endings: dict[str, int] = {}
        for _ in range(args.participants):
            ending = walk_one(args.base_url, slug, random.Random(rng.random()))
            code = ending.split("cc=")[-1] if "cc=" in ending else ending
            endings[code] = endings.get(code, 0) + 1
        print(f"{slug}: {args.participants} participants; endings {dict(sorted(endings.items()))}")


if __name__ == "__main__":
    main()
