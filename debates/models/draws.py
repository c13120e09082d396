"""The record of every random draw a study made for a participant: what was drawn, from
which key of the study's seed, and what came out. Shared by every design."""

from django.db import models

from participants.models import Participant


class RandomDraw(models.Model):
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="draws")
    purpose = models.CharField(max_length=40, help_text="e.g. dialogue, claim_cell, side_a, checks.")
    key = models.CharField(max_length=200, help_text="The key of the study's seed the draw used.")
    outcome = models.JSONField(default=dict)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["participant", "id"]
        indexes = [models.Index(fields=["participant", "purpose"])]

    def __str__(self) -> str:
        return f"{self.purpose} ({self.key})"
