"""Participants, their step visits (timing), their answers, their exclusions, and the evidence
of automated or careless answering (flags, and how free text was written)."""

import secrets

from django.conf import settings
from django.db import models

from studies.models import Study


def new_token() -> str:
    # 32 bytes from the OS CSPRNG: 43 URL-safe characters, 256 bits.
    return secrets.token_urlsafe(32)


class Participant(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "In progress"
        COMPLETED = "completed", "Completed"
        NO_CONSENT = "no_consent", "Declined consent"
        FAILED_CHECK = "failed_check", "Failed attention checks"
        SCREENED_OUT = "screened_out", "Screened out"
        STUDY_FULL = "study_full", "Turned away: study full"
        TIMED_OUT = "timed_out", "Timed out"
        RETURNED = "returned", "Returned on Prolific"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="participants")
    prolific_pid = models.CharField(max_length=64)
    prolific_study_id = models.CharField(max_length=64, blank=True)
    prolific_session_id = models.CharField(max_length=64, blank=True)
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    is_preview = models.BooleanField(default=False)
    is_pilot = models.BooleanField(
        default=False,
        help_text="A simulated participant of a pilot (`manage.py pilot`): never holds a place, left out of "
        "exports, the overview and reports (a pilot's report reads pilots only).",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    position = models.PositiveSmallIntegerField(default=1, help_text="Current step.")
    shown_at = models.DateTimeField(
        null=True, blank=True, help_text="When the current step became current (it is served right after)."
    )
    served_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the current page was first served (a GET); cleared by each accepted submission. "
        "Empty at a submission: the page was never served (flagged).",
    )
    started_at = models.DateTimeField()
    expires_at = models.DateTimeField(help_text="The place is released after this time.")
    placed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a page first gave the participant a place (a dialogue, a claim, comparisons).",
    )
    place_idle = models.BooleanField(
        default=False,
        help_text="Took a place and has not answered since: the place is held PLACE_IDLE_MINUTES, "
        "and the first answer extends it to the time limit.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField()
    attention_failures = models.PositiveSmallIntegerField(default=0)
    group = models.CharField(
        max_length=40, blank=True, help_text="Group from the screening survey (e.g. mainstream / skeptical)."
    )
    excluded = models.BooleanField(
        default=False, help_text="Has an active exclusion (kept in step with Exclusion rows)."
    )
    visits = models.PositiveIntegerField(default=1, help_text="Entries through the study link.")
    user_agent = models.CharField(max_length=300, blank=True)
    language = models.CharField(
        max_length=10,
        blank=True,
        help_text="The language of the participant's pages, fixed at entry (empty: the study's).",
    )
    exit_code = models.CharField(
        max_length=40,
        blank=True,
        help_text="A completion code set by a step (e.g. a partner left a persuasion dialogue); "
        "empty: the study's code for the status.",
    )

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "prolific_pid"], name="one_participant_per_pid_per_study"
            )
        ]
        indexes = [
            models.Index(fields=["study", "status", "position"]),
            models.Index(fields=["study", "prolific_session_id"], name="participant_session"),
        ]
        permissions = [
            ("view_prolific_ids", "Can see Prolific ids in exports, reports and the API (else pseudonyms)")
        ]

    def __str__(self) -> str:
        return f"{self.prolific_pid} ({self.get_status_display()})"

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE


class StepVisit(models.Model):
    """Timing of one submitted step: server time from first display to submission, and the
    browser's own measure of time the page was visible and focused."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="visits_log")
    position = models.PositiveSmallIntegerField()
    step_kind = models.CharField(max_length=40)
    shown_at = models.DateTimeField(null=True)
    submitted_at = models.DateTimeField()
    server_ms = models.PositiveIntegerField(null=True)
    client_active_ms = models.PositiveIntegerField(null=True)
    client_hidden_ms = models.PositiveIntegerField(null=True)
    client_blurs = models.PositiveIntegerField(null=True)

    class Meta:
        ordering = ["participant", "position"]
        constraints = [models.UniqueConstraint(fields=["participant", "position"], name="one_visit_per_step")]

    def __str__(self) -> str:
        return f"Step {self.position} ({self.step_kind})"


class Response(models.Model):
    """One answered item. Every step that asks something stores a row per item."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="responses")
    position = models.PositiveSmallIntegerField()
    step_kind = models.CharField(max_length=40)
    key = models.CharField(max_length=60)
    value = models.TextField(blank=True)
    value_num = models.FloatField(null=True, blank=True)
    is_check = models.BooleanField(default=False)
    passed = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["participant", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "position", "key"], name="one_answer_per_item")
        ]

    def __str__(self) -> str:
        return f"Step {self.position}: {self.key}"


