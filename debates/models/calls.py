"""The log of every call to a language model, shared by every study design."""

from django.db import models

from debates.models.jobs import JobItem
from debates.models.live import LiveSession, LiveTurn
from debates.models.persuasion import PersuasionDialogue, PersuasionTurn
from studies.models import Study


class LLMCall(models.Model):
    """Every call to a language model, successful or not, with what it cost."""

    study = models.ForeignKey(Study, on_delete=models.SET_NULL, null=True, related_name="+")
    session = models.ForeignKey(LiveSession, on_delete=models.SET_NULL, null=True, related_name="llm_calls")
    turn = models.ForeignKey(LiveTurn, on_delete=models.SET_NULL, null=True, related_name="llm_calls")
    persuasion_dialogue = models.ForeignKey(
        PersuasionDialogue, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_calls"
    )
    persuasion_turn = models.ForeignKey(
        PersuasionTurn, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_calls"
    )
    job_item = models.ForeignKey(
        JobItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_calls"
    )
    role = models.CharField(max_length=20, help_text="debater_a, debater_b, consultant, side_choice, …")
    backend = models.CharField(max_length=20)
    model = models.CharField(max_length=120)
    params = models.JSONField(default=dict)
    template_version = models.PositiveIntegerField(null=True)
    prompt_hash = models.CharField(max_length=64)
    messages = models.JSONField(default=list)
    output = models.TextField(blank=True)
    tokens_in = models.PositiveIntegerField(null=True)
    tokens_out = models.PositiveIntegerField(null=True)
    ttft_ms = models.PositiveIntegerField(null=True, help_text="Latency to the first token.")
    total_ms = models.PositiveIntegerField(null=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    error_kind = models.CharField(max_length=30, blank=True)
    error_message = models.CharField(max_length=500, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "created_at"])]
        verbose_name = "model call"
        verbose_name_plural = "model calls (LLM log)"

    def __str__(self) -> str:
        return f"{self.role or 'call'} to {self.model or self.backend}"
