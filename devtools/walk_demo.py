"""Walk simulated participants through the demo studies of a running server, over HTTP and
websockets as browsers would: `python -m devtools.walk_demo --base-url http://127.0.0.1:8000`.

Run it beside the server, with the same environment (it reads the database to answer as an
attentive participant mostly would: it knows the attention checks' expected answers and the
cases' recall answers, and answers them right most of the time). Answers are seeded, varied
and plausible, so the demo studies' overviews, exports and reports have data to show.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
from websockets.sync.client import connect as ws_connect

from devtools.formparse import StepForm, default_answers, parse_step

DEMO_STUDIES = ("mystery-debate", "claim-debate", "persuasion-pairs", "persuasion-live")
MAX_PAGES = 40


class Participant:
    """One simulated participant: a cookie jar, a seeded temperament, and Prolific ids."""

    def __init__(self, base_url: str, slug: str, rng: random.Random) -> None:
        self.base, self.slug, self.rng = base_url.rstrip("/"), slug, rng
        self.http = httpx.Client(base_url=self.base, follow_redirects=False, timeout=60)
        self.pid = secrets.token_hex(12)
        self.attentive = rng.random() < 0.9
        self.url = ""

    def enter(self) -> None:
        query = f"PROLIFIC_PID={self.pid}&STUDY_ID={secrets.token_hex(12)}&SESSION_ID={secrets.token_hex(12)}"
        response = self.http.get(f"/s/{self.slug}/?{query}")
        if response.status_code != 302:
            raise RuntimeError(f"{self.slug}: the study link answered {response.status_code}")
        self.url = response.headers["location"]

    def walk(self) -> str:
        """Answer every page until the study sends the participant back to Prolific."""
        for _ in range(MAX_PAGES):
            page = self.http.get(self.url)
            form = parse_step(page.text)
            if not form.position:
                return "finished page"
            if form.kind == "claim_session" and form.hidden.get("_phase") == "chat":
                self.chat()
            if form.kind == "persuasion_dialogue":
                self.debate()
            answers = self.answers(form)
            if form.kind == "dialogue":
                answers["_active_ms"] = str(self.reading_ms)
            response = self.http.post(self.url, data=default_answers(form, answers))
            location = response.headers.get("location", "")
            if response.status_code in (302, 303) and not location.startswith("/"):
                return location  # back to Prolific with a code
            if response.status_code not in (200, 302, 303):
                raise RuntimeError(f"{self.slug}: {form.title!r} answered {response.status_code}")
        raise RuntimeError(f"{self.slug}: the study did not end")

    # --- Answers ----------------------------------------------------------------------------

    def answers(self, form: StepForm) -> dict:
        rng, chosen = self.rng, {}
        for name, options in form.radios.items():
            chosen[name] = rng.choice(options)
        for name, (low, high) in form.ranges.items():
            chosen[name] = str(rng.randint(low, high))
            chosen[f"{name}__touched"] = "1"
        for name, (low, high) in form.numbers.items():
            chosen[name] = str(rng.randint(max(low or 18, 18), min(high or 70, 70)))
        if form.kind == "consent":
            chosen["consent"] = "yes" if rng.random() < 0.97 else "no"
        chosen.update(self.known_answers(form))
        if form.kind == "dialogue":
            self.read_for(rng.randint(150, 420))
        return chosen

    def known_answers(self, form: StepForm) -> dict:
        """Checks, recall and the pairwise checks answered as instructed, if attentive."""
        from debates.models import Comparison, DialogueAssignment
        from studies.models import Question

        if not self.attentive and self.rng.random() < 0.5:
            return {}
        found = {}
        for q in Question.objects.filter(step__study__slug=self.slug, key__in=list(form.radios)):
            if q.is_check:
                found[q.key] = self.rng.choice(q.expected_list)
        if form.kind == "recall_check":
            assignment = DialogueAssignment.objects.filter(participant__prolific_pid=self.pid).first()
            if assignment is not None:
                recall = assignment.dialogue.case.recall
                found["answer"] = recall.get("answer") or assignment.dialogue.suspect_for("A")
        if form.kind == "judgement":
            assignment = DialogueAssignment.objects.filter(participant__prolific_pid=self.pid).first()
            if assignment is not None and self.rng.random() < 0.62:
                found["side"] = assignment.dialogue.culprit_side
        if form.kind == "pairwise":
            current = Comparison.objects.filter(
                participant__prolific_pid=self.pid, order=form.hidden.get("_item")
            ).first()
            if current is not None and current.is_check:
                found["choice"] = current.check_answer
        return found

    def read_for(self, seconds: int) -> None:
        """Read the dialogue at a human pace without waiting minutes: the step's start is
        moved back by the reading time, which the browser's timer then reports too."""
        from django.utils import timezone

        from participants.models import Participant

        started = timezone.now() - timedelta(seconds=seconds)
        Participant.objects.filter(study__slug=self.slug, prolific_pid=self.pid).update(shown_at=started)
        self.reading_ms = seconds * 1000 - self.rng.randint(0, 20_000)

    # --- The live conversation ------------------------------------------------------------------

    def chat(self) -> None:
        """Stay in the conversation until it is over, asking a question or passing each turn."""
        token = self.url.rstrip("/").rsplit("/", 1)[-1]
        parts = urlsplit(self.base)
        scheme = "wss" if parts.scheme == "https" else "ws"
        with ws_connect(
            f"{scheme}://{parts.netloc}/ws/live/{token}/", origin=self.base, open_timeout=20
        ) as ws:
            while True:
                message = json.loads(ws.recv(timeout=180))
                state = message.get("state") if message["type"] == "snapshot" else message
                if state.get("type") != "state":
                    continue
                if state["done"]:
                    return
                if state["next"] == "J":
                    ws.send(json.dumps(self.question(state)))

    def debate(self) -> None:
        """Take part in a persuasion dialogue until it ends: ask why, give reasons, and now
        and then concede the opponent's initial claim (the offline agent concedes too)."""
        token = self.url.rstrip("/").rsplit("/", 1)[-1]
        parts = urlsplit(self.base)
        scheme = "wss" if parts.scheme == "https" else "ws"
        with ws_connect(
            f"{scheme}://{parts.netloc}/ws/persuasion/{token}/", origin=self.base, open_timeout=20
        ) as ws:
            while True:
                message = json.loads(ws.recv(timeout=180))
                if message["type"] != "snapshot":
                    continue
                if message["ended"]:
                    return
                if message["my_turn"]:
                    ws.send(json.dumps({"type": "say", "text": self.argument(message)}))

    def argument(self, snapshot: dict) -> str:
        other = "con" if snapshot["side"] == "pro" else "pro"
        if snapshot["turns_played"] >= 6 and self.rng.random() < 0.25:
            claim = snapshot["claims"][other].rstrip(".")
            return f"I concede that {claim[:1].lower()}{claim[1:]}."
        return self.rng.choice(
            [
                "Why do you think that?",
                f"{snapshot['claims'][snapshot['side']]} Public investment pays for itself over time.",
                "I hold my view because the evidence from other countries supports it.",
                "What would change your mind?",
            ]
        )

    def question(self, state: dict) -> dict:
        if self.rng.random() < 0.5:
            return {"type": "ask", "target": "pass", "text": ""}
        targets = [s for s in state.get("sides", {})] or ["C"]
        target = self.rng.choice(targets + (["both"] if len(targets) == 2 else []))
        text = self.rng.choice(
            [
                "What is your strongest piece of evidence?",
                "How reliable is the source you cited?",
                "What would change your mind?",
            ]
        )
        return {"type": "ask", "target": target, "text": text}


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
            person = Participant(args.base_url, slug, random.Random(rng.random()))
            person.enter()
            ending = person.walk()
            code = ending.split("cc=")[-1] if "cc=" in ending else ending
            endings[code] = endings.get(code, 0) + 1
        print(f"{slug}: {args.participants} participants; endings {dict(sorted(endings.items()))}")


if __name__ == "__main__":
    main()