class Exclusion(models.Model):
    class Reason(models.TextChoices):
        ATTENTION = "attention", "Failed attention check"
        RECALL = "recall", "Failed recall check"
        WPM = "wpm", "Reading speed at or above the cap"
        MANUAL = "manual", "Excluded by the experimenter"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="exclusions")
    reason = models.CharField(max_length=20, choices=Reason.choices)
    detail = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoke_note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "reason"],
                condition=models.Q(revoked_at__isnull=True),
                name="one_active_exclusion_per_reason",
            )
        ]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.get_reason_display()} ({state})"


class Flag(models.Model):
    """Evidence that a submitted page may not come from an attentive person (a script, an AI
    agent, or a careless participant). Never an exclusion by itself: the experimenter reviews it
    beside the attention and timing evidence, and decides (a manual exclusion)."""

    class Kind(models.TextChoices):
        HONEYPOT = "honeypot", "Filled in a field hidden from people"
        NO_PAGE_VIEW = "no_page_view", "Answered a page that was never served"
        FAST_PAGE = "fast_page", "Answered a page faster than its items allow"
        FAST_TYPING = "fast_typing", "Free text written faster than a person types"
        PASTED_TEXT = "pasted_text", "Free text mostly pasted"
        UNTYPED_TEXT = "untyped_text", "Free text with far fewer keystrokes than characters"
        UNMEASURED_TEXT = "unmeasured_text", "Free text without the browser's typing counts"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="flags")
    position = models.PositiveSmallIntegerField(help_text="The step the flagged page belongs to.")
    step_kind = models.CharField(max_length=40)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    field = models.CharField(max_length=60, blank=True, help_text="The free-text field, when about one.")
    value = models.FloatField(null=True, blank=True, help_text="What was measured (see detail).")
    threshold = models.FloatField(null=True, blank=True, help_text="The threshold it crossed.")
    detail = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["participant", "position", "id"]
        indexes = [models.Index(fields=["participant", "kind"], name="flag_participant_kind")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} (step {self.position})"


class TextEntry(models.Model):
    """How one free-text answer was written: the browser's counts (keystrokes, pastes, typing
    time; never what was typed) beside the submitted text's length and the server's time on
    the page. The counts come from the browser: clamped, and never trusted alone."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="text_entries")
    position = models.PositiveSmallIntegerField()
    step_kind = models.CharField(max_length=40)
    field = models.CharField(max_length=60, help_text="The form field (the textarea's name).")
    key = models.CharField(
        max_length=60, blank=True, help_text="Key of the stored answer holding this text (responses export)."
    )
    chars = models.PositiveIntegerField(help_text="Characters of the submitted text.")
    keys = models.PositiveIntegerField(null=True, blank=True, help_text="Key presses in the field.")
    pastes = models.PositiveIntegerField(null=True, blank=True, help_text="Paste (and drop) events.")
    pasted_chars = models.PositiveIntegerField(null=True, blank=True, help_text="Characters pasted.")
    typing_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Time spent typing: the gaps between key presses, each counted up to 2 s.",
    )
    page_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="Server time from serving the page to its submission."
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["participant", "position", "id"]
        verbose_name_plural = "text entries"

    def __str__(self) -> str:
        return f"{self.field} (step {self.position})"

    @property
    def pasted_share(self) -> float | None:
        if self.pasted_chars is None or not self.chars:
            return None
        return min(self.pasted_chars, self.chars) / self.chars


# --- Prolific's API (participants/prolific.py) -------------------------------------------


class ProlificStudy(models.Model):
    """The study's counterpart on Prolific, run through the API: created as a draft by Rostrum
    (or linked by the study's STUDY_ID), published, paused, stopped, and synced. The Prolific id
    itself is `Study.prolific_study_id` (which the study link is checked against); this row holds
    what Prolific says of it and what the draft was made with."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="prolific")
    internal_name = models.CharField(
        max_length=100,
        unique=True,
        help_text="The draft's internal name on Prolific: finds a draft whose creation was cut short "
        "before its id was saved, instead of creating a second one.",
    )
    status = models.CharField(
        max_length=30,
        blank=True,
        help_text="Prolific's status of the study (UNPUBLISHED, ACTIVE, PAUSED, …).",
    )
    places = models.PositiveIntegerField(null=True, blank=True)
    reward_cents = models.PositiveIntegerField(null=True, blank=True, help_text="Reward per place, in cents.")
    maximum_minutes = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    synced_at = models.DateTimeField(null=True, blank=True, help_text="The last sync of its submissions.")
    sync_error = models.CharField(
        max_length=300, blank=True, help_text="Why the last sync failed, if it did."
    )

    class Meta:
        verbose_name = "study on Prolific"
        verbose_name_plural = "studies on Prolific"

    def __str__(self) -> str:
        return f"{self.study.slug} on Prolific ({self.status or 'being created'})"


class ProlificSubmission(models.Model):
    """A submission of the study on Prolific (its id is the participant's SESSION_ID), as the last
    sync or webhook saw it, beside the participant it belongs to. Statuses are stored in one
    spelling (`prolific.status_key`): Prolific has written them in several."""

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE", "ACTIVE"
        AWAITING_REVIEW = "AWAITING_REVIEW", "AWAITING REVIEW"
        APPROVED = "APPROVED", "APPROVED"
        PARTIALLY_APPROVED = "PARTIALLY_APPROVED", "PARTIALLY APPROVED"
        REJECTED = "REJECTED", "REJECTED"
        RETURNED = "RETURNED", "RETURNED"
        TIMED_OUT = "TIMED_OUT", "TIMED-OUT"
        SCREENED_OUT = "SCREENED_OUT", "SCREENED OUT"
        PROCESSING = "PROCESSING", "PROCESSING"
        RESERVED = "RESERVED", "RESERVED"
        UNKNOWN = "UNKNOWN", "UNKNOWN"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="prolific_submissions")
    submission_id = models.CharField(max_length=64, unique=True)
    prolific_pid = models.CharField(max_length=64)
    participant = models.ForeignKey(
        Participant, null=True, blank=True, on_delete=models.SET_NULL, related_name="prolific_submissions"
    )
    status = models.CharField(max_length=20, choices=Status.choices)
    entered_code = models.CharField(max_length=64, blank=True, help_text="The code entered on Prolific.")
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    seen_at = models.DateTimeField(help_text="When Prolific last told us about it (sync or webhook).")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rejection_category = models.CharField(max_length=30, blank=True)
    rejection_message = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "-started_at", "id"]
        indexes = [models.Index(fields=["study", "prolific_pid"], name="prolific_submission_pid")]

    def __str__(self) -> str:
        return f"{self.prolific_pid} ({self.get_status_display()} on Prolific)"


