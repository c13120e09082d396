"""The job kind "pilot": `manage.py pilot` from the admin, as an LLM job with progress.

plan: one item per simulated participant, keys "p001", "p002", … (payload: its number, which
seeds its temperament and answers as the command's n-th participant). run: the participant
walks the study on the server at the configured base URL, through its pages and websockets
as a browser would (`pilots.services.participant_walk`, synchronous, in a thread), and the
item's result is its record (`pilots.services.pilot_record`: how it ended, pages, where it
got stuck, status, exclusions, failed checks). With the llm policy every model call goes
through the item's `Calls` (budgeted, in the call log with the item), bridged from the walk's
thread to the item's event loop. summary: the pages where pilots got stuck or failed checks,
then a row of the outcomes counted, then where the report on these pilots is once requested.
links: "Report on these pilots" (`pilots.admin.pilot_report_view`), once an item is done: the
study's analysis report on the data of the job's pilots only (`job_pilots`), kept apart from
the study's own reports.

An item's participant has a PROLIFIC_PID made from the job and the item's key, so an item run
again (after a budget stop or a lost worker) resumes its participant where it was. A server
that cannot be reached fails the item (retried later): that is the job's set-up, not a page of
the study. The job's concurrency is how many pilots walk at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from decimal import Decimal, InvalidOperation
from types import SimpleNamespace
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from analysis.models import Report
from analysis.reports import pilot_reports
from debates import llm
from debates.jobs.calls import Calls
from debates.jobs.kinds import ItemFailed, ItemSpec, JobKind
from debates.jobs.services import JobError
from debates.models import Job, JobItem, LLMCall
from debates.streaming import db
from participants.models import Participant
from participants.services import PILOT_STUDY_STATUSES, pilot_token
from pilots import services
from pilots.policies import Complete, policy_named, seeded_one
from pilots.walker import UNREACHABLE
from studies.models import Study

KIND = "pilot"
ROLE = "pilot"
DEFAULT_PARTICIPANTS = 10
MAX_PARTICIPANTS = 1000


def default_base_url() -> str:
    return getattr(settings, "SITE_URL", "http://127.0.0.1:8000")


def _study_choices() -> list[tuple[str, str]]:
    studies = Study.objects.filter(status__in=PILOT_STUDY_STATUSES).order_by("slug")
    return [(s.slug, f"{s.slug} — {s.title} ({s.get_status_display().lower()})") for s in studies]


class BaseURLField(forms.CharField):
    """An http(s) origin such as http://127.0.0.1:8000 or http://web:8000 (Django's URLField
    refuses a host without a dot, like a container's name)."""

    def to_python(self, value):
        return (super().to_python(value) or "").strip().rstrip("/")

    def validate(self, value):
        super().validate(value)
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise forms.ValidationError("Give the server's address, like http://127.0.0.1:8000.")


class PilotConfigForm(forms.Form):
    study = forms.ChoiceField(
        choices=_study_choices,
        help_text="A draft or live study (pilots hold no places and are not real data).",
    )
    participants = forms.IntegerField(
        min_value=1,
        max_value=MAX_PARTICIPANTS,
        initial=DEFAULT_PARTICIPANTS,
        help_text="Simulated participants, one item each; the job's concurrency is how many walk at once.",
    )
    policy = forms.ChoiceField(
        choices=[
            ("scripted", "Scripted: plausible answers, fast"),
            ("llm", "LLM: a model reads each page and answers it"),
        ],
        initial="scripted",
    )
    model = forms.CharField(
        required=False, help_text="With the LLM policy: the model, through the configured LLM backend."
    )
    temperature = forms.FloatField(min_value=0, max_value=2, initial=0.0, required=False)
    max_tokens = forms.IntegerField(min_value=50, max_value=8000, initial=600, required=False)
    price_in = forms.DecimalField(
        min_value=0, required=False, help_text="USD per million prompt tokens (for the cost and the budget)."
    )
    price_out = forms.DecimalField(min_value=0, required=False, help_text="USD per million answer tokens.")
    base_url = BaseURLField(
        initial=default_base_url,
        help_text="The server the simulated participants walk, as browsers would: this site, normally "
        "(its address as the workers running the job reach it).",
    )
    seed = forms.IntegerField(initial=1, required=False, help_text="Seeds temperaments and answers.")
    attentive = forms.FloatField(
        min_value=0, max_value=1, initial=0.9, required=False, help_text="Share of attentive participants."
    )


