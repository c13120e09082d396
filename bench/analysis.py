"""Analysis benchmark: exports, a whole report, and the Bradley–Terry bootstrap, each against
a baseline measured in the same run.

    .venv/bin/python -m bench.analysis [--responses 100000] [--participants 400]   # from the repo root

1. Export: a study with `--responses` responses in a fresh PostgreSQL database, exported as
   the `responses` CSV by the platform's streaming export in a separate process (rows/s and
   peak memory, at two sizes: memory must not grow with the row count); baseline: PostgreSQL's
   own COPY of the same rows to CSV.
2. The whole design-A report (tables, bootstrap, plots, page) for `--participants` synthetic
   participants; baseline: reading the same CSVs with pandas.
3. Bradley–Terry with 1,000 bootstrap resamples on 10,000 comparisons among 22 interlocutors;
   baseline: one fit on all the comparisons.

Targets (issue 8): peak export memory under 150 MB and flat; the report under 30 s; the
bootstrap under 10 s. A missed target is reported, not failed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DB = "rostrum_bench_analysis"
PG = "postgres://postgres@127.0.0.1:5432"
# The benchmark's own database is no deployment: DEBUG stays on (with DATABASE_URL set it is
# off by default, and a SECRET_KEY required), here and in the processes started below.
os.environ.setdefault("DEBUG", "1")


def django_setup(database_url: str | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


def peak_mb() -> float:
    """This process's peak resident memory since it started (VmHWM; getrusage's ru_maxrss
    would carry over the parent's peak across fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- 1. Export ----------------------------------------------------------------------------


def fresh_database() -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
    url = f"{PG}/{DB}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("REDIS_URL", None)
    subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    return url


