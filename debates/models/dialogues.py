"""Cases and their pre-generated dialogues, the dialogues a study offers, and what
participants read and judge (study design A)."""

import re

from django.db import models

from participants.models import Participant
from studies.models import Study

WORD = re.compile(r"\S+")


def count_words(text: str) -> int:
    return len(WORD.findall(text))


class Case(models.Model):
    """A detective mystery: the story, its suspects, the true culprit and the innocent rival."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    story = models.TextField()
    suspects = models.JSONField(help_text='[{"name": …, "description": …}, …]')
    culprit = models.CharField(max_length=120)
    rival = models.CharField(max_length=120)
    evidence = models.JSONField(default=list, help_text='[{"number": 1, "text": …}, …]')
    recall = models.JSONField(
        default=dict, blank=True, help_text='Optional recall question: {"question", "options", "answer"}.'
    )
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.title

    @property
    def suspect_names(self) -> list[str]:
        return [s["name"] for s in self.suspects]


class Condition(models.Model):
    """A condition of design A: the baseline, or an intervention such as a bias placed on one
    side. Conditions are data: the paper's five are created by a migration (the demo's), an
    experimenter adds others in the admin or in a cases file's "conditions"."""

    slug = models.SlugField(max_length=40, unique=True)
    label = models.CharField(max_length=100)
    description = models.CharField(
        max_length=300,
        blank=True,
        help_text="What a participant reads as an answer to 'what kind of manipulation was it?' "
        "(empty: the label).",
    )
    baseline = models.BooleanField(
        default=False, help_text="No intervention: neither side is active (the comparison condition)."
    )
    position = models.PositiveSmallIntegerField(default=100, help_text="Order in lists and reports.")

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.label


# The paper's conditions (paper 000): (slug, label, participants' description, baseline,
# position). Created by a migration, and again whenever cases are imported or built, so a
# flushed database (tests) or a deleted row never leaves the paper's dialogues without one.
PAPER_CONDITIONS = [
    ("baseline", "Baseline", "", True, 0),
    ("anchoring", "Anchoring", "Anchoring — a side kept steering back to an early reference point", False, 1),
    (
        "fallacy_oversight",
        "Fallacy oversight",
        "Faulty reasoning — a side used a fallacy that went unchallenged",
        False,
        2,
    ),
    ("pro_jargon", "Pro-jargon", "Jargon — a side used technical language to sound authoritative", False, 3),
    ("verbosity", "Verbosity", "Verbosity — a side said far more than it needed to", False, 4),
]


def paper_conditions_ensure() -> None:
    """Create the paper's conditions that are missing (an existing row is left as it is)."""
    Condition.objects.bulk_create(
        [
            Condition(slug=slug, label=label, description=description, baseline=baseline, position=position)
            for slug, label, description, baseline, position in PAPER_CONDITIONS
        ],
        ignore_conflicts=True,
    )


def condition_labels() -> dict[str, str]:
    """Every condition's label by slug (the paper's too, even before their rows exist)."""
    paper = {slug: label for slug, label, *_ in PAPER_CONDITIONS}
    return paper | dict(Condition.objects.values_list("slug", "label"))


class Dialogue(models.Model):
    """A pre-generated debate about a case (study design A), six turns in the paper."""

    class Condition(models.TextChoices):
        """The paper's conditions (paper 000), created as `Condition` rows by a migration; the
        generation pipeline builds these. Any other `Condition` row is as valid."""

        BASELINE = "baseline", "Baseline"
        ANCHORING = "anchoring", "Anchoring"
        FALLACY_OVERSIGHT = "fallacy_oversight", "Fallacy oversight"
        PRO_JARGON = "pro_jargon", "Pro-jargon"
        VERBOSITY = "verbosity", "Verbosity"

    class ActiveSide(models.TextChoices):
        NONE = "none", "None (baseline)"
        CULPRIT = "culprit", "Culprit's side"
        RIVAL = "rival", "Rival's side"

    class Role(models.TextChoices):
        CULPRIT = "culprit", "Culprit"
        RIVAL = "rival", "Rival"

    slug = models.SlugField(max_length=80, unique=True)
    case = models.ForeignKey(Case, on_delete=models.PROTECT, related_name="dialogues")
    condition = models.CharField(max_length=40, help_text="A condition's slug (see Conditions).")
    active_side = models.CharField(max_length=10, choices=ActiveSide.choices)
    variant = models.CharField(max_length=4, blank=True)
    side_a = models.CharField(max_length=10, choices=Role.choices, help_text="Whom side A argues is guilty.")
    words = models.PositiveIntegerField(default=0, help_text="Words in all turns.")
    imported_at = models.DateTimeField(auto_now=True)
    quality_score = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Debate quality of the weaker side, of 30 (paper 000, Tables 27-29)."
    )
    quality_passed = models.BooleanField(
        null=True,
        blank=True,
        help_text="Passed the quality check (both sides at the pass mark, the intervention shown); "
        "empty: never checked.",
    )
    quality_override = models.BooleanField(
        "offer despite the quality check",
        default=False,
        help_text="Offer it to participants although it failed the quality check (the experimenter's call).",
    )
    quality = models.JSONField(
        default=dict, blank=True, help_text="Scores per side and dimension, manifestation check, attempts."
    )
    provenance = models.JSONField(
        default=dict, blank=True, help_text="How it was generated: job, models, parameters, seed, templates."
    )

    class Meta:
        ordering = ["case", "slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def kept_out(self) -> bool:
        """Failed the quality check and not overridden: it gets no participants."""
        return self.quality_passed is False and not self.quality_override

    @property
    def side_b(self) -> str:
        return self.Role.RIVAL if self.side_a == self.Role.CULPRIT else self.Role.CULPRIT

    def suspect_for(self, side: str) -> str:
        role = self.side_a if side == "A" else self.side_b
        return self.case.culprit if role == self.Role.CULPRIT else self.case.rival

    @property
    def culprit_side(self) -> str:
        return "A" if self.side_a == self.Role.CULPRIT else "B"

    @property
    def active_side_letter(self) -> str:
        """'A' or 'B' for the side carrying the bias intervention, '' for baseline."""
        if self.active_side == self.ActiveSide.NONE:
            return ""
        return "A" if self.active_side == self.side_a else "B"

    @property
    def signed_active_side(self) -> int:
        """+1 bias on side A, −1 bias on side B, 0 baseline (the paper's Table 40 predictor)."""
        return {"A": 1, "B": -1, "": 0}[self.active_side_letter]


def turn_phase(number: int, total: int) -> str:
    """Opening for the first two turns, summary for the last two, rebuttal between (the
    paper's six turns: 1-2, 3-4, 5-6); a dialogue of four or fewer turns has no rebuttal."""
    if number <= 2:
        return "Opening"
    if number > total - 2:
        return "Summary"
    return "Rebuttal"


class Turn(models.Model):
    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="turns")
    number = models.PositiveSmallIntegerField()
    speaker = models.CharField(max_length=1, choices=[("A", "Side A"), ("B", "Side B")])
    text = models.TextField()

    class Meta:
        ordering = ["dialogue", "number"]
        constraints = [models.UniqueConstraint(fields=["dialogue", "number"], name="unique_turn_number")]

    def __str__(self) -> str:
        return f"Turn {self.number} ({self.phase.lower() or 'turn'}, side {self.speaker})"

    @property
    def phase(self) -> str:
        total = getattr(self, "_total", None) or self.dialogue.turns.count()
        return turn_phase(self.number, total)