def participant_key(n: int) -> str:
    return f"p{n:03d}"


def participant_pid(item: JobItem) -> str:
    """The item's simulated participant's PROLIFIC_PID (24 hex digits, as Prolific's): the
    same for every attempt, so an item run again (after a budget stop, a pause or a lost
    worker) resumes its participant where it was instead of leaving it half-way."""
    return hashlib.sha256(f"rostrum-pilot:{item.job_id}:{item.key}".encode()).hexdigest()[:24]


class PilotKind(JobKind):
    key = KIND
    label = "Pilot with simulated participants"
    description = (
        "Simulated participants walk a draft or live study on the running server, as browsers would; "
        "the pages where they got stuck or failed checks."
    )
    config_form = PilotConfigForm

    def plan(self, job: Job) -> list[ItemSpec]:
        config = job.config or {}
        study = Study.objects.filter(slug=config.get("study") or "").first()
        if study is None:
            raise JobError("The job names no study that exists.")
        if study.status not in PILOT_STUDY_STATUSES:
            raise JobError(
                f"The study is {study.get_status_display().lower()}: pilots run on draft or live studies."
            )
        if config.get("policy") == "llm" and not config.get("model"):
            raise JobError("The LLM policy needs a model.")
        n = int(config.get("participants") or 0)
        return [ItemSpec(key=participant_key(i), payload={"n": i}) for i in range(1, n + 1)]

    async def run(self, item: JobItem, calls: Calls) -> dict:
        config = item.job.config
        study = await db(_study)(config["study"])
        if study is None or study.status not in PILOT_STUDY_STATUSES:
            raise ItemFailed(f"the study {config['study']!r} is gone, or neither a draft nor live")
        policy = policy_named(
            config.get("policy") or "scripted",
            model=config.get("model") or "",
            temperature=config.get("temperature") or 0.0,
            max_tokens=config.get("max_tokens") or 600,
            complete=through_calls(calls, asyncio.get_running_loop(), prices_of(config)),
        )
        base_url = config.get("base_url") or default_base_url()
        outcome = await asyncio.to_thread(
            services.participant_walk,
            study,
            base_url=base_url,
            rng=seeded_one(config.get("seed") or 1, item.payload["n"]),
            policy=policy,
            token=pilot_token(study),
            attentive=config.get("attentive") if config.get("attentive") is not None else 0.9,
            pid=participant_pid(item),
        )
        if not outcome.pages and outcome.stuck and outcome.stuck.reason.startswith(UNREACHABLE):
            raise ItemFailed(f"{base_url} cannot be reached: {outcome.stuck.reason}", retryable=True)
        return await db(_recorded)(study, item.pk, outcome)

    def summary(self, job: Job) -> list[dict]:
        records = [
            result
            for result in job.items.filter(status=JobItem.Status.DONE)
            .order_by("key")
            .values_list("result", flat=True)
            if result
        ]
        failed = job.items.filter(status=JobItem.Status.FAILED).count()
        if not records and not failed:
            return []
        study = Study.objects.filter(slug=(job.config or {}).get("study") or "").first()
        problems = services.problems_in(study, records)
        rows = [
            {"Page": p.where(), "Stuck": p.stuck, "Failed checks": p.failed_checks, "Why": p.why()}
            for p in problems
        ]
        rows.append(
            {
                "Page": f"All {len(records)} simulated participants",
                "Stuck": sum(p.stuck for p in problems),
                "Failed checks": sum(p.failed_checks for p in problems),
                "Why": outcomes_text(records, failed),
            }
        )
        return rows + (report_rows(job, study) if study is not None else [])

    def links(self, job: Job) -> list[tuple[str, str]]:
        study = _study(str((job.config or {}).get("study") or ""))
        if study is None or not job.items.filter(status=JobItem.Status.DONE).exists():
            return []
        return [("Report on these pilots", report_url(job, study))]


def job_pilots(job: Job) -> list[int]:
    """The ids of the job's pilot participants whose walks are done (those the summary counts),
    found by their items' PROLIFIC_PIDs."""
    done = job.items.filter(status=JobItem.Status.DONE).only("job_id", "key")
    pids = [participant_pid(item) for item in done]
    found = Participant.objects.filter(
        study__slug=(job.config or {}).get("study") or "", is_pilot=True, prolific_pid__in=pids
    )
    return sorted(found.values_list("pk", flat=True))


