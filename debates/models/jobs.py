"""Resumable LLM jobs (issue 11): a job is a set of items run one Celery task each, under a
budget, with versioned prompt templates. The machinery is `debates.jobs`; what an item
does is its job's kind (`debates.jobs.kinds`)."""

from django.db import models


class PromptTemplate(models.Model):
    """One version of a named prompt. The latest version of a name is the one used; a
    version that produced data is never edited in place (the admin saves a new version)."""

    name = models.SlugField(max_length=80)
    version = models.PositiveIntegerField(default=1)
    text = models.TextField()
    note = models.CharField(max_length=300, blank=True, help_text="What changed in this version.")
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When a recorded model call first used this version."
    )

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="prompt_template_version")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class Job(models.Model):
    """A set of items of one kind, run with a budget and a concurrency limit."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Not started"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        CANCELLED = "cancelled", "Cancelled"
        BUDGET = "budget", "Stopped: budget reached"
        DONE = "done", "Done"

    name = models.SlugField(max_length=80, unique=True)
    kind = models.CharField(max_length=60, help_text="What each item does (a registered job kind).")
    title = models.CharField(max_length=200, blank=True)
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    budget_usd = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Stop before spending more than this (empty: no limit).",
    )
    concurrency = models.PositiveSmallIntegerField(default=4, help_text="Items running at once, at most.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "LLM job"
        verbose_name_plural = "LLM jobs"

    def __str__(self) -> str:
        return self.name


class JobItem(models.Model):
    """One unit of a job's work (one dialogue to build, one dialogue to judge, …)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=200)
    payload = models.JSONField(default=dict, blank=True)
    stage = models.PositiveSmallIntegerField(
        default=0, help_text="Items of a stage start once no item of an earlier stage is pending or running."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # The most the item's call in flight may cost, held against the budget until it is recorded.
    reserved_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "pk"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_item_key")]
        indexes = [models.Index(fields=["job", "status"])]

    def __str__(self) -> str:
        return f"{self.job.name}:{self.key}"
