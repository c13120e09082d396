"""Arrivals benchmark: N Prolific participants start the same study at once.

    .venv/bin/python -m bench.arrivals [--participants 500] [--think-ms 0]   # from the repository root

Sets up a fresh PostgreSQL database with a live questionnaire study, serves Rostrum with
uvicorn (one worker per core, DEBUG off), walks every participant through the study from a
separate client process, measures throughput, page latency and the CPU the server and
PostgreSQL spend, checks every answer landed in the database, then repeats the same round
trips against a bare ASGI hello-world served the same way as a baseline. See bench/README.md.

Exits non-zero only when the benchmark cannot run (set-up, server or client failure); a
missed target is reported, not failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from bench import procstat
from config.protocol import UVICORN_OPTIONS

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
PYTHON = sys.executable
UVICORN = str(Path(sys.executable).parent / "uvicorn")

TARGET_PPS = 30.0
TARGET_P95_MS = 1000.0  # issue #12: p95 page latency, 500 at once, no think time
TARGET_CPU_MS = 20.0  # issue #12: server + PostgreSQL CPU per participant


class SetupError(Exception):
    """The benchmark cannot run; the message says why."""


# --- Helpers ------------------------------------------------------------------------------


def say(message: str) -> None:
    print(f"[bench] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of unsorted values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine (all cores) since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    steal = fields[7] if len(fields) > 7 else 0
    return (sum(fields[:8]) - idle - steal) / procstat.TICK


def run(cmd: list[str], env: dict, what: str, timeout: float = 300) -> str:
    try:
        done = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise SetupError(f"{what} timed out after {timeout}s") from None
    if done.returncode != 0:
        raise SetupError(f"{what} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")
    return done.stdout


# --- PostgreSQL -----------------------------------------------------------------------------


class Postgres:
    """An admin connection to the cluster (database `postgres`) for set-up and measurements."""

    def __init__(self, admin_url: str, db_name: str) -> None:
        import psycopg

        self.psycopg = psycopg
        self.admin_url = admin_url.rstrip("/")
        self.db_name = db_name
        try:
            self.conn = psycopg.connect(f"{self.admin_url}/postgres", autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise SetupError(f"cannot connect to PostgreSQL at {self.admin_url}: {exc}") from None

    @property
    def url(self) -> str:
        return f"{self.admin_url}/{self.db_name}"

    def recreate(self) -> None:
        from psycopg import sql

        name = sql.Identifier(self.db_name)
        try:
            self.conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
            self.conn.execute(sql.SQL("CREATE DATABASE {}").format(name))
        except self.psycopg.Error as exc:
            raise SetupError(f"cannot recreate database {self.db_name}: {exc}") from None

    def snapshot(self) -> dict:
        """CPU counters of PostgreSQL: every postgres process (the brief's aggregate), and
        only our database's backends plus the shared background processes; and transaction
        counts of the other databases, to tell whether someone else used the cluster."""
        rows = self.conn.execute(
            "SELECT pid, datname, backend_type FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
        ).fetchall()
        ours = {
            pid
            for pid, datname, backend_type in rows
            if datname == self.db_name or (datname is None and backend_type != "client backend")
        }
        own = {}
        for stat in procstat.all_stats():
            if stat.comm == "postgres" and stat.pid in ours:
                own[stat.pid] = stat.own
        xacts = self.conn.execute(
            "SELECT coalesce(sum(xact_commit + xact_rollback), 0) FROM pg_stat_database "
            "WHERE datname IS DISTINCT FROM %s AND datname IS DISTINCT FROM 'postgres'",
            (self.db_name,),
        ).fetchone()[0]
        return {"all": procstat.postgres_cpu(), "ours": own, "other_xacts": int(xacts)}

    def verify(self, slug: str, participants: int, answers_each: int, steps: int) -> dict:
        with self.psycopg.connect(self.url, autocommit=True) as conn:
            study = conn.execute("SELECT id FROM studies_study WHERE slug = %s", (slug,)).fetchone()
            if study is None:
                raise SetupError(f"study {slug!r} is missing from {self.db_name}")
            sid = study[0]
            statuses = dict(
                conn.execute(
                    "SELECT status, count(*) FROM participants_participant WHERE study_id = %s "
                    "GROUP BY status",
                    (sid,),
                ).fetchall()
            )
            responses = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE r.value = '') FROM participants_response r "
                "JOIN participants_participant p ON p.id = r.participant_id WHERE p.study_id = %s",
                (sid,),
            ).fetchone()
            short = conn.execute(
                "SELECT count(*) FROM (SELECT p.id FROM participants_participant p "
                "LEFT JOIN participants_response r ON r.participant_id = p.id WHERE p.study_id = %s "
                "GROUP BY p.id HAVING count(r.id) <> %s) x",
                (sid, answers_each),
            ).fetchone()[0]
            visits = conn.execute(
                "SELECT count(*) FROM participants_stepvisit v "
                "JOIN participants_participant p ON p.id = v.participant_id WHERE p.study_id = %s",
                (sid,),
            ).fetchone()[0]
        completed = statuses.get("completed", 0)
        expected_responses = participants * answers_each
        return {
            "participants_by_status": statuses,
            "completed": completed,
            "expected_completed": participants,
            "responses": responses[0],
            "blank_responses": responses[1],
            "expected_responses": expected_responses,
            "participants_with_wrong_answer_count": short,
            "step_visits": visits,
            "expected_step_visits": participants * steps,
            "ok": completed == participants
            and sum(statuses.values()) == participants
            and responses[0] == expected_responses
            and responses[1] == 0
            and short == 0,
        }

    def close(self) -> None:
        self.conn.close()


# --- Servers ------------------------------------------------------------------------------


class Server:
    """`uvicorn APP --workers W --host 127.0.0.1 --port P --no-access-log --http
    config.protocol:LimitedHttpTools` (production's options), logged to a file."""

    def __init__(self, name: str, app: str, workers: int, env: dict, health: str) -> None:
        self.name = name
        self.port = free_port()
        self.workers = workers
        self.health = health
        self.log_path = RESULTS / f"server-{name}.log"
        self.cmd = [
            UVICORN,
            app,
            "--workers",
            str(workers),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-access-log",
            *UVICORN_OPTIONS,  # as production starts it (docker/Dockerfile)
        ]
        self.env = env
        self.process: subprocess.Popen | None = None
        self.pids: dict[int, int | None] = {}  # pid -> start time, to never signal a reused pid

    def start(self, timeout: float = 90) -> None:
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            self.cmd, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.port}{self.health}"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SetupError(f"{self.name} server exited with {self.process.returncode}:\n{self.tail()}")
            started = self.log_path.read_text(errors="replace").count("Application startup complete")
            if started >= self.workers and self._healthy(url):
                # Every worker is up and one answered; ask a few more times over new
                # connections so both workers have served (and opened a DB connection).
                for _ in range(4 * self.workers):
                    if not self._healthy(url):
                        break
                else:
                    self.pids = {
                        pid: procstat.start_time(pid) for pid in procstat.tree_pids(self.process.pid)
                    }
                    return
            time.sleep(0.2)
        raise SetupError(f"{self.name} server did not become ready within {timeout}s:\n{self.tail()}")

    @staticmethod
    def _healthy(url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # loopback only
                return response.status == 200
        except OSError:
            return False

    def cpu(self) -> float:
        return procstat.tree_cpu(self.process.pid)

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is None:
            return
        pids = dict(self.pids)
        pids.update({pid: procstat.start_time(pid) for pid in procstat.tree_pids(self.process.pid)})
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid, started in pids.items():  # workers left behind, by their own ids
            if pid != self.process.pid and started is not None and procstat.start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.process = None
        self.log.close()


# --- One load phase -------------------------------------------------------------------------


def client_run(server: Server, pg: Postgres, client_args: list[str], timeout: float) -> dict:
    """Start the client, read the counters, say GO, wait for its result, read them again."""
    result_file = Path(tempfile.mkstemp(prefix="arrivals-client-", suffix=".json")[1])
    cmd = [PYTHON, "-m", "bench.client", "--port", str(server.port), "--result-file", str(result_file)]
    cmd += client_args
    client = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = client.stdout.readline().strip()
        if line != "READY":
            raise SetupError(f"the client did not start (said {line!r}, exit {client.poll()})")
        before = {
            "server": server.cpu(),
            "pg": pg.snapshot(),
            "machine": machine_cpu(),
            "procs": cpu_by_pid(),
        }
        client.stdin.write("GO\n")
        client.stdin.flush()
        ready, _, _ = select.select([client.stdout], [], [], timeout)
        if not ready:
            raise SetupError(f"the client gave no result within {timeout}s")
        line = client.stdout.readline()
        after = {"server": server.cpu(), "pg": pg.snapshot(), "machine": machine_cpu(), "procs": cpu_by_pid()}
        if line.strip() != "DONE":
            raise SetupError(f"the client exited ({client.wait()}) without a result (said {line!r})")
        result = json.loads(result_file.read_text())
        client.wait(30)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        result_file.unlink(missing_ok=True)
    ours = after["pg"]["ours"]
    result["server_cpu_s"] = after["server"] - before["server"]
    result["db_cpu_all_s"] = after["pg"]["all"] - before["pg"]["all"]
    result["db_cpu_ours_s"] = sum(cpu - before["pg"]["ours"].get(pid, 0.0) for pid, cpu in ours.items())
    result["other_db_xacts"] = after["pg"]["other_xacts"] - before["pg"]["other_xacts"]
    result["machine_busy_s"] = after["machine"] - before["machine"]
    # Who else used the CPU meanwhile (neither this server, PostgreSQL, the client nor us)?
    mine = set(procstat.tree_pids(server.process.pid)) | {client.pid, os.getpid()}
    others = []
    for pid, (comm, cpu) in after["procs"].items():
        used = cpu - before["procs"].get(pid, (comm, 0.0))[1]
        if pid not in mine and comm != "postgres" and used >= 0.05:
            others.append((round(used, 2), pid, comm))
    result["other_processes"] = [
        {"cpu_s": used, "pid": pid, "comm": comm} for used, pid, comm in sorted(others, reverse=True)[:5]
    ]
    return result


def cpu_by_pid() -> dict[int, tuple[str, float]]:
    return {s.pid: (s.comm, s.own) for s in procstat.all_stats()}


def summarise(raw: dict, requests_per_participant: int) -> dict:
    lat = raw.pop("latencies")
    kinds = raw.pop("kind_latencies")
    durations = raw.pop("participant_durations")
    completed, wall = raw["completed"], raw["wall_s"]
    per = completed or None

    def ms(value):
        return None if value is None else value * 1000

    # Someone else's transactions in other databases during the phase make the aggregate
    # over all postgres processes unreliable: fall back to our database's own backends.
    noisy_db = raw["other_db_xacts"] > 0
    db_cpu = raw["db_cpu_ours_s"] if noisy_db else raw["db_cpu_all_s"]
    mean_latency = sum(lat) / len(lat) if lat else None
    # What the cores could sustain if the server, PostgreSQL and the client had them to
    # themselves: less sensitive to other load on the machine than the measured rate.
    used = raw["server_cpu_s"] + db_cpu + raw["client_cpu_s"]
    used_all = raw["server_cpu_s"] + raw["db_cpu_all_s"] + raw["client_cpu_s"]
    rps = raw["requests"] / wall if wall else None
    figures = {
        **raw,
        "requests_per_participant": requests_per_participant,
        "participants_per_s": completed / wall if wall else None,
        "requests_per_s": rps,
        "latency_ms": {
            "p50": ms(percentile(lat, 50)),
            "p95": ms(percentile(lat, 95)),
            "p99": ms(percentile(lat, 99)),
            "mean": ms(mean_latency),
            "max": ms(max(lat) if lat else None),
        },
        "latency_ms_by_request": {
            kind: {"count": len(v), "p50": ms(percentile(v, 50)), "p95": ms(percentile(v, 95))}
            for kind, v in kinds.items()
        },
        "participant_duration_s": {"p50": percentile(durations, 50), "p95": percentile(durations, 95)},
        # Little's law: requests in flight on average = arrival rate x time in the system.
        "mean_in_flight": rps * mean_latency if rps and mean_latency else None,
        "db_cpu_s": db_cpu,
        "db_cpu_source": "our database's backends + background processes" if noisy_db else "all postgres",
        "server_cpu_ms_per_participant": raw["server_cpu_s"] * 1000 / per if per else None,
        "db_cpu_ms_per_participant": db_cpu * 1000 / per if per else None,
        "server_db_cpu_ms_per_participant": (raw["server_cpu_s"] + db_cpu) * 1000 / per if per else None,
        "client_cpu_ms_per_participant": raw["client_cpu_s"] * 1000 / per if per else None,
        "cpu_bound_participants_per_s": (os.cpu_count() or 1) * completed / used if used else None,
        "other_cpu_s": raw["machine_busy_s"] - used_all,
    }
    return figures


# --- Report -------------------------------------------------------------------------------


def fmt(value, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    return f"{value:,}{unit}"


def ratio(a, b) -> float | None:
    return a / b if a is not None and b else None


def verdicts(r: dict, check: dict) -> dict:
    complete = r["completed"] == r["participants"] and r["errors"] == 0 and check is not None and check["ok"]
    pps, p95, cpu = r["participants_per_s"], r["latency_ms"]["p95"], r["server_db_cpu_ms_per_participant"]
    return {
        "all_complete_all_answers_stored": complete,
        "participants_per_s_ge_30": pps is not None and pps >= TARGET_PPS,
        "p95_page_latency_lt_1s": p95 is not None and p95 < TARGET_P95_MS,
        "server_db_cpu_per_participant_lt_20ms": cpu is not None and cpu < TARGET_CPU_MS,
    }


def report(args, r: dict, b: dict | None, check: dict, verdict: dict, peer: dict | None = None) -> str:
    """The table: Rostrum, the baseline and the peer (oTree), each with its ratio to Rostrum's
    figure (Rostrum / theirs), and the targets."""

    def mark(key: str) -> str:
        return "PASS" if verdict[key] else "MISS"

    def get(figures: dict | None, path: str):
        for part in path.split("."):
            if figures is None:
                return None
            figures = figures[part]
        return figures

    def row(label, path, unit="", digits=1, compare=False, target="", key=None):
        a, z, o = get(r, path), get(b, path), get(peer, path)
        return (
            label,
            fmt(a, unit, digits),
            "" if b is None else fmt(z, unit, digits),
            ratio(a, z) if compare and b is not None else None,
            "" if peer is None else fmt(o, unit, digits),
            ratio(a, o) if compare and peer is not None else None,
            target,
            mark(key) if key else "",
        )

    def count(x: dict | None) -> str:
        return "" if x is None else f"{x['completed']}/{x['participants']}"

    stored = f"{check['responses']}/{check['expected_responses']}"
    peer_stored = (
        "" if peer is None else f"{peer['check']['responses']}/{peer['check']['expected_responses']}"
    )
    rows = [
        (
            "participants completed",
            count(r),
            count(b),
            None,
            count(peer),
            None,
            "all, every answer stored",
            mark("all_complete_all_answers_stored"),
        ),
        row("errors", "errors", target="0"),
        ("answers stored (DB)", stored, "", None, peer_stored, None, "", ""),
        row("wall time", "wall_s", " s", 2),
        row(
            "participants/s",
            "participants_per_s",
            compare=True,
            target=f">= {TARGET_PPS:.0f}",
            key="participants_per_s_ge_30",
        ),
        row("CPU-bound capacity/s", "cpu_bound_participants_per_s", compare=True),
        row("requests/s", "requests_per_s", compare=True),
        row("page latency p50", "latency_ms.p50", " ms", compare=True),
        row(
            "page latency p95",
            "latency_ms.p95",
            " ms",
            compare=True,
            target=f"< {TARGET_P95_MS:.0f} ms",
            key="p95_page_latency_lt_1s",
        ),
        row("page latency p99", "latency_ms.p99", " ms", compare=True),
        row("mean requests in flight", "mean_in_flight"),
        row("server CPU", "server_cpu_s", " s", 2),
        row("PostgreSQL CPU", "db_cpu_s", " s", 2),
        row("client CPU", "client_cpu_s", " s", 2),
        row("server CPU/participant", "server_cpu_ms_per_participant", " ms", compare=True),
        row("DB CPU/participant", "db_cpu_ms_per_participant", " ms", compare=True),
        row(
            "server+DB CPU/participant",
            "server_db_cpu_ms_per_participant",
            " ms",
            compare=True,
            target=f"< {TARGET_CPU_MS:.0f} ms",
            key="server_db_cpu_per_participant_lt_20ms",
        ),
        row("client CPU/participant", "client_cpu_ms_per_participant", " ms"),
        row("other processes' CPU", "other_cpu_s", " s", 2, target="~0"),
    ]
    head = ("figure", "Rostrum", "baseline", "R/base", "oTree", "R/oTree", "target", "")
    shown = [i for i in range(len(head)) if peer is not None or i not in (4, 5)]
    table = [head] + [
        (a, c, d, "-" if e is None else f"{e:.2f}x", o, "-" if q is None else f"{q:.2f}x", f, g)
        for a, c, d, e, o, q, f, g in rows
    ]
    table = [tuple(cells[i] for i in shown) for cells in table]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(shown))]
    peer_line = "" if peer is None else f"; the peer: {peer['name']} ({peer['how']})"
    lines = [
        f"Rostrum arrivals: {args.participants} participants at once, think time {args.think_ms:g} ms, "
        f"{args.workers} uvicorn workers, {os.cpu_count()} cores, "
        f"{r['requests_per_participant']} requests per participant{peer_line}",
        "",
    ]
    for i, cells in enumerate(table):
        padded = [cell.ljust(widths[j]) if j == 0 else cell.rjust(widths[j]) for j, cell in enumerate(cells)]
        lines.append("  ".join(padded).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    by_request = "; ".join(
        f"{kind} p50 {fmt(x['p50'], ' ms')} p95 {fmt(x['p95'], ' ms')} (n={x['count']})"
        for kind, x in r["latency_ms_by_request"].items()
    )
    lines += ["", f"Rostrum latency by request: {by_request}"]
    lines.append(
        f"PostgreSQL CPU counted from: {r['db_cpu_source']}; all postgres processes: "
        f"{fmt(r['db_cpu_all_s'], ' s', 2)}, our database's backends: {fmt(r['db_cpu_ours_s'], ' s', 2)}"
    )
    if r["other_db_xacts"] > 0:
        lines.append(f"NOTE: other databases ran {r['other_db_xacts']} transactions during the load phase.")
    if peer is not None:
        by_request = "; ".join(
            f"{kind} p50 {fmt(x['p50'], ' ms')} p95 {fmt(x['p95'], ' ms')} (n={x['count']})"
            for kind, x in peer["latency_ms_by_request"].items()
        )
        lines.append(f"{peer['name']} latency by request: {by_request}")
        if not peer["check"]["ok"]:
            lines.append(f"{peer['name']}'s database check failed: {json.dumps(peer['check'])}")
    for name, x in (("Rostrum", r), ("baseline", b), (peer and peer["name"], peer)):
        if x and x["other_cpu_s"] > max(0.5, 0.1 * x["machine_busy_s"]):
            top = ", ".join(f"{o['comm']}[{o['pid']}] {o['cpu_s']:.1f} s" for o in x["other_processes"])
            lines.append(
                f"NOTE: during the {name} phase other processes used {x['other_cpu_s']:.1f} s of CPU "
                f"(of {x['machine_busy_s']:.1f} s busy): rates and latencies are disturbed; "
                f"CPU per participant less so. Live ones: {top or 'none (short-lived processes)'}"
            )
        if x and x["reconnects"]:
            lines.append(
                f"{name}: {x['reconnects']} requests were re-sent on a new connection (keep-alive closed)"
            )
        if x and x["errors"]:
            lines.append(f"{name} errors: {x['error_kinds']}")
            lines += [f"  {' '.join(sample.split())[:300]}" for sample in x["error_samples"]]
    if not check["ok"]:
        lines.append(f"Database check failed: {json.dumps(check)}")
    return "\n".join(lines)


# --- The peer -----------------------------------------------------------------------------


def peer_phase(args, common: list[str], servers: list) -> dict | None:
    """oTree doing the same work, in its own database and process (bench/peer_otree.py). None,
    with the reason said, when it cannot run: the peer never stops the benchmark."""
    from bench import peer_otree

    pg = Postgres(args.pg, f"{args.db_name}_otree")
    try:
        say("the peer: installing oTree (once) into var/peers/otree-venv")
        version = peer_otree.ensure_installed()
        say(f"the peer: oTree {version}, a session of {args.participants} participants")
        env, join = peer_otree.setup(pg, args.participants)
        server = peer_otree.Server(free_port(), env, RESULTS / "server-otree.log")
        servers.append(server)
        say(f"starting oTree: {' '.join(server.cmd[1:])}")
        server.start()
        say("the peer's load: the same participants, pages and answers")
        raw = client_run(
            server,
            pg,
            ["--mode", "otree", "--join", join, "--code", peer_otree.COMPLETION_CODE, *common],
            args.timeout + 60,
        )
        server.stop()
        figures = summarise(raw, 11)  # the link, oTree's redirect, then GET + POST x 4, the last GET
        figures["check"] = peer_otree.verify(pg, args.participants)
        figures["name"] = f"oTree {version}"
        figures["how"] = "otree prodserver, one process, PostgreSQL"
        return figures
    except peer_otree.PeerUnavailable as exc:
        say(f"the peer did not run: {exc}")
        return None
    finally:
        pg.close()


# --- Main ---------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--participants", type=int, default=500, help="participants arriving at once (500)")
    parser.add_argument(
        "--think-ms", type=float, default=0, help="mean think time before each answer, ms (0; ±50%% jitter)"
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="uvicorn workers (cores)")
    parser.add_argument("--db-name", default="rostrum_bench", help="database dropped and recreated each run")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--no-baseline", action="store_true", help="skip the hello-world baseline")
    parser.add_argument(
        "--no-peer", action="store_true", help="skip the peer (oTree, bench/peers/otree_survey)"
    )
    parser.add_argument("--timeout", type=float, default=900, help="give up on a load phase after this, s")
    parser.add_argument("--seed", type=int, default=1, help="think-time jitter seed")
    parser.add_argument(
        "--settings",
        default="config.settings",
        help="DJANGO_SETTINGS_MODULE for set-up and server (experiments)",
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.participants < 1:
        print("--participants must be at least 1", file=sys.stderr)
        return 2
    RESULTS.mkdir(exist_ok=True)
    static_root = tempfile.mkdtemp(prefix="rostrum-bench-static-")
    servers: list[Server] = []
    pg = None

    def terminate(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, terminate)
    try:
        pg = Postgres(args.pg, args.db_name)
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
        env.update(
            DJANGO_SETTINGS_MODULE=args.settings,
            DATABASE_URL=pg.url,
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(48),
            ALLOWED_HOSTS="127.0.0.1",
            TRUSTED_PROXIES="127.0.0.1",  # the client names each participant's address
            SECURE_SSL_REDIRECT="0",
            STATIC_ROOT=static_root,
            PYTHONUNBUFFERED="1",
        )

        say(f"recreating database {args.db_name}")
        pg.recreate()
        say("manage.py migrate")
        run([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
        # With DEBUG off the templates' {% static %} needs the manifest collectstatic writes.
        say("manage.py collectstatic (into a temporary STATIC_ROOT)")
        run([PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic")
        say("creating the study through studies.services.study_build")
        study = json.loads(run([PYTHON, "-m", "bench.study"], env, "study set-up").strip().splitlines()[-1])
        requests_each = 1 + 2 * study["steps"]  # entry, then GET + POST per step

        common = ["--participants", str(args.participants), "--think-ms", str(args.think_ms)]
        common += ["--timeout", str(args.timeout), "--seed", str(args.seed)]

        server = Server("rostrum", "config.asgi:application", args.workers, env, "/healthz")
        servers.append(server)
        say(f"starting Rostrum: {' '.join(server.cmd[1:])}")
        server.start()
        say(f"load: {args.participants} participants, think {args.think_ms:g} ms")
        rostrum_raw = client_run(
            server,
            pg,
            ["--mode", "rostrum", "--slug", study["slug"], "--code", study["completion_code"], *common],
            args.timeout + 60,
        )
        server.stop()
        rostrum = summarise(rostrum_raw, requests_each)
        say(f"done in {rostrum['wall_s']:.1f} s; checking the database")
        check = pg.verify(study["slug"], args.participants, study["answers_per_participant"], study["steps"])

        baseline = None
        if not args.no_baseline:
            hello = Server("baseline", "bench.hello_asgi:app", args.workers, env, "/healthz")
            servers.append(hello)
            say(f"starting the baseline: {' '.join(hello.cmd[1:])}")
            hello.start()
            say("baseline load: the same round trips")
            baseline_raw = client_run(
                hello, pg, ["--mode", "baseline", "--steps", str(study["steps"]), *common], args.timeout + 60
            )
            hello.stop()
            baseline = summarise(baseline_raw, requests_each)

        peer = None if args.no_peer else peer_phase(args, common, servers)

        verdict = verdicts(rostrum, check)
        text = report(args, rostrum, baseline, check, verdict, peer)
        print()
        print(text)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = RESULTS / f"arrivals-{stamp}-n{args.participants}-think{args.think_ms:g}.json"
        out.write_text(
            json.dumps(
                {
                    "when": datetime.now().isoformat(timespec="seconds"),
                    "config": {**vars(args), "cores": os.cpu_count(), "python": platform.python_version()},
                    "study": study,
                    "rostrum": rostrum,
                    "baseline": baseline,
                    "peer": peer,
                    "ratios": {
                        "throughput": ratio(
                            rostrum["participants_per_s"], baseline and baseline["participants_per_s"]
                        ),
                        "p95_latency": ratio(
                            rostrum["latency_ms"]["p95"], baseline and baseline["latency_ms"]["p95"]
                        ),
                        "cpu_per_participant": ratio(
                            rostrum["server_db_cpu_ms_per_participant"],
                            baseline and baseline["server_db_cpu_ms_per_participant"],
                        ),
                    },
                    "ratios_to_peer": peer
                    and {
                        "throughput": ratio(rostrum["participants_per_s"], peer.get("participants_per_s")),
                        "p95_latency": ratio(rostrum["latency_ms"]["p95"], peer["latency_ms"]["p95"]),
                        "cpu_per_participant": ratio(
                            rostrum["server_db_cpu_ms_per_participant"],
                            peer["server_db_cpu_ms_per_participant"],
                        ),
                    },
                    "database_check": check,
                    "targets": {
                        "participants_per_s": TARGET_PPS,
                        "p95_ms": TARGET_P95_MS,
                        "server_db_cpu_ms_per_participant": TARGET_CPU_MS,
                    },
                    "verdict": {k: "PASS" if ok else "MISS" for k, ok in verdict.items()},
                    "table": text,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"\nresults written to {out.relative_to(ROOT)}")
        return 0
    except SetupError as exc:
        print(f"\nbench: cannot run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbench: interrupted", file=sys.stderr)
        return 130
    finally:
        for server in servers:
            server.stop()
        if pg is not None:
            pg.close()
        shutil.rmtree(static_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
