"""The cast of the tests: the experimenter (a superuser), a staff user without permissions,
an outsider (a logged-in non-staff user), and the participant, a walker that drives the
real views with Django's test client the way a browser would."""

from __future__ import annotations

import functools
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from debates.models import Comparison, DialogueAssignment
from devtools.formparse import StepForm, default_answers, parse_step
from participants.models import Participant
from studies.models import Study

PASSWORD = "a-long-password-1"


def pid() -> str:
    """A fresh Prolific-shaped participant id (24 hex characters)."""
    return secrets.token_hex(12)


def entry_url(study: Study, prolific_pid: str | None = None) -> str:
    return (
        f"/s/{study.slug}/?PROLIFIC_PID={prolific_pid or pid()}"
        f"&STUDY_ID={'a' * 24}&SESSION_ID={secrets.token_hex(12)}"
    )


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def password_hash() -> str:
    """PASSWORD hashed once per test process and hasher, by the hasher in use (the project's
    own, so a login through a test server's login page works): a hash takes a quarter of a
    second by design, and hundreds of tests create a user."""
    return _hashed(tuple(settings.PASSWORD_HASHERS))


@functools.cache
def _hashed(hashers: tuple[str, ...]) -> str:
    return make_password(PASSWORD)


def user_with_password(username: str, **fields) -> User:
    """A user whose password is PASSWORD."""
    fields.setdefault("email", f"{username}@example.org")
    return User.objects.create(username=username, password=password_hash(), **fields)


def experimenter_user(username: str = "experimenter") -> User:
    """Runs studies: a superuser, as a lab's researcher usually is."""
    return user_with_password(username, is_staff=True, is_superuser=True)


def staff_user_without_permissions(username: str = "helper") -> User:
    """May open the admin, but has been given no permission on anything."""
    return user_with_password(username, is_staff=True)


def outsider_user(username: str = "outsider") -> User:
    """Has an account but is not staff."""
    return user_with_password(username)


class Walker:
    """A participant driving the real views with Django's test client."""

    def __init__(
        self,
        study: Study,
        prolific_pid: str | None = None,
        client: Client | None = None,
        read_seconds: int = 240,
    ) -> None:
        self.study = study
        self.read_seconds = read_seconds
        self.pid = prolific_pid or pid()
        self.client = client or Client()
        self.url = ""
        self.exit_url = ""

    def enter(self):
        response = self.client.get(entry_url(self.study, self.pid))
        assert response.status_code == 302, response.content[:500]
        self.url = response["Location"]
        return response

    def page(self) -> tuple[object, StepForm]:
        response = self.client.get(self.url)
        return response, parse_step(response.content.decode())

    def submit(self, overrides: dict | None = None, form: StepForm | None = None):
        if form is None:
            _, form = self.page()
        if form.kind == "dialogue" and self.read_seconds:
            # Read at a human pace: the server clock started read_seconds ago.
            Participant.objects.filter(prolific_pid=self.pid, study=self.study).update(
                shown_at=timezone.now() - timedelta(seconds=self.read_seconds)
            )
            overrides = {"_active_ms": str(self.read_seconds * 900), **(overrides or {})}
        if form.kind == "recall_check" and "answer" not in (overrides or {}):
            overrides = {"answer": self.recall_answer(), **(overrides or {})}  # an attentive reader
        if form.kind == "pairwise" and "choice" not in (overrides or {}):
            overrides = {"choice": self.comparison_answer(form.hidden.get("_item")), **(overrides or {})}
        response = self.client.post(self.url, default_answers(form, overrides))
        if response.status_code in (302, 303) and not response["Location"].startswith("/"):
            self.exit_url = response["Location"]
        return response

    def recall_answer(self) -> str:
        mine = DialogueAssignment.objects.filter(participant__study=self.study)  # one PID may be in two waves
        dialogue = mine.get(participant__prolific_pid=self.pid).dialogue
        return dialogue.case.recall.get("answer") or dialogue.suspect_for("A")

    def comparison_answer(self, order: str | None) -> str:
        """An attentive annotator: follows a check's instruction, else prefers Debate 1."""
        current = Comparison.objects.filter(
            participant__study=self.study, participant__prolific_pid=self.pid, order=order
        ).first()
        return current.check_answer if current is not None and current.is_check else "debate1"

    def walk(self, answers: dict[str, dict] | None = None, stop_before: str | None = None, limit: int = 30):
        """Answer every step (overrides keyed by step title) until the study ends."""
        answers = answers or {}
        for _ in range(limit):
            _, form = self.page()
            if not form.position:
                return
            if stop_before and form.title == stop_before:
                return
            response = self.submit(answers.get(form.title), form)
            assert response.status_code in (302, 303), (form.title, form.errors)
            if self.exit_url:
                return
        raise AssertionError("the study did not end")
