"""Formal persuasion dialogues (study design C): topics, agent configurations, dialogues
between people and agents (or two agents, in batches), and their turns."""

from django.db import models

from participants.models import Participant
from studies.models import Study

SPEAKERS = [("pro", "For the topic"), ("con", "Against the topic")]

AGENT_PROMPT = """\
You are taking part in a formal persuasion dialogue (Prakken 2006) about this topic: {topic}
You argue {stance}. Your initial claim: "{own_claim}". Your opponent's initial claim: "{other_claim}".
{persona}
You win if your opponent concedes your initial claim or retracts their own. Every sentence you write
is one move: claim, why, concede, retract, since (a claim with its reasons) or question, replying to a
move of your opponent as the rules allow. Write {min_sentences} to {max_sentences} sentences of plain
text, no lists and no labels. Concede only what you are truly persuaded of."""


class Topic(models.Model):
    """What a persuasion dialogue is about, and the two initial claims."""

    slug = models.SlugField(max_length=80, unique=True)
    text = models.CharField(max_length=300, help_text="The topic, as a statement or a question.")
    pro_claim = models.CharField(max_length=300, help_text="The initial claim of the side for the topic.")
    con_claim = models.CharField(max_length=300, help_text="The initial claim of the side against it.")
    background = models.TextField(blank=True, help_text="Shown to participants under the topic (optional).")

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def claim_of(self, speaker: str) -> str:
        return self.pro_claim if speaker == "pro" else self.con_claim


class AgentConfig(models.Model):
    """How one AI interlocutor is run: model, persona, parameters and prompt template.
    In a ranking, an interlocutor is an agent configuration."""

    name = models.SlugField(max_length=60, unique=True)
    model = models.CharField(max_length=120, default="gpt-4o", help_text="Model name at the endpoint.")
    persona = models.TextField(blank=True, help_text="Optional persona line added to the prompt.")
    temperature = models.FloatField(default=0.7)
    max_tokens = models.PositiveIntegerField(default=300)
    seed = models.IntegerField(null=True, blank=True)
    prompt_template = models.TextField(
        default=AGENT_PROMPT,
        help_text="Placeholders: {topic}, {stance}, {own_claim}, {other_claim}, {persona}, {min_sentences}, "
        "{max_sentences}. The stores, the history and the admissible replies are added after it.",
    )
    template_version = models.PositiveIntegerField(default=1, editable=False)
    price_in_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="USD per million input tokens."
    )
    price_out_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="USD per million output tokens."
    )
    offline_concede_after = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Offline backend only (demo, tests): the scripted agent concedes after this many of its "
        "turns; empty: never.",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "agent configuration"

    def __str__(self) -> str:
        return self.name


