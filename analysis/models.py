"""Reports: one computation of a study's analysis (its results, its HTML page and the files
it made), kept in the database so every server of a deployment can show it. A pilot report
reads the pilot participants it lists only, and is never the study's report."""

from django.conf import settings
from django.db import models

from studies.models import Study


class Report(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        NIGHTLY = "nightly", "Nightly"
        ADMIN = "admin", "Admin"
        API = "api", "API"
        COMMAND = "command", "Command"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="reports")
    design = models.CharField(max_length=1, help_text="The study design analysed: A, B, C or D.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    stage = models.CharField(max_length=120, blank=True, help_text="What the computation is doing now.")
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seed = models.IntegerField(default=0, help_text="Seed of the bootstrap resamples.")
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    results = models.JSONField(null=True, blank=True, help_text="results.json: every figure, by name.")
    html = models.TextField(blank=True, help_text="report.html (its images are the report's files).")
    pilots = models.JSONField(
        null=True,
        blank=True,
        help_text="A pilot report: the ids of the pilot participants it reads (none: the study's own "
        "report, of its real participants).",
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "status", "created_at"])]

    def __str__(self) -> str:
        kind = "pilot report" if self.of_pilots else "report"
        return f"{self.study.slug} {kind} of {self.created_at:%Y-%m-%d %H:%M} ({self.get_status_display()})"

    @property
    def of_pilots(self) -> bool:
        return self.pilots is not None


class ReportFile(models.Model):
    """A file of a report: a PNG plot, or the zip of the CSVs it used."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=120)
    content_type = models.CharField(max_length=80)
    content = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["report", "name"], name="one_file_per_name")]

    def __str__(self) -> str:
        return self.name