class StudyDialogue(models.Model):
    """A dialogue offered in a study; participants are spread evenly over these."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_dialogues")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="+")
    active = models.BooleanField(default=True, help_text="Inactive dialogues get no new participants.")
    target = models.PositiveIntegerField(
        null=True, blank=True, help_text="Places for this dialogue (empty: the study's target per item)."
    )

    class Meta:
        ordering = ["study", "dialogue"]
        constraints = [models.UniqueConstraint(fields=["study", "dialogue"], name="unique_study_dialogue")]

    def __str__(self) -> str:
        return str(self.dialogue)


class DialogueAssignment(models.Model):
    """The dialogue a participant reads (their place), with the measured reading speed."""

    participant = models.OneToOneField(
        Participant, on_delete=models.CASCADE, related_name="dialogue_assignment"
    )
    study_dialogue = models.ForeignKey(StudyDialogue, on_delete=models.PROTECT, related_name="assignments")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="+")
    assigned_at = models.DateTimeField()
    words = models.PositiveIntegerField(null=True, blank=True)
    reading_server_ms = models.PositiveIntegerField(null=True, blank=True)
    reading_client_ms = models.PositiveIntegerField(null=True, blank=True)
    reading_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="Reading time on the dialogue page."
    )
    reread_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Time the debate was open again on the judgement page (visible, focused, on screen).",
    )
    wpm = models.FloatField(
        null=True, blank=True, help_text="Words per minute over reading_ms plus reread_ms."
    )

    class Meta:
        indexes = [models.Index(fields=["study_dialogue"])]

    def __str__(self) -> str:
        return f"Reads {self.dialogue}"


class Judgement(models.Model):
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="judgements")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="judgements")
    chosen_side = models.CharField(max_length=1, choices=[("A", "Side A"), ("B", "Side B")])
    correct = models.BooleanField(help_text="The chosen side argues for the true culprit.")
    confidence = models.PositiveSmallIntegerField()
    reasoning = models.TextField(blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["participant", "dialogue"], name="one_judgement_per_dialogue")
        ]

    def __str__(self) -> str:
        return f"Side {self.chosen_side}, {self.confidence}% confident"


class BiasReport(models.Model):
    """The participant's answers to the bias-detection questions about their dialogue."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="bias_reports")
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="+")
    present = models.CharField(max_length=10)  # yes / no / unsure
    side = models.CharField(max_length=10, blank=True)  # A / B / unsure
    bias_type = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["participant", "dialogue"], name="one_bias_report_per_dialogue")
        ]

    def __str__(self) -> str:
        return f"Bias seen: {self.present}" + (f", side {self.side}" if self.side else "")


class ConditionTarget(models.Model):
    """How many participants a condition (baseline, a bias) should get in a study, across its
    dialogues: assignment fills the least-filled condition first, then its least-filled
    dialogue (paper 000 over-samples baseline dialogues this way)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="condition_targets")
    condition = models.CharField(max_length=40, help_text="A condition's slug.")
    target = models.PositiveIntegerField()

    class Meta:
        ordering = ["study", "condition"]
        constraints = [
            models.UniqueConstraint(fields=["study", "condition"], name="one_target_per_condition")
        ]

    def __str__(self) -> str:
        return f"{condition_labels().get(self.condition, self.condition)}: {self.target}"