class Bonus(models.Model):
    """A bonus to a participant, recorded before it is sent to Prolific and never sent twice.

    recorded → sending (claimed by a conditional UPDATE, committed before Prolific is called) →
    sent, or failed (Prolific refused it, or it is known not to have been paid). A bonus left in
    "sending" (a crash, a lost answer) is resolved by looking at Prolific's side (the submission's
    bonus payments), never by paying again; see docs/decisions.md, "Prolific API"."""

    class State(models.TextChoices):
        RECORDED = "recorded", "Recorded, not sent"
        SENDING = "sending", "Sending (or outcome unknown)"
        SENT = "sent", "Sent to Prolific"
        FAILED = "failed", "Failed (not paid)"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="bonuses")
    participant = models.ForeignKey(Participant, on_delete=models.PROTECT, related_name="bonuses")
    submission_id = models.CharField(
        max_length=64, help_text="The Prolific submission it is checked against."
    )
    amount_cents = models.PositiveIntegerField()
    reason = models.CharField(max_length=200, blank=True)
    request_key = models.CharField(
        max_length=100, unique=True, help_text="One per form sent: a double click records nothing more."
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.RECORDED)
    bulk_id = models.CharField(max_length=64, blank=True, help_text="Prolific's bulk bonus payment id.")
    payments_before = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Bonus payments the submission had on Prolific before this one was paid.",
    )
    pay_started_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set (and committed) just before the pay call: empty, it was never made.",
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    sending_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "id"]
        verbose_name_plural = "bonuses"
        constraints = [
            models.UniqueConstraint(
                fields=["participant"],
                condition=models.Q(state="sending"),
                name="one_bonus_sending_per_participant",
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.amount_cents / 100:.2f} to {self.participant.prolific_pid} ({self.get_state_display()})"
        )


# --- Two-stage studies on Prolific (participants/prolific_groups.py) -----------------------


class ProlificGroup(models.Model):
    """A screening group of a study (a `Participant.group` label) as a participant group on
    Prolific: its completed, non-excluded participants, to publish a main study to."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="prolific_groups")
    label = models.CharField(max_length=40, help_text="The screening group (e.g. mainstream, skeptical).")
    prolific_group_id = models.CharField(
        max_length=64, blank=True, help_text="The participant group's id on Prolific."
    )
    members = models.PositiveIntegerField(default=0, help_text="PROLIFIC_PIDs sent at the last update.")
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "participant group on Prolific"
        constraints = [
            models.UniqueConstraint(fields=["study", "label"], name="one_prolific_group_per_label")
        ]

    def __str__(self) -> str:
        return f"{self.label} of {self.study.slug}"


class Recruitment(models.Model):
    """Who a study takes on Prolific: a main study's source screening study (whose answers and group
    are carried over at entry) and group; the sister studies whose participants it keeps out."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="recruitment")
    source = models.ForeignKey(
        Study,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="fed_studies",
        help_text="The screening study whose answers (by PROLIFIC_PID) are carried over at entry.",
    )
    group = models.ForeignKey(
        ProlificGroup,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="Only participants of this group (Prolific's participant group allowlist).",
    )
    sisters = models.ManyToManyField(
        Study,
        blank=True,
        related_name="+",
        help_text="Participants of these studies are kept out (on Prolific and at entry here).",
    )

    def __str__(self) -> str:
        return f"Recruitment of {self.study.slug}"
