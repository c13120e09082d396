"""Pairwise persuasiveness comparisons (study design D): excerpts of debates, instance sets
pairing two excerpts, and the annotators' comparisons."""

from django.db import models

from participants.models import Participant


class InstanceSet(models.Model):
    """A pool of comparison instances. Studies that share a set share its quotas: each
    instance gets `annotations_per_instance` valid annotations across all of them, and no
    annotator (by PROLIFIC_PID) sees an instance twice."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    seed = models.PositiveIntegerField(
        default=1, help_text="Rebuilding with the same seed gives the same set."
    )
    excerpt_turns = models.PositiveSmallIntegerField(
        default=4, help_text="Consecutive turns per excerpt (k)."
    )
    per_pair = models.PositiveSmallIntegerField(
        default=6, help_text="Instances per unordered pair of interlocutors (m), half per stance."
    )
    annotations_per_instance = models.PositiveSmallIntegerField(
        default=7, help_text="Valid annotations each instance collects (r)."
    )
    source = models.CharField(max_length=20, default="dialogues", help_text="dialogues or file.")
    topic_label = models.CharField(
        max_length=200, blank=True, help_text="Shown above the excerpts, e.g. the debate topic."
    )
    shortfalls = models.JSONField(default=list, blank=True, help_text="Pairs that had too few candidates.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Excerpt(models.Model):
    """k consecutive turns of one debate, seen from Speaker A's side."""

    instance_set = models.ForeignKey(InstanceSet, on_delete=models.CASCADE, related_name="excerpts")
    key = models.CharField(max_length=200, help_text="Stable id, e.g. dialogue:<slug>:A:1.")
    debate = models.CharField(max_length=200, help_text="Stable id of the debate the excerpt comes from.")
    topic = models.CharField(max_length=300, blank=True)
    speaker_a = models.CharField(max_length=100, help_text="Interlocutor id of Speaker A.")
    speaker_b = models.CharField(max_length=100, blank=True, help_text="Interlocutor id of Speaker B.")
    stance = models.CharField(max_length=100, help_text="Speaker A's position.")
    turns = models.JSONField(help_text='[{"speaker": "A" or "B", "text": …}, …]')

    class Meta:
        ordering = ["instance_set", "key"]
        constraints = [models.UniqueConstraint(fields=["instance_set", "key"], name="unique_excerpt_key")]

    def __str__(self) -> str:
        return self.key


class Instance(models.Model):
    instance_set = models.ForeignKey(InstanceSet, on_delete=models.CASCADE, related_name="instances")
    number = models.PositiveIntegerField()
    excerpt_1 = models.ForeignKey(Excerpt, on_delete=models.PROTECT, related_name="+")
    excerpt_2 = models.ForeignKey(Excerpt, on_delete=models.PROTECT, related_name="+")
    stance = models.CharField(max_length=100)
    interlocutor_1 = models.CharField(max_length=100)
    interlocutor_2 = models.CharField(max_length=100)

    class Meta:
        ordering = ["instance_set", "number"]
        constraints = [
            models.UniqueConstraint(fields=["instance_set", "number"], name="unique_instance_number")
        ]

    def __str__(self) -> str:
        return f"{self.instance_set.slug}#{self.number}"


class Comparison(models.Model):
    """One instance (or attention check) served to an annotator, and their answer."""

    class Choice(models.TextChoices):
        DEBATE_1 = "debate1", "Speaker A from Debate 1"
        DEBATE_2 = "debate2", "Speaker A from Debate 2"
        EQUAL = "equal", "Both were equally persuasive"

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="comparisons")
    position = models.PositiveSmallIntegerField(help_text="The step these comparisons belong to.")
    order = models.PositiveSmallIntegerField(help_text="1, 2, … in the order the annotator sees them.")
    instance = models.ForeignKey(Instance, on_delete=models.PROTECT, related_name="comparisons")
    swapped = models.BooleanField(help_text="Debate 1 on screen is the instance's excerpt 2.")
    is_check = models.BooleanField(default=False)
    check_instruction = models.CharField(max_length=200, blank=True)
    check_answer = models.CharField(max_length=10, blank=True, choices=Choice.choices)
    choice = models.CharField(max_length=10, blank=True, choices=Choice.choices)
    confidence = models.PositiveSmallIntegerField(null=True, help_text="1 Very unsure … 5 Very confident.")
    check_passed = models.BooleanField(null=True)
    served_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["participant", "position", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["participant", "position", "order"], name="unique_comparison_order"
            )
        ]
        indexes = [models.Index(fields=["instance", "is_check"])]

    def __str__(self) -> str:
        what = "Attention check" if self.is_check else "Comparison"
        return f"{what} {self.order} of step {self.position}"

    @property
    def winner(self) -> str:
        """'1', '2' (the instance's excerpts, whatever the display order) or 'tie'."""
        if self.choice == self.Choice.EQUAL:
            return "tie"
        shown_first = self.choice == self.Choice.DEBATE_1
        return "1" if shown_first != self.swapped else "2"