def report_rows(job: Job, study: Study) -> list[dict]:
    """The summary's row saying where the report on the job's pilots is, once requested (the
    newest on them, or on those done when it was asked)."""
    pilots = job_pilots(job)
    report = pilot_reports(study, pilots=pilots).first()
    if report is None:
        return []
    why = f"{report_text(report, len(pilots))}: {report_url(job, study)}"
    return [{"Page": "Report on these pilots", "Stuck": "", "Failed checks": "", "Why": why}]


def report_url(job: Job, study: Study) -> str:
    return reverse("admin:studies_study_pilot_report", args=[study.pk, job.pk])


def report_text(report: Report, pilots: int) -> str:
    """Where the report on the job's pilots stands, in words."""
    of = f"{len(report.pilots)} pilots"
    if len(report.pilots) < pilots:
        of += f" (of {pilots} now: compute it again for all)"
    if report.status == Report.Status.DONE:
        return f"computed {timezone.localtime(report.finished_at):%Y-%m-%d %H:%M} on {of}"
    if report.status == Report.Status.FAILED:
        return f"failed on {of}: {report.error[:200]}"
    return f"being computed on {of} ({report.progress}%)"


def outcomes_text(records: list[dict], failed_items: int = 0) -> str:
    """The pilots' outcomes counted: endings, statuses, exclusions (the expected ones saying
    why), the model's unusable answers, and the items that failed."""
    counted = services.tally(records)
    parts = [f"Endings: {_counts(counted['endings'])}.", f"Statuses: {_counts(counted['statuses'])}."]
    if counted["exclusions"]:
        parts.append(f"Exclusions from analysis: {services.exclusions_text(counted['exclusions'])}.")
    fallbacks = sum(1 for r in records for note in r.get("notes") or [] if note.get("result") == "fallback")
    if fallbacks:
        parts.append(f"The model's answer was unusable {fallbacks} times (scripted answer used).")
    if failed_items:
        parts.append(f"{failed_items} item(s) failed: see their errors below.")
    return " ".join(parts)


def _counts(counted: dict[str, int]) -> str:
    return ", ".join(f"{key} ×{n}" for key, n in sorted(counted.items()))


def prices_of(config: dict) -> SimpleNamespace | None:
    """The model's prices (USD per million tokens) as `Calls` reads them, or None."""
    try:
        price_in = Decimal(str(config.get("price_in") or 0))
        price_out = Decimal(str(config.get("price_out") or 0))
    except InvalidOperation:
        return None
    if not price_in and not price_out:
        return None
    return SimpleNamespace(price_in_per_mtok=price_in, price_out_per_mtok=price_out)


def through_calls(calls: Calls, loop: asyncio.AbstractEventLoop, prices) -> Complete:
    """The LLM policy's `complete` for a job item: from the walk's thread, the item's budgeted,
    logged `Calls.complete` on the item's event loop. A budget stop or a cancellation
    (`JobStopped`) ends the walk and reaches the runner."""

    def complete(request: llm.LLMRequest) -> llm.LLMResult:
        call = calls.complete(request, role=ROLE, prices=prices)
        return asyncio.run_coroutine_threadsafe(call, loop).result()

    return complete


def _study(slug: str) -> Study | None:
    return Study.objects.filter(slug=slug).first()


def _recorded(study: Study, item_id: int, outcome) -> dict:
    """The pilot's record; its model calls (logged with the item) counted to the study too."""
    LLMCall.objects.filter(job_item_id=item_id, study__isnull=True).update(study=study)
    return services.pilot_record(study, outcome)


def pilot_job_create(
    *,
    study: Study,
    base_url: str,
    participants: int = DEFAULT_PARTICIPANTS,
    policy: str = "scripted",
    concurrency: int = 4,
    **config,
) -> Job:
    """A draft pilot job of `study` (validated through the kind's form), to check and start on
    its admin page."""
    values = {
        "study": study.slug,
        "participants": participants,
        "policy": policy,
        "base_url": base_url,
        "seed": 1,
        "attentive": 0.9,
        "temperature": 0.0,
        "max_tokens": 600,
        **config,
    }
    cleaned = PilotKind().clean_config(values)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    name = f"pilot-{study.slug[:50]}-{stamp}"
    if Job.objects.filter(name=name).exists():
        name = f"{name}-{secrets.token_hex(2)}"
    return Job.objects.create(
        name=name,
        kind=KIND,
        title=f"Pilot of {study.title}"[:200],
        config=cleaned,
        concurrency=concurrency,
    )
