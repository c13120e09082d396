"""A simulated participant walking a study on a running server, over HTTP and websockets,
exactly as a browser would: the study link, a GET of each page, a POST of its form (with
the CSRF cookie and token), the live conversation's and the persuasion dialogue's
websockets. It knows only what the pages say; what it answers comes from a policy
(`pilots.policies`).

It never raises on the study's account: an error page, a page that never lets it on, a
websocket that never ends, or a study that never ends is recorded as where it got `stuck`
(the step's position, title and kind, and why), and the walk stops there.
"""

from __future__ import annotations

import html
import json
import random
import re
import secrets
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlencode, urlsplit

import httpx
from websockets.sync.client import connect as ws_connect

from pilots.pages import StepForm, default_answers, parse_step

MAX_PAGES = 60  # pages of one participant before the study counts as never ending
MAX_TRIES = 3  # submissions of the same page before it counts as never letting them on
WS_TIMEOUT = 180.0  # seconds without a message before a websocket counts as never ending
WS_MESSAGES = 5000  # messages on one websocket before it counts as never ending
USER_AGENT = "Rostrum-pilot/1 (a simulated participant)"
UNREACHABLE = "the server did not answer"
EXIT_LINK = re.compile(r'href="([^"]*[?&;]cc=[^"]*)"')  # a link back to Prolific with the code


class Policy(Protocol):
    """How a simulated participant answers."""

    def answers(self, form: StepForm, person: SimulatedParticipant) -> dict[str, str]:
        """Values for the form's fields (hidden fields and buttons are filled by the walker)."""

    def question(self, state: dict, person: SimulatedParticipant) -> dict:
        """The judge's message in a live conversation (design B), when it is their turn."""

    def argument(self, snapshot: dict, person: SimulatedParticipant) -> str:
        """The participant's turn in a persuasion dialogue (design C)."""


@dataclass
class Stuck:
    position: str
    title: str
    kind: str
    reason: str


@dataclass
class Outcome:
    pid: str
    ending: str = ""  # the Prolific URL (with the code), "finished page" (no code), or "" when stuck
    stuck: Stuck | None = None
    pages: int = 0
    notes: list[dict] = field(default_factory=list)  # what the policy recorded (fallbacks, …)

    @property
    def code(self) -> str:
        return self.ending.split("cc=")[-1] if "cc=" in self.ending else self.ending


class WalkStopped(Exception):
    def __init__(self, stuck: Stuck) -> None:
        super().__init__(stuck.reason)
        self.stuck = stuck