class PersuasionBatch(models.Model):
    """Model-versus-model dialogues: agent pairings × topics × stances × repeats, run as jobs."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Not started"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        BUDGET = "budget", "Stopped: budget reached"
        DONE = "done", "Done"

    name = models.SlugField(max_length=80, unique=True)
    topics = models.ManyToManyField(Topic, related_name="+")
    agents = models.ManyToManyField(AgentConfig, related_name="+")
    repeats = models.PositiveSmallIntegerField(
        default=1, help_text="Dialogues per pairing, topic and stance."
    )
    self_play = models.BooleanField(default=False, help_text="Also pair each agent with itself.")
    max_turns = models.PositiveSmallIntegerField(default=40)
    budget_usd = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Stop before spending more than this (empty: no limit).",
    )
    classifier_model = models.CharField(
        max_length=120, default="gpt-4o", help_text="Model that classifies the sentences and checks updates."
    )
    classifier_price_in_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="The classifier's USD per million input tokens.",
    )
    classifier_price_out_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="The classifier's USD per million output tokens.",
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.DRAFT)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "model-versus-model batch"
        verbose_name_plural = "model-versus-model batches"

    def __str__(self) -> str:
        return self.name


class PersuasionDialogue(models.Model):
    """One dialogue: two sides, each a participant or an agent configuration."""

    class Status(models.TextChoices):
        WAITING = "waiting", "Waiting for a partner"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        ABANDONED = "abandoned", "Abandoned"

    class Reason(models.TextChoices):
        CONCEDED = "conceded", "A side conceded the other's initial claim"
        RETRACTED = "retracted", "A side retracted its own initial claim"
        TURN_LIMIT = "turn_limit", "Turn limit (draw)"
        TIME_LIMIT = "time_limit", "Time limit (draw)"
        PARTNER_LEFT = "partner_left", "A participant left"
        PARTNER_SILENT = "partner_silent", "A participant stayed silent too long"
        NO_PARTNER = "no_partner", "Nobody came to pair with"
        AGENT_FAILED = "agent_failed", "The agent could not reply"
        BUDGET = "budget", "The batch's budget ran out"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    position = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The study step.")
    batch = models.ForeignKey(
        PersuasionBatch, on_delete=models.CASCADE, null=True, blank=True, related_name="dialogues"
    )
    repeat = models.PositiveSmallIntegerField(default=1)
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="dialogues")
    pro_participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    con_participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    pro_agent = models.ForeignKey(
        AgentConfig, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    con_agent = models.ForeignKey(
        AgentConfig, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    pairing = models.CharField(max_length=12, help_text="human_ai, human_human or ai_ai.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    winner = models.CharField(max_length=3, choices=SPEAKERS, blank=True)
    end_reason = models.CharField(max_length=16, choices=Reason.choices, blank=True)
    ended_by = models.CharField(
        max_length=3, blank=True, help_text="The side that left, fell silent or failed."
    )
    state = models.JSONField(default=dict, help_text="The protocol's state: moves, turns, stores, outcome.")
    turns_played = models.PositiveSmallIntegerField(default=0)
    max_turns = models.PositiveSmallIntegerField(default=40)
    max_seconds = models.PositiveIntegerField(default=1800)
    max_sentences = models.PositiveSmallIntegerField(default=5)
    silence_seconds = models.PositiveIntegerField(default=300)
    delay_min_s = models.FloatField(default=0)
    delay_max_s = models.FloatField(default=0)
    classifier_model = models.CharField(max_length=120, default="gpt-4o")
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_move_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["pro_participant", "position"], name="one_pro_seat_per_step"),
            models.UniqueConstraint(fields=["con_participant", "position"], name="one_con_seat_per_step"),
        ]
        indexes = [
            models.Index(fields=["study", "position", "status"]),
            models.Index(fields=["batch", "status"]),
        ]

    def __str__(self) -> str:
        return f"{self.topic.slug} #{self.pk}"

    def participant_of(self, speaker: str) -> Participant | None:
        return self.pro_participant if speaker == "pro" else self.con_participant

    def participant_id_of(self, speaker: str) -> int | None:
        return self.pro_participant_id if speaker == "pro" else self.con_participant_id

    def agent_of(self, speaker: str) -> AgentConfig | None:
        return self.pro_agent if speaker == "pro" else self.con_agent

    def side_of(self, participant_id: int) -> str | None:
        if self.pro_participant_id == participant_id:
            return "pro"
        if self.con_participant_id == participant_id:
            return "con"
        return None

    def is_human(self, speaker: str) -> bool:
        return self.participant_id_of(speaker) is not None


class PersuasionTurn(models.Model):
    """One turn: up to five sentences by one side, each classified as a move."""

    class Status(models.TextChoices):
        PENDING = "pending", "Due (an agent will write it)"
        STREAMING = "streaming", "Being written"
        READING = "reading", "Being classified"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    dialogue = models.ForeignKey(PersuasionDialogue, on_delete=models.CASCADE, related_name="turns")
    seq = models.PositiveSmallIntegerField(help_text="1, 2, 3, … within the dialogue.")
    speaker = models.CharField(max_length=3, choices=SPEAKERS)
    author = models.CharField(max_length=6, help_text="human or agent.")
    text = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    sentences = models.JSONField(
        default=list, help_text="Each sentence with its move, target, proposition, and whether it counted."
    )
    stores_after = models.JSONField(default=dict)
    fallback = models.BooleanField(
        default=False, help_text="A safe default was used (the agent or the classifier failed)."
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField()
    due_at = models.DateTimeField(null=True, blank=True, help_text="Agents: not before (the reply delay).")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["dialogue", "seq"]
        constraints = [models.UniqueConstraint(fields=["dialogue", "seq"], name="unique_persuasion_turn_seq")]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]

    def __str__(self) -> str:
        return f"{self.dialogue_id}#{self.seq} {self.speaker}"
