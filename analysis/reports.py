"""Reports: a study's analysis computed from its own export tables, written as a folder
(`report.html`, `results.json`, the plots and the CSVs it used) and kept in the database.

The same code serves every way of running it:
- `manage.py analyze <study>` and `manage.py analyze --from-csv DIR --design A|B|C|D` write a
  folder; the analysis always reads the CSVs (exported first for a study), so a study's
  `results.json` and the one computed again from its exports are the same;
- a `Report` row (admin button, API, nightly beat task) runs `report_run()` in a worker, or
  in a thread of the embedded server, showing its progress as it goes. A pilot report (a
  pilot job's, `pilots` listing its participants) reads those pilots only and is kept apart:
  never the study's report (`study_reports`, `latest_report`), pruned separately.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterable
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q, QuerySet
from django.template.loader import render_to_string
from django.utils import timezone

from analysis.configuration import study_configuration
from analysis.exports import TABLES, codebook_lines, csv_lines
from analysis.exports.table import pilot_data
from analysis.models import Report, ReportFile
from studies.models import Study
from studies.services import study_steps

log = logging.getLogger(__name__)

# The step kind that makes a study one of the designs the analysis knows.
DESIGN_OF_KIND = {"dialogue": "A", "claim_session": "B", "persuasion_dialogue": "C", "pairwise": "D"}
DESIGN_NAMES = {
    "A": "Judging a pre-generated debate (paper 000)",
    "B": "Live debate and consultancy (paper 001)",
    "C": "Formal persuasion dialogues and the logical ranking (paper 003)",
    "D": "Pairwise persuasiveness comparisons (paper 003)",
}
Progress = Callable[[int, str], None]


def _quiet(percent: int, stage: str) -> None:
    pass


def study_design(study: Study) -> str:
    """The design a study runs, by its step kinds; ValueError when it runs none of them."""
    for step in study_steps(study):
        if step.kind in DESIGN_OF_KIND:
            return DESIGN_OF_KIND[step.kind]
    raise ValueError(
        f"the study {study.slug!r} has no step the analysis knows (a dialogue, claim, persuasion "
        "dialogue or pairwise step)"
    )


# --- Building a report folder ------------------------------------------------------------


def export_study(study: Study, folder: Path, progress: Progress = _quiet, *, pseudonyms: bool = True) -> None:
    """Write every export table, the study's codebook and its configuration into `folder`.
    Prolific's ids are pseudonymised unless asked otherwise: the analysis joins on
    participant_id, and a report is shown to everyone who may see the study."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, (name, table) in enumerate(TABLES.items()):
        progress(5 + 40 * n // len(TABLES), f"exporting {name}")
        with open(folder / f"{name}.csv", "w", encoding="utf-8", newline="") as handle:
            handle.writelines(csv_lines(table, study, pseudonyms=pseudonyms))
    with open(folder / "codebook.csv", "w", encoding="utf-8", newline="") as handle:
        handle.writelines(codebook_lines(study))
    (folder / "study.json").write_text(json.dumps(study_configuration(study), indent=1, ensure_ascii=False))


def read_design_tables(data: Path, design: str) -> dict:
    """The export tables in `data` that `design`'s report reads, typed and checked: the
    platform's, and design C's or the LLM participants' and judges' when there are any."""
    from analysis.metrics import llm_judges, llm_persona, persuasion
    from analysis.metrics.frames import read_tables

    extra = {"A": llm_judges, "B": llm_persona, "C": persuasion}.get(design)
    return read_tables(data, also=extra.read_tables if extra else None)


def build_report(
    data: Path,
    out: Path,
    design: str,
    *,
    seed: int = 0,
    bootstrap: int | None = None,
    progress: Progress = _quiet,
) -> dict:
    """Analyse the CSVs in `data` as `design` and write `results.json`, the plots and
    `report.html` into `out` (which may be `data`). Returns the results."""
    if design not in DESIGN_NAMES:
        raise ValueError(f"unknown design {design!r}: use A, B, C or D")
    # The statistics (pandas, SciPy, matplotlib) load only where a report is computed, not
    # in every web process.
    from analysis.metrics.frames import notes_of
    from analysis.metrics.report import analyze, figures

    progress(50, "reading the tables")
    tables = read_design_tables(data, design)
    notes = notes_of(tables)
    config, unread = study_json(data)
    notes += unread
    progress(55, "computing the statistics")
    results = analyze(
        tables,
        design,
        seed=seed,
        bootstrap=bootstrap or settings.REPORT_BOOTSTRAP,
        item_order=item_order(config),
        study_dialogues=study_dialogues(config),
        item_kinds=item_kinds(config),
    )
    if notes:  # columns a spreadsheet changed, read otherwise than exported: first on the page
        results["warnings"] = notes + list(results.get("warnings") or [])
    results["study_sha256"] = sorted(  # the frozen snapshots the data come from
        {
            v
            for frame in tables.values()
            if "study_sha256" in frame
            for v in frame["study_sha256"].dropna()
            if v
        }
    )
    progress(85, "drawing the plots")
    pictures = figures(results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    names = []
    for name, png in pictures.items():
        names.append(name if name.endswith(".png") else f"{name}.png")
        (out / "figures" / names[-1]).write_bytes(png)
    (out / "results.json").write_text(results_json(results))
    progress(95, "writing the page")
    (out / "report.html").write_text(
        report_html(results, design=design, config=config, figures=sorted(names), seed=seed)
    )
    return results


def study_json(data: Path) -> tuple[dict | None, list[str]]:
    """The study's configuration from `data/study.json` if it is there, with a warning when it
    is there but cannot be read as one (not JSON, or not a JSON object): the file is optional
    (CSV files merged from several studies have none), so the report is made without it."""
    path = data / "study.json"
    if not path.exists():
        return None, []
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        why = f"not JSON ({error})"
    else:
        if isinstance(config, dict):
            return config, []
        why = "JSON but not an object as the export writes"
    return None, [
        f"study.json could not be read as the study's configuration, {why}: the report is made "
        "without it (the study's settings and steps are not shown). Export the study again to have it."
    ]


def _questions(config: dict | None):
    """study.json's questions, in the order its pages show them (steps, then each step's), each
    a dict with a text key; anything else in the file is passed over."""
    for step in (config or {}).get("steps") or ():
        for question in (step.get("questions") if isinstance(step, dict) else None) or ():
            if isinstance(question, dict) and isinstance(question.get("key"), str):
                yield question


def item_order(config: dict | None) -> list[str]:
    """The study's item keys in the order its pages show them, or none."""
    return [question["key"] for question in _questions(config)]


def item_kinds(config: dict | None) -> dict[str, str]:
    """Each item's kind (likert, single_choice, …) from study.json, or none."""
    return {question["key"]: str(question.get("kind") or "") for question in _questions(config)}


def study_dialogues(config: dict | None) -> list[str]:
    """The study's dialogues that take participants (study.json: `dialogues`, active ones), or
    none."""
    listed = (config or {}).get("dialogues")
    if not isinstance(listed, list):
        return []
    return [
        d["dialogue"]
        for d in listed
        if isinstance(d, dict) and isinstance(d.get("dialogue"), str) and d.get("active", True) is not False
    ]


def results_json(results: dict) -> str:
    return json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _cell(value) -> dict:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    text = "—" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
    return {"text": text, "num": number}


def _table(columns: list, rows: list) -> tuple[list, list]:
    return [str(c) for c in columns], [[_cell(v) for v in row] for row in rows]


def report_html(results: dict, *, design: str, config: dict | None, figures: list[str], seed: int) -> str:
    tables, skipped = [], results.get("skipped") or {}
    for table in results.get("tables", []):
        columns, rows = _table(table.get("columns", []), table.get("rows", []))
        why = skipped.get(table.get("key"))  # an empty table whose analysis was not computed
        empty = f"Not computed: {why}." if why else "No data yet."
        tables.append({**table, "columns": columns, "rows": rows, "empty": empty})
    return render_to_string(
        "analysis/report.html",
        {
            "results": results,
            # What was not computed and why, and what to read with care: results.json had them,
            # the page did not (a table just missing, or "No data yet." beside its data).
            "skipped": sorted(skipped.items()),
            "warnings": results.get("warnings") or [],
            "tables": tables,
            "design": design,
            "design_name": DESIGN_NAMES[design],
            "config": config,
            "config_json": json.dumps(config, indent=1, ensure_ascii=False) if config else "",
            "figures": figures,
            "seed": seed,
            "generated_at": timezone.now(),
        },
    )


def analyze_study(
    study: Study,
    out: Path,
    *,
    seed: int = 0,
    pseudonyms: bool = True,
    progress: Progress = _quiet,
    pilots: bool | Iterable[int] = False,
) -> dict:
    """The whole report of a study into `out`: its exports, then the analysis of them. With
    `pilots`, the exports (and so the report) read the study's pilot participants only (those
    whose ids `pilots` lists, when it is a list)."""
    design = study_design(study)
    only = None if pilots is True else pilots
    with pilot_data(only) if pilots is not False else contextlib.nullcontext():
        export_study(study, out, progress, pseudonyms=pseudonyms)
    return build_report(out, out, design, seed=seed, progress=progress)


# --- Reports kept in the database --------------------------------------------------------


def report_request(
    *, study: Study, trigger: str, user=None, seed: int = 0, pilots: Iterable[int] | None = None
) -> Report:
    """Queue a new computation of the study's report, unless one is queued or running (then
    that one is returned). It starts once the current transaction commits. With `pilots` (the
    ids of pilot participants), a pilot report of those pilots only: never the study's report,
    and a pending one is returned only for the same pilots."""
    design = study_design(study)
    chosen = None if pilots is None else sorted(set(pilots))
    if chosen == []:
        raise ValueError("there are no pilot participants to report on")
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()  # one request at a time
        pending = Report.objects.filter(
            study=study,
            status__in=[Report.Status.QUEUED, Report.Status.RUNNING],
            pilots__isnull=chosen is None,
        )
        existing = next((r for r in pending.defer("html", "results") if r.pilots == chosen), None)
        if existing is not None:
            return existing
        report = Report.objects.create(
            study=study,
            design=design,
            trigger=trigger,
            requested_by=user,
            seed=seed,
            created_at=timezone.now(),
            pilots=chosen,
        )
        transaction.on_commit(lambda: report_start(report.pk))
    return report


def report_start(report_id: int) -> None:
    """Run the report where background work runs: a Celery worker, or in the embedded
    default a thread of this process (so the request that asked returns at once)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        threading.Thread(target=_run_in_thread, args=[report_id], name="rostrum-report", daemon=True).start()
        return
    from analysis.tasks import run_report

    run_report.delay(report_id)


def _run_in_thread(report_id: int) -> None:
    try:
        report_run(report_id=report_id)
    finally:
        close_old_connections()


def report_run(*, report_id: int) -> Report | None:
    """Compute a queued report (idempotent: a report already taken is left alone)."""
    taken = Report.objects.filter(pk=report_id, status=Report.Status.QUEUED).update(
        status=Report.Status.RUNNING, started_at=timezone.now(), stage="starting", progress=1
    )
    if not taken:
        return None
    report = Report.objects.select_related("study").get(pk=report_id)

    def progress(percent: int, stage: str) -> None:
        Report.objects.filter(pk=report_id).update(progress=percent, stage=stage[:120])

    try:
        with tempfile.TemporaryDirectory(prefix="rostrum-report-") as tmp:
            folder = Path(tmp)
            pilots = report.pilots if report.of_pilots else False
            results = analyze_study(report.study, folder, seed=report.seed, progress=progress, pilots=pilots)
            _store(report, folder, results)
    except Exception as error:  # the report fails visibly; the next request may succeed
        log.exception("report %s failed", report_id)
        Report.objects.filter(pk=report_id).update(
            status=Report.Status.FAILED,
            error=f"{type(error).__name__}: {error}"[:2000],
            finished_at=timezone.now(),
        )
        return Report.objects.get(pk=report_id)
    reports_prune(study=report.study)
    return Report.objects.get(pk=report_id)


@transaction.atomic
def _store(report: Report, folder: Path, results: dict) -> None:
    files = [
        ReportFile(
            report=report, name=f"figures/{png.name}", content_type="image/png", content=png.read_bytes()
        )
        for png in sorted((folder / "figures").glob("*.png"))
    ]
    files.append(
        ReportFile(report=report, name="data.zip", content_type="application/zip", content=_zip_data(folder))
    )
    ReportFile.objects.bulk_create(files)
    Report.objects.filter(pk=report.pk).update(
        status=Report.Status.DONE,
        progress=100,
        stage="done",
        results=results,
        html=(folder / "report.html").read_text(),
        finished_at=timezone.now(),
    )


def _zip_data(folder: Path) -> bytes:
    """The CSVs, codebook, configuration and results.json the report was computed from."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.iterdir()):
            if path.suffix in (".csv", ".json"):
                archive.write(path, path.name)
    return buffer.getvalue()


def reports_prune(*, study: Study) -> int:
    """Keep the study's last REPORTS_KEPT finished nightly reports, apart from them its last
    REPORTS_KEPT reports asked for (admin, API, command), and its last REPORTS_KEPT pilot
    reports; delete the older ones. Kept apart, reports asked for one after another (anyone
    who may ask, a script's loop) cannot push the nightly history out."""
    old: list[int] = []
    nightly = Q(trigger=Report.Trigger.NIGHTLY)
    for of_pilots, which in ((False, nightly), (False, ~nightly), (True, Q())):
        finished = study_reports(study, pilots=of_pilots).filter(
            which, status__in=[Report.Status.DONE, Report.Status.FAILED]
        )
        old += finished.order_by("-created_at").values_list("pk", flat=True)[settings.REPORTS_KEPT :]
    Report.objects.filter(pk__in=old).delete()
    return len(old)


def reports_nightly(*, now=None) -> list[Report]:
    """Queue the report of every live study and of every study closed in the last
    REPORTS_RECENT_DAYS days (studies the analysis knows nothing of are skipped)."""
    now = now or timezone.now()
    recent = now - timedelta(days=settings.REPORTS_RECENT_DAYS)
    studies = Study.objects.filter(status=Study.Status.LIVE) | Study.objects.filter(
        status__in=[Study.Status.CLOSED, Study.Status.PAUSED], updated_at__gte=recent
    )
    queued = []
    for study in studies.order_by("pk"):
        try:
            queued.append(report_request(study=study, trigger=Report.Trigger.NIGHTLY))
        except ValueError:
            continue
    return queued


def study_reports(study: Study, *, pilots: bool = False) -> QuerySet[Report]:
    """The study's own reports (of its real participants), or with `pilots` its pilot reports."""
    return Report.objects.filter(study=study, pilots__isnull=not pilots)


def latest_report(study: Study) -> Report | None:
    """The study's newest report (of its real participants: never a pilot report)."""
    return study_reports(study).order_by("-created_at").first()


def latest_done_report(study: Study) -> Report | None:
    """The study's newest computed report (never a pilot report)."""
    return study_reports(study).filter(status=Report.Status.DONE).order_by("-created_at").first()


def pilot_reports(study: Study, *, pilots: Iterable[int]) -> QuerySet[Report]:
    """The study's pilot reports on these pilots or some of them (a pilot job's report asked
    before more of its pilots walked), newest first."""
    wanted = set(pilots)
    pks = [
        pk
        for pk, some in study_reports(study, pilots=True).values_list("pk", "pilots")
        if some and set(some) <= wanted
    ]
    return Report.objects.filter(pk__in=pks).order_by("-created_at")