class SimulatedParticipant:
    """One simulated participant: a cookie jar, a seeded temperament, Prolific-shaped ids (a
    given `pid` comes back as the same participant) and, for a pilot, the study link's signed
    pilot token."""

    def __init__(
        self,
        base_url: str,
        slug: str,
        rng: random.Random,
        policy: Policy,
        *,
        pilot_token: str = "",
        study_id: str = "",
        attentive: float = 0.9,
        timeout: float = 60,
        pid: str = "",
    ) -> None:
        self.base, self.slug, self.rng, self.policy = base_url.rstrip("/"), slug, rng, policy
        self.http = httpx.Client(
            base_url=self.base, follow_redirects=False, timeout=timeout, headers={"User-Agent": USER_AGENT}
        )
        self.pid = pid or secrets.token_hex(12)
        self.study_id = study_id or secrets.token_hex(12)
        self.pilot_token = pilot_token
        self.attentive = rng.random() < attentive
        self.url = ""
        self.form: StepForm | None = None
        self.outcome = Outcome(pid=self.pid)
        self.reading_ms = 0

    def close(self) -> None:
        self.http.close()

    # --- The walk ------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Enter and walk to the end (or to where it got stuck)."""
        try:
            self.enter()
            self.outcome.ending = self.walk()
        except WalkStopped as stopped:
            self.outcome.stuck = stopped.stuck
        except (httpx.HTTPError, OSError) as error:
            self.outcome.stuck = self._stuck(f"{UNREACHABLE}: {type(error).__name__}: {error}")
        finally:
            self.close()
        return self.outcome

    def enter(self) -> None:
        query = {"PROLIFIC_PID": self.pid, "STUDY_ID": self.study_id, "SESSION_ID": secrets.token_hex(12)}
        if self.pilot_token:
            query["pilot"] = self.pilot_token
        response = self.http.get(f"/s/{self.slug}/?{urlencode(query)}")
        if response.status_code != 302:
            page = parse_step(response.text)
            words = " ".join(page.text.split("\n")[:3])[:200]
            raise WalkStopped(
                Stuck("0", "The study link", "entry", f"error page {response.status_code}: {words}")
            )
        self.url = response.headers["location"]

    def walk(self) -> str:
        """Answer every page until the study sends the participant back to Prolific (the
        URL, with the code) or shows its last page ("finished page")."""
        tries: dict[tuple, int] = {}
        for _ in range(MAX_PAGES):
            page = self.http.get(self.url)
            self.outcome.pages += 1
            form = self.form = parse_step(page.text)
            if page.status_code != 200:
                raise WalkStopped(self._stuck(f"error page {page.status_code}"))
            if not form.position:  # the last page: its link to Prolific carries the code
                link = EXIT_LINK.search(page.text)
                return html.unescape(link.group(1)) if link else "finished page"
            here = (form.position, form.hidden.get("_phase"), form.hidden.get("_item"), form.title)
            tries[here] = tries.get(here, 0) + 1
            if tries[here] > MAX_TRIES:
                errors = "; ".join(form.errors)[:300] or "no error shown"
                raise WalkStopped(self._stuck(f"the page never lets them on ({errors})"))
            if form.kind == "claim_session" and form.hidden.get("_phase") == "chat":
                self.chat()
            if form.kind == "persuasion_dialogue":
                self.debate()
            answers = self.policy.answers(form, self)
            if form.kind == "dialogue" and self.reading_ms:
                answers.setdefault("_active_ms", str(self.reading_ms))
            response = self.http.post(self.url, data=default_answers(form, answers))
            location = response.headers.get("location", "")
            if response.status_code in (302, 303) and not location.startswith("/"):
                return location  # back to Prolific with a code
            if response.status_code not in (200, 302, 303):
                raise WalkStopped(self._stuck(f"error page {response.status_code} after submitting"))
        raise WalkStopped(self._stuck(f"the study did not end within {MAX_PAGES} pages"))

    def _stuck(self, reason: str) -> Stuck:
        form = self.form or StepForm()
        return Stuck(form.position or "?", form.title, form.kind, reason)

    # --- Websockets ------------------------------------------------------------------------

    def _socket(self, path: str):
        token = self.url.rstrip("/").rsplit("/", 1)[-1]
        parts = urlsplit(self.base)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return ws_connect(f"{scheme}://{parts.netloc}/ws/{path}/{token}/", origin=self.base, open_timeout=20)

    def _messages(self, ws):
        for _ in range(WS_MESSAGES):
            try:
                yield json.loads(ws.recv(timeout=WS_TIMEOUT))
            except TimeoutError:
                raise WalkStopped(self._stuck(f"the websocket sent nothing for {WS_TIMEOUT:g} s")) from None
        raise WalkStopped(self._stuck(f"the websocket did not end within {WS_MESSAGES} messages"))

    def chat(self) -> None:
        """Stay in the live conversation (design B) until it is over, asking or passing."""
        try:
            with self._socket("live") as ws:
                for message in self._messages(ws):
                    state = message.get("state") if message["type"] == "snapshot" else message
                    if not state or state.get("type") != "state":
                        continue
                    if state["done"]:
                        return
                    if state["next"] == "J":
                        ws.send(json.dumps(self.policy.question(state, self)))
        except WalkStopped:
            raise
        except Exception as error:  # closed by the server, refused, …
            raise WalkStopped(self._stuck(f"the websocket failed: {type(error).__name__}: {error}")) from None

    def debate(self) -> None:
        """Take part in a persuasion dialogue (design C) until it ends."""
        try:
            with self._socket("persuasion") as ws:
                for message in self._messages(ws):
                    if message["type"] != "snapshot":
                        continue
                    if message["ended"]:
                        return
                    if message["my_turn"]:
                        ws.send(json.dumps({"type": "say", "text": self.policy.argument(message, self)}))
        except WalkStopped:
            raise
        except Exception as error:
            raise WalkStopped(self._stuck(f"the websocket failed: {type(error).__name__}: {error}")) from None