def fill(responses: int, slug: str) -> None:
    """A live questionnaire study whose participants left `responses` answers (10 each)."""
    from django.utils import timezone

    from participants.models import Participant, Response
    from studies.services import study_build, study_set_status

    items = [
        {"key": f"q{n}", "kind": "likert", "text": f"Item {n}", "options": ["No", "Maybe", "Yes"]}
        for n in range(10)
    ]
    spec = {
        "slug": slug,
        "title": "Export benchmark",
        "completion_code": "CDONE",
        "failed_check_code": "CFAIL",
        "no_consent_code": "CNOCON",
        "prolific_study_id": secrets.token_hex(12),  # a live study needs one (or to be a pilot)
        "steps": [{"kind": "questionnaire", "title": "Items", "questions": items}],
    }
    study = study_build(spec=spec)
    study_set_status(study=study, status="live")
    now = timezone.now()
    for start in range(0, responses // 10, 2000):
        people = Participant.objects.bulk_create(
            Participant(
                study=study,
                prolific_pid=f"{n:024x}",
                status="completed",
                started_at=now,
                last_seen_at=now,
                expires_at=now,
                finished_at=now,
            )
            for n in range(start, min(start + 2000, responses // 10))
        )
        Response.objects.bulk_create(
            Response(
                participant=p,
                position=1,
                step_kind="questionnaire",
                key=f"q{k}",
                value="Maybe",
                value_num=2.0,
                created_at=now,
            )
            for p in people
            for k in range(10)
        )


def export_child(slug: str) -> None:
    """In its own process: stream the responses table to /dev/null; print rows/s and peak MB."""
    from analysis.exports import TABLES, csv_lines
    from studies.models import Study

    study = Study.objects.get(slug=slug)
    before = peak_mb()
    started = time.perf_counter()
    rows = -1  # the header
    with open(os.devnull, "w") as sink:
        for line in csv_lines(TABLES["responses"], study):
            sink.write(line)
            rows += 1
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": rows, "seconds": seconds, "peak_mb": peak_mb(), "before_mb": before}))


def copy_baseline(url: str, slug: str) -> dict:
    """PostgreSQL's own COPY of the same responses to CSV (what the database alone can do)."""
    import psycopg

    query = (
        "COPY (SELECT r.participant_id, p.prolific_pid, r.position, r.step_kind, r.key, r.value, "
        "r.value_num, r.is_check, r.passed, r.created_at FROM participants_response r "
        "JOIN participants_participant p ON p.id = r.participant_id "
        "JOIN studies_study s ON s.id = p.study_id "
        f"WHERE s.slug = '{slug}' ORDER BY r.participant_id, r.position, r.id) TO STDOUT WITH CSV HEADER"
    )
    rows, started = -1, time.perf_counter()
    with psycopg.connect(url) as conn, conn.cursor() as cursor, cursor.copy(query) as copy:
        for chunk in copy:
            rows += bytes(chunk).count(b"\n")
    return {"rows": rows, "seconds": time.perf_counter() - started}


def bench_export(responses: int) -> dict:
    url = fresh_database()
    django_setup(url)
    sizes = sorted({max(responses // 5, 10), responses})
    out = {}
    for size in sizes:
        slug = f"export-{size}"
        fill(size, slug)
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings"}
        done = subprocess.run(
            [PYTHON, "-m", "bench.analysis", "--export-child", slug],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        child = json.loads(done.stdout.strip().splitlines()[-1])
        base = copy_baseline(url, slug)
        out[size] = {
            "rows": child["rows"],
            "rows_per_s": child["rows"] / child["seconds"],
            "peak_mb": child["peak_mb"],
            "copy_rows_per_s": base["rows"] / base["seconds"],
        }
    return out


# --- 2. The design-A report, and 3. the Bradley–Terry bootstrap ----------------------------------


def bench_report(participants: int) -> dict:
    import pandas as pd

    from analysis.metrics.synthetic import synthetic_a
    from analysis.reports import build_report

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, frame in synthetic_a(participants, seed=1).items():
            frame.to_csv(folder / f"{name}.csv", index=False)
        started = time.perf_counter()
        for path in folder.glob("*.csv"):
            pd.read_csv(path, dtype=str, keep_default_na=False)
        baseline = time.perf_counter() - started
        started = time.perf_counter()
        results = build_report(folder, folder / "report", "A", seed=0, bootstrap=1000)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "read_csv_seconds": baseline, "judgements": results["n"]["judgements"]}


def bench_bootstrap(comparisons: int, interlocutors: int, replicates: int) -> dict:
    import numpy as np

    from analysis.metrics import pairwise, ranking
    from analysis.metrics.frames import typed
    from analysis.metrics.synthetic import synthetic_d

    frames = synthetic_d(comparisons, interlocutors, seed=1)
    valid = pairwise.valid_comparisons(typed("comparisons", frames["comparisons"]))
    labels = pairwise.interlocutors(valid)
    first, second, codes = pairwise.encode(valid, labels)
    n = len(labels)
    started = time.perf_counter()
    ranking.fit_strengths(ranking.win_matrix_codes(first, second, codes, n))
    one = time.perf_counter() - started
    started = time.perf_counter()
    ranking.bootstrap_strengths(first, second, codes, n, replicates, np.random.default_rng(1))
    seconds = time.perf_counter() - started
    return {"comparisons": len(valid), "interlocutors": n, "seconds": seconds, "one_fit_seconds": one}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=100_000)
    parser.add_argument("--participants", type=int, default=400)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--skip-export", action="store_true", help="no PostgreSQL part")
    parser.add_argument("--export-child", metavar="SLUG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export_child:
        django_setup()
        export_child(args.export_child)
        return
    if not args.skip_export:
        for r in bench_export(args.responses).values():
            ratio = r["rows_per_s"] / r["copy_rows_per_s"]
            print(
                f"export of {r['rows']:,} responses: {r['rows_per_s']:,.0f} rows/s,"
                f" peak {r['peak_mb']:.0f} MB"
                f" (target < 150 MB, flat); PostgreSQL COPY baseline {r['copy_rows_per_s']:,.0f} rows/s,"
                f" ratio {ratio:.2f}"
            )
    else:
        django_setup("sqlite:///" + tempfile.mkdtemp() + "/bench.sqlite3")
    rep = bench_report(args.participants)
    print(
        f"design-A report, {args.participants} participants ({rep['judgements']} judgements), 1,000"
        f" bootstrap replicates, plots and page: {rep['seconds']:.2f} s (target < 30 s); reading the"
        f" CSVs with pandas {rep['read_csv_seconds']:.3f} s,"
        f" ratio {rep['seconds'] / rep['read_csv_seconds']:.0f}"
    )
    boot = bench_bootstrap(10_000, 22, args.replicates)
    one = boot["one_fit_seconds"]
    print(
        f"Bradley–Terry, {boot['comparisons']:,} comparisons among {boot['interlocutors']},"
        f" {args.replicates:,} bootstrap resamples: {boot['seconds']:.2f} s (target < 10 s);"
        f" one fit {one * 1000:.1f} ms, ratio {boot['seconds'] / one:.0f}"
    )


if __name__ == "__main__":
    main()
