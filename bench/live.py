"""Live streams benchmark: N judges watch AI debaters' replies stream at once.

    .venv/bin/python -m bench.live [--streams 100] [--mode production|embedded] [--idle 500]

Production mode: PostgreSQL, Redis (channel layer, stream buffer, Celery broker), uvicorn
with 2 workers and two Celery worker processes (`-P threads -c 64`) writing turns with the
real `openai` client against our OpenAI-compatible server (devtools/fakellm.py, in its own
process, recording when it sent every token). Embedded mode: SQLite, no Redis, one uvicorn
worker whose own event loop writes the turns.

Every judge's websocket is connected first; then every judge asks both debaters a question at
once, which streams debater A's reply, then B's. The client (bench/live_client.py, its own
process) records when each delta arrived; the model server recorded when it sent each
token; tokens are matched by order within each turn. Then, optionally, M judges stay
connected and idle. See bench/README.md, "Live streams benchmark".

Exits non-zero only when the benchmark cannot run; a missed target is reported, not failed.
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
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from bench import procstat
from bench.arrivals import (
    PYTHON,
    RESULTS,
    ROOT,
    Postgres,
    Server,
    SetupError,
    fmt,
    free_port,
    machine_cpu,
    run,
    say,
)
from bench.arrivals import percentile as _percentile

BIN = Path(sys.executable).parent
CELERY = str(BIN / "celery")

DEFAULT_MODEL = "fake-bench:ttft=300:tps=30:tokens=120"
# Targets (issue 12, "faster first tokens"), at up to 100 judges asking at once: Rostrum's
# added time to first token p95 (A after the question, B after A's last token) and the p95
# added latency per token (the model sending a token -> the judge receiving it, the frame
# interval's coalescing wait included). At up to 200: "without falling behind", read as the
# judge being at most 500 ms behind the model when a reply ends (p95 of each turn's last
# token). Embedded: p95 per token at 50 streams. Then relay CPU and idle judges.
TARGET_TTFT_ADDED_P95_MS = 300.0
TARGET_P95_MS = {"production": ((100, 120.0),), "embedded": ((50, 50.0),)}
TARGET_KEEP_UP_STREAMS = 200
TARGET_LAST_TOKEN_P95_MS = 500.0
TARGET_RELAY_CPU_S_PER_1K = 1.5
TARGET_IDLE_CORE_PCT = 10.0
TARGET_IDLE_JUDGES = 500


def percentile(values, q):
    return _percentile(list(values), q)


def ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def dist_ms(values: list[float], qs=(50, 95, 99)) -> dict:
    """Nearest-rank percentiles, mean and max of seconds, in ms."""
    out = {f"p{q}": ms(percentile(values, q)) for q in qs}
    out["mean"] = ms(sum(values) / len(values)) if values else None
    out["max"] = ms(max(values)) if values else None
    out["n"] = len(values)
    return out


# --- Processes ----------------------------------------------------------------------------


class Process:
    """A child process logging to bench/results/<name>.log, stopped by its own pid."""

    def __init__(self, name: str, cmd: list[str], env: dict) -> None:
        self.name, self.cmd, self.env = name, cmd, env
        self.log_path = RESULTS / f"{name}.log"
        self.process: subprocess.Popen | None = None
        self.started: int | None = None

    def start(self) -> None:
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            self.cmd, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self.started = procstat.start_time(self.process.pid)

    @property
    def pid(self) -> int:
        return self.process.pid

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_for_log(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_path.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                raise SetupError(f"{self.name} exited with {self.process.returncode}:\n{self.tail()}")
            time.sleep(0.1)
        raise SetupError(f"{self.name}: no {text!r} in its log within {timeout}s:\n{self.tail()}")

    def cpu(self) -> float:
        return procstat.tree_cpu(self.process.pid)

    def stop(self, timeout: float = 20) -> None:
        if self.process is None:
            return
        pids = {pid: procstat.start_time(pid) for pid in procstat.tree_pids(self.process.pid)}
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid, started in pids.items():  # children left behind, by their own ids
            if pid != self.process.pid and started is not None and procstat.start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.process = None
        self.log.close()


class FakeModel(Process):
    def __init__(self, env: dict) -> None:
        self.port = free_port()
        cmd = [PYTHON, "-m", "devtools.fakellm", "--port", str(self.port), "--record-timing"]
        super().__init__("live-fakellm", cmd + ["--timing-cap", "100000"], env)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> None:
        super().start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SetupError(f"the fake model server exited:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise SetupError(f"the fake model server did not answer within {timeout}s:\n{self.tail()}")

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.url}/_stats", timeout=30) as response:
            return json.loads(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.url}/_reset", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass


def celery_worker(name: str, env: dict, concurrency: int) -> Process:
    cmd = [CELERY, "-A", "config", "worker", "-P", "threads", "-c", str(concurrency), "-n", f"{name}@%h"]
    cmd += ["--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return Process(f"live-celery-{name}", cmd, env)


def peak_rss_mb(pids: list[int]) -> dict:
    """VmHWM (peak resident set) of each process, MB: the largest and the sum."""
    peaks = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peaks.append(int(line.split()[1]) / 1024)
        except OSError:
            pass
    return {
        "processes": len(peaks),
        "max_mb": max(peaks) if peaks else None,
        "sum_mb": sum(peaks) if peaks else None,
    }


def redis_pid(url: str) -> int | None:
    try:
        import redis

        return int(redis.Redis.from_url(url).info("server")["process_id"])
    except Exception:  # noqa: BLE001 - fall back to the process list
        found = subprocess.run(["pgrep", "-x", "redis-server"], capture_output=True, text=True, check=False)
        pids = [int(p) for p in found.stdout.split()]
        return pids[0] if pids else None


class Counters:
    """CPU seconds of every party, read at the start and the end of a window."""

    def __init__(self, server: Server, workers: list[Process], fake: FakeModel, redis: int | None) -> None:
        self.server, self.workers, self.fake, self.redis = server, workers, fake, redis

    def read(self) -> dict:
        redis = procstat.read_stat(self.redis) if self.redis else None
        return {
            "procs": {s.pid: (s.comm, s.own) for s in procstat.all_stats()},
            "t": time.time(),
            "server": self.server.cpu(),
            "workers": sum(w.cpu() for w in self.workers),
            "redis": redis.own if redis else 0.0,
            "postgres": procstat.postgres_cpu(),
            "fakellm": self.fake.cpu(),
            "machine": machine_cpu(),
        }

    @staticmethod
    def delta(before: dict, after: dict) -> dict:
        return {k: after[k] - before[k] for k in before if k != "procs"}

    def others(self, before: dict, after: dict, client_pid: int) -> list[dict]:
        """The processes other than ours (and PostgreSQL) that used CPU in the window."""
        mine = {os.getpid(), client_pid, self.redis}
        for root in [self.server.process.pid, self.fake.pid, *(w.pid for w in self.workers)]:
            mine.update(procstat.tree_pids(root))
        used = []
        for pid, (comm, cpu) in after["procs"].items():
            spent = cpu - before["procs"].get(pid, (comm, 0.0))[1]
            if pid not in mine and comm != "postgres" and spent >= 0.05:
                used.append({"pid": pid, "comm": comm, "cpu_s": round(spent, 2)})
        return sorted(used, key=lambda x: -x["cpu_s"])[:5]


class LogWatch:
    """Exceptions the server and workers logged since the last mark, by their message."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.mark()

    def mark(self) -> None:
        self.offsets = {p: p.stat().st_size if p.exists() else 0 for p in self.paths}

    def errors(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for path in self.paths:
            with open(path, errors="replace") as f:
                f.seek(self.offsets[path])
                in_traceback = False
                for line in f:
                    if line.startswith("Traceback (most recent call last)"):
                        in_traceback = True
                    elif in_traceback and line.strip() and not line[0].isspace():
                        key = f"{path.stem}: {line.strip()[:160]}"
                        found[key] = found.get(key, 0) + 1
                        in_traceback = False
        return dict(sorted(found.items(), key=lambda kv: -kv[1]))


# --- Phases ---------------------------------------------------------------------------------


class Client:
    """bench/live_client.py: READY after every judge is connected, then GO or STOP."""

    def __init__(
        self, url: str, judges: list[dict], phase: str, work: Path, timeout: float, extra: list[str]
    ):
        name = f"{phase}-{secrets.token_hex(3)}"
        path = work / f"judges-{name}.json"
        path.write_text(json.dumps(judges))
        self.out = work / f"client-{name}.json"
        cmd = [PYTHON, "-m", "bench.live_client", "--url", url, "--judges", str(path), "--phase", phase]
        cmd += ["--timeout", str(timeout), "--out", str(self.out), *extra]
        self.process = subprocess.Popen(
            cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ready(self, timeout: float) -> dict:
        line = self._line(timeout, "READY")
        if not line.startswith("READY "):
            raise SetupError(
                f"the client did not get ready (said {line[:300]!r}, exit {self.process.poll()})"
            )
        return json.loads(line[6:])

    def say(self, word: str) -> None:
        self.process.stdin.write(word + "\n")
        self.process.stdin.flush()

    def result(self, timeout: float) -> dict:
        line = self._line(timeout, "a result")
        if line != "DONE":
            raise SetupError(f"the client exited ({self.process.wait()}) without a result")
        self.process.wait(30)
        return json.loads(self.out.read_text())

    def _line(self, timeout: float, what: str) -> str:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise SetupError(f"the client gave no {what} within {timeout}s")
        return self.process.stdout.readline().strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def streams_phase(url, judges, work, counters, args, label) -> tuple[dict, dict, dict]:
    client = Client(url, judges, "streams", work, args.timeout, client_extra(args))
    try:
        ready = client.ready(args.timeout)
        if not ready["connected"] or (label == "warm-up" and ready["connected"] != len(judges)):
            raise SetupError(
                f"{label}: only {ready['connected']}/{len(judges)} judges connected: {ready['errors']}"
            )
        profilers = start_profilers(args, counters, label) if args.profile and label == "streams" else []
        before = counters.read()
        client.say("GO")
        if args.cpu_window and label == "streams":
            print_cpu_window(counters, before, client.process.pid, args.cpu_window)
        result = client.result(args.timeout + 60)
        after = counters.read()
        result["other_processes"] = counters.others(before, after, client.process.pid)
    finally:
        client.stop()
    for profiler in profilers if args.profile and label == "streams" else []:
        try:
            profiler.wait(args.profile + 30)
        except subprocess.TimeoutExpired:
            profiler.kill()
            profiler.wait()
    return ready, result, Counters.delta(before, after)


def print_cpu_window(counters: Counters, before: dict, client_pid: int, seconds: float) -> None:
    """Each party's CPU over the first `seconds` after GO (--cpu-window): with a slow model
    (`--model fake-bench:ttft=3000:...`), what the burst of questions and first turns costs
    before any token is streamed."""
    client_before = procstat.tree_cpu(client_pid)
    time.sleep(max(0.0, before["t"] + seconds - time.time()))
    now = counters.read()
    spent = Counters.delta(before, now)
    spent["client"] = procstat.tree_cpu(client_pid) - client_before
    parts = ", ".join(f"{k} {v:.2f} s" for k, v in spent.items() if k != "t")
    print(f"[bench] CPU in the first {spent['t']:.2f} s after GO: {parts}", flush=True)


def start_profilers(args, counters: Counters, label: str) -> list[subprocess.Popen]:
    """py-spy (if installed) on every server worker and Celery worker for the first --profile
    seconds of the phase, GIL-holding samples only (where the Python CPU goes): collapsed
    stacks in bench/results/profile-*.txt."""
    spy = shutil.which("py-spy") or str(BIN / "py-spy")
    if not Path(spy).exists():
        raise SetupError("--profile needs py-spy (pip install py-spy)")
    targets = [(f"server-{pid}", pid) for pid in procstat.tree_pids(counters.server.process.pid)[1:]]
    if not targets:  # one worker: uvicorn serves in the master process
        targets = [(f"server-{counters.server.process.pid}", counters.server.process.pid)]
    targets += [(f"{w.name.removeprefix('live-')}-{w.pid}", w.pid) for w in counters.workers]
    procs = []
    for name, pid in targets:
        out = RESULTS / f"profile-{args.mode}-n{args.streams}-{name}.txt"
        cmd = [spy, "record", "-p", str(pid), "-d", str(args.profile), "-r", "200", "--nonblocking", "--gil"]
        cmd += ["-f", "raw", "-o", str(out)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1)  # py-spy attaches
    return procs


def idle_phase(url, judges, work, counters, args) -> dict:
    client = Client(url, judges, "idle", work, args.timeout, client_extra(args))
    try:
        ready = client.ready(max(args.timeout, 300))
        time.sleep(args.idle_settle)  # the connections' own work (snapshots, kicks) is over
        before = counters.read()
        time.sleep(args.idle_seconds)
        after = counters.read()
        others = counters.others(before, after, client.process.pid)
        client.say("STOP")
        result = client.result(120)
    finally:
        client.stop()
    cpu = Counters.delta(before, after)
    window = cpu["t"]
    return {
        "judges": len(judges),
        "connected": ready["connected"],
        "connect_wall_s": ready["connect_wall_s"],
        "connect_errors": ready["errors"],
        "window_s": window,
        "cpu_s": cpu,
        "core_pct": {k: 100 * v / window for k, v in cpu.items() if k not in ("t", "machine")},
        "machine_busy_pct": 100 * cpu["machine"] / window,
        "messages_received_in_window": result["idle_received"],
        "other_processes": others,
        "message_counts_total": result["idle_counts"],
        "errors": result["errors"],
    }


def client_extra(args) -> list[str]:
    return ["--no-compression"] if args.no_compression else []


# --- Analysis -------------------------------------------------------------------------------


def token_ends(text: str) -> list[int]:
    """Where each of the model's tokens ends in the text (a token is a word and its space)."""
    ends, at = [], 0
    for word in text.split(" ")[:-1] if text.endswith(" ") else text.split(" "):
        at += len(word) + 1
        ends.append(min(at, len(text)))
    return ends


def analyse(result: dict, fake: dict, collected: dict, ai_roles=("debater_a", "debater_b")) -> dict:
    records: dict[str, list[dict]] = {}
    for record in sorted(fake.get("timings", []), key=lambda r: r["arrived_at"]):
        records.setdefault(record.get("messages_sha256"), []).append(record)

    problems: list[str] = []
    integrity = {
        k: 0 for k in ("gaps", "overlaps", "end_text_mismatch", "client_db_mismatch", "db_model_mismatch")
    }
    integrity.update(retries=0, failed_turns=0, missing_turns=0, unmatched_requests=0, token_count_mismatch=0)
    lat, frame_lat, client_gaps, model_gaps, tokens_per_frame = [], [], [], [], []
    last_lat: list[float] = []  # each turn's last token: how far behind the model the judge ends
    parts = ("client", "model", "added", "to_model", "first_relay", "to_created", "to_claimed", "to_request")
    ttft = {sp: {k: [] for k in parts} for sp in "AB"}
    turns_expected = turns_exact = tokens = chars = deltas = 0
    per_turn: list[dict] = []
    for judge in result["judges"]:
        sid = str(judge["session_id"])
        if judge["error"]:
            problems.append(f"session {sid}: {judge['error']}")
        integrity["failed_turns"] += len(judge["failed"])
        integrity["retries"] += len(judge["resets"])
        asked = max(judge["snapshot_seqs"] or [0]) + 1
        db_turns = {t["seq"]: t for t in collected["turns"].get(sid, [])}
        calls = [c for c in collected["calls"].get(sid, []) if c["role"] in ai_roles and not c["error_kind"]]
        calls = {c["turn_seq"]: c for c in calls if c["turn_seq"] and c["turn_seq"] > asked}
        client_turns = {t["seq"]: t for t in judge["turns"]}
        previous_last_sent = None
        for seq in (asked + 1, asked + 2):
            turns_expected += 1
            ct, dbt, call = client_turns.get(seq), db_turns.get(seq), calls.get(seq)
            if ct is None or ct["end_t"] is None or dbt is None or call is None:
                integrity["missing_turns"] += 1
                problems.append(
                    f"session {sid} turn {seq}: client={ct is not None} db={dbt and dbt['status']}"
                )
                continue
            found = records.get(call["messages_sha256"]) or []
            record = found.pop(0) if found else None
            if record is None:
                integrity["unmatched_requests"] += 1
                problems.append(f"session {sid} turn {seq}: no model-server record for its request")
                continue
            exact = True
            integrity["gaps"] += ct["gaps"]
            integrity["overlaps"] += ct["overlaps"]
            exact &= (
                ct["gaps"] == 0 and ct["overlaps"] == 0 and ct["attempts"] == [1] and dbt["attempts"] == 1
            )
            if not ct["end_text_matches"]:
                integrity["end_text_mismatch"] += 1
                exact = False
            if ct["text"] != dbt["text"]:
                integrity["client_db_mismatch"] += 1
                exact = False
            if dbt["text"] != call["expected_text"]:
                integrity["db_model_mismatch"] += 1
                exact = False
            text, sent, ds = ct["text"], record["sent_at"], ct["deltas"]
            ends = token_ends(text)
            if len(ends) != len(sent):
                integrity["token_count_mismatch"] += 1
                exact = False
            # Offsets contiguous and in order: each delta starts where the previous ended.
            at = 0
            for _, offset, length in ds:
                if offset != at:
                    exact = False
                at = offset + length
            turns_exact += exact
            tokens += len(sent)
            chars += len(text)
            deltas += len(ds)
            # Per token: the receive time of the frame carrying its last character.
            token_lat = []
            i = 0
            for k, end in enumerate(ends[: len(sent)]):
                while i < len(ds) and ds[i][1] + ds[i][2] < end:
                    i += 1
                if i == len(ds):
                    break
                token_lat.append(ds[i][0] - sent[k])
            lat += token_lat
            if token_lat and len(token_lat) == len(sent):
                last_lat.append(token_lat[-1])
            # Per frame: latency of the newest token it carries (mostly the path, little wait).
            k = 0
            for t, offset, length in ds:
                while k + 1 < len(ends) and ends[k + 1] <= offset + length:
                    k += 1
                if k < len(sent) and ends[k] <= offset + length:
                    frame_lat.append(t - sent[k])
            client_gaps += [b[0] - a[0] for a, b in zip(ds, ds[1:])]
            model_gaps += [b - a for a, b in zip(sent, sent[1:])]
            tokens_per_frame.append(len(sent) / len(ds) if ds else 0)
            speaker = "A" if seq == asked + 1 else "B"
            ref = judge["trigger_t"] if speaker == "A" else previous_last_sent
            first = ds[0][0] if ds else None
            model_ttft = sent[0] - record["arrived_at"]
            added = None
            if ref is not None and first is not None:
                added = first - ref - model_ttft
                ttft[speaker]["client"].append(first - ref)
                ttft[speaker]["model"].append(model_ttft)
                ttft[speaker]["added"].append(first - ref - model_ttft)
                ttft[speaker]["to_model"].append(record["arrived_at"] - ref)
                ttft[speaker]["first_relay"].append(first - sent[0])
                # Where "to_model" goes, from the turn's row (timestamps of the same host clock):
                # the turn created (web server: the question; worker: the previous turn done),
                # claimed by a worker (Celery), its request at the model (prompt, HTTP).
                if dbt["started_at"] is not None:
                    ttft[speaker]["to_created"].append(dbt["created_at"] - ref)
                    ttft[speaker]["to_claimed"].append(dbt["started_at"] - dbt["created_at"])
                    ttft[speaker]["to_request"].append(record["arrived_at"] - dbt["started_at"])
            previous_last_sent = sent[-1]
            per_turn.append(
                {
                    "session": int(sid),
                    "seq": seq,
                    "speaker": speaker,
                    "exact": exact,
                    "tokens": len(sent),
                    "frames": len(ds),
                    "added_ttft_ms": ms(added),
                    "token_latency_p95_ms": ms(percentile(token_lat, 95)),
                    "token_latency_max_ms": ms(max(token_lat)) if token_lat else None,
                }
            )
    ends_t = [t["end_t"] for j in result["judges"] for t in j["turns"] if t["end_t"]]
    messages = sum(j["received"] - j["counts"].get("snapshot", 0) for j in result["judges"])
    wall = (max(ends_t) - result["go_t"]) if ends_t else None
    by_type: dict[str, int] = {}
    for j in result["judges"]:
        for k, v in j["counts"].items():
            if k != "snapshot":
                by_type[k] = by_type.get(k, 0) + v
    return {
        "streams": len(result["judges"]),
        "turns_expected": turns_expected,
        "turns_completed": turns_expected - integrity["missing_turns"],
        "turns_exact": turns_exact,
        "tokens": tokens,
        "chars": chars,
        "deltas": deltas,
        "integrity": integrity,
        "all_exact": turns_exact == turns_expected and turns_expected > 0,
        "wall_s": wall,
        "timed_out": result["timed_out"],
        "ttft_ms": {sp: {k: dist_ms(v, (50, 95)) for k, v in d.items()} for sp, d in ttft.items()},
        "token_latency_ms": dist_ms(lat, (50, 95, 99)),
        "last_token_latency_ms": dist_ms(last_lat, (50, 95)),
        "frame_latency_newest_token_ms": dist_ms(frame_lat, (50, 95, 99)),
        "client_frame_gap_ms": dist_ms(client_gaps, (50, 95, 99)),
        "model_token_gap_ms": dist_ms(model_gaps, (50, 95, 99)),
        "tokens_per_frame": sum(tokens_per_frame) / len(tokens_per_frame) if tokens_per_frame else None,
        "ws_messages": messages,
        "ws_messages_by_type": by_type,
        "ws_messages_per_s": messages / wall if wall else None,
        "deltas_per_s": deltas / wall if wall else None,
        "client_cpu_s": result["client_cpu_s"],
        "problems": problems[:20],
        "per_turn": per_turn,
    }


# --- Report ---------------------------------------------------------------------------------


def p95_target(mode: str, streams: int) -> float | None:
    for limit, target in TARGET_P95_MS[mode]:
        if streams <= limit:
            return target
    return None


def ttft_target(mode: str, streams: int) -> float | None:
    return TARGET_TTFT_ADDED_P95_MS if mode == "production" and streams <= 100 else None


def keep_up_target(mode: str, streams: int) -> float | None:
    return TARGET_LAST_TOKEN_P95_MS if mode == "production" and streams <= TARGET_KEEP_UP_STREAMS else None


def verdicts(mode: str, figures: dict, cpu: dict, idle: dict | None) -> dict:
    streams = figures["streams"]
    target = p95_target(mode, streams)
    p95 = figures["token_latency_ms"]["p95"]
    out = {"no_token_lost_duplicated_or_out_of_order": figures["all_exact"] and not figures["timed_out"]}
    if target is not None:
        out[f"p95_added_latency_lt_{target:g}ms"] = p95 is not None and p95 < target
    ttft = ttft_target(mode, streams)
    if ttft is not None:
        for speaker in "AB":
            added = figures["ttft_ms"][speaker]["added"]["p95"]
            out[f"ttft_{speaker}_added_p95_lt_{ttft:g}ms"] = added is not None and added < ttft
    keep_up = keep_up_target(mode, streams)
    if keep_up is not None:
        last = figures["last_token_latency_ms"]["p95"]
        out[f"last_token_p95_lt_{keep_up:g}ms"] = last is not None and last < keep_up
    if mode == "production":
        per_k = cpu["relay_cpu_s_per_1k_tokens"]
        out["relay_cpu_lt_1.5s_per_1k_tokens"] = per_k is not None and per_k < TARGET_RELAY_CPU_S_PER_1K
    if idle is not None:
        out["idle_server_cpu_lt_10pct_core"] = idle["core_pct"]["server"] < TARGET_IDLE_CORE_PCT
    return out


def rss_cell(r: dict) -> str:
    return f"{fmt(r['max_mb'], '', 0)} / {fmt(r['sum_mb'], '', 0)} MB"


def report(args, f: dict, cpu: dict, rss: dict, idle: dict | None, verdict: dict) -> str:
    def mark(key):
        return ("PASS" if verdict[key] else "MISS") if key in verdict else ""

    def d(x: dict, keys=("p50", "p95"), digits=0) -> str:
        return " / ".join(fmt(x[k], "", digits) for k in keys) + " ms"

    target = p95_target(args.mode, f["streams"])
    p95_key = f"p95_added_latency_lt_{target:g}ms" if target is not None else ""
    ttft = ttft_target(args.mode, f["streams"])
    keep_up = keep_up_target(args.mode, f["streams"])

    def ttft_cell(speaker: str) -> tuple[str, str]:
        if ttft is None:
            return ("(target at <= 100 streams)" if args.mode == "production" else "", "")
        return (f"p95 < {ttft:g} ms", mark(f"ttft_{speaker}_added_p95_lt_{ttft:g}ms"))

    integ = f["integrity"]
    bad = {k: v for k, v in integ.items() if v}
    rows = [
        ("streams (judges asking at once)", f"{f['streams']}", "", ""),
        (
            "AI turns completed / exact",
            f"{f['turns_completed']}/{f['turns_expected']} / {f['turns_exact']}",
            "",
            "",
        ),
        ("tokens relayed (chars)", f"{f['tokens']:,} ({f['chars']:,})", "", ""),
        (
            "tokens lost / duplicated / out of order",
            "none" if f["all_exact"] and not bad else json.dumps(bad),
            "none",
            mark("no_token_lost_duplicated_or_out_of_order"),
        ),
        ("stream phase wall time", fmt(f["wall_s"], " s", 2), "", ""),
        ("TTFT A at judge p50/p95 (from the question)", d(f["ttft_ms"]["A"]["client"]), "", ""),
        ("  model server's own TTFT p50/p95", d(f["ttft_ms"]["A"]["model"]), "", ""),
        ("  Rostrum's added TTFT p50/p95", d(f["ttft_ms"]["A"]["added"]), *ttft_cell("A")),
        ("    question -> request at model p50/p95", d(f["ttft_ms"]["A"]["to_model"]), "", ""),
        ("      question -> turn created (server)", d(f["ttft_ms"]["A"]["to_created"]), "", ""),
        ("      turn created -> claimed by a worker", d(f["ttft_ms"]["A"]["to_claimed"]), "", ""),
        ("      claimed -> request at model", d(f["ttft_ms"]["A"]["to_request"]), "", ""),
        ("    first token model -> judge p50/p95", d(f["ttft_ms"]["A"]["first_relay"]), "", ""),
        ("TTFT B at judge p50/p95 (from A's last token)", d(f["ttft_ms"]["B"]["client"]), "", ""),
        ("  Rostrum's added TTFT B p50/p95", d(f["ttft_ms"]["B"]["added"]), *ttft_cell("B")),
        ("    A's last token -> B created (worker)", d(f["ttft_ms"]["B"]["to_created"]), "", ""),
        ("    B created -> claimed by a worker", d(f["ttft_ms"]["B"]["to_claimed"]), "", ""),
        ("    claimed -> request at model", d(f["ttft_ms"]["B"]["to_request"]), "", ""),
        (
            "added latency per token p50/p95/p99",
            d(f["token_latency_ms"], ("p50", "p95", "p99")),
            f"p95 < {target:g} ms" if target is not None else "(target at <= 100 streams)",
            mark(p95_key),
        ),
        (
            "  (the model sending a token -> the judge receiving it, coalescing wait included)",
            "",
            "",
            "",
        ),
        (
            "  each turn's last token p50/p95 (behind the model)",
            d(f["last_token_latency_ms"]),
            f"p95 < {keep_up:g} ms" if keep_up is not None else "",
            mark(f"last_token_p95_lt_{keep_up:g}ms") if keep_up is not None else "",
        ),
        ("  max", fmt(f["token_latency_ms"]["max"], " ms", 0), "", ""),
        (
            "  per frame, newest token p50/p95/p99",
            d(f["frame_latency_newest_token_ms"], ("p50", "p95", "p99")),
            "",
            "",
        ),
        ("inter-token gap at model p50/p95/max", d(f["model_token_gap_ms"], ("p50", "p95", "max")), "", ""),
        ("inter-frame gap at judge p50/p95/max", d(f["client_frame_gap_ms"], ("p50", "p95", "max")), "", ""),
        ("tokens per frame (mean)", fmt(f["tokens_per_frame"], "", 2), "", ""),
        (
            "websocket messages/s (deltas/s)",
            f"{fmt(f['ws_messages_per_s'], '', 0)} ({fmt(f['deltas_per_s'], '', 0)})",
            "",
            "",
        ),
        ("CPU server (uvicorn)", f"{cpu['server']:.2f} s ({cpu['pct']['server']:.0f}% core)", "", ""),
    ]
    if args.mode == "production":
        rows += [
            ("CPU Celery workers", f"{cpu['workers']:.2f} s ({cpu['pct']['workers']:.0f}% core)", "", ""),
            ("CPU redis-server", f"{cpu['redis']:.2f} s ({cpu['pct']['redis']:.0f}% core)", "", ""),
        ]
    rows += [
        (
            "relay CPU per 1,000 tokens",
            fmt(cpu["relay_cpu_s_per_1k_tokens"], " s", 2),
            f"< {TARGET_RELAY_CPU_S_PER_1K:g} s" if args.mode == "production" else "(production target)",
            mark("relay_cpu_lt_1.5s_per_1k_tokens"),
        ),
        (
            "  (not counted) PostgreSQL / model server / client",
            f"{cpu['postgres']:.2f} / {cpu['fakellm']:.2f} / {cpu['client']:.2f} s",
            "",
            "",
        ),
        ("  other processes' CPU", f"{cpu['other']:.2f} s", "~0", ""),
        ("exceptions logged (server, workers)", f"{sum(f['exceptions_logged'].values())}", "0", ""),
        (
            "peak RSS server (max process / sum)",
            rss_cell(rss["server"]),
            "",
            "",
        ),
    ]
    if args.mode == "production":
        rows.append(
            (
                "peak RSS workers (max process / sum)",
                rss_cell(rss["workers"]),
                "",
                "",
            )
        )
    if idle is not None:
        pct = idle["core_pct"]
        rows += [
            (
                f"idle: {idle['connected']}/{idle['judges']} judges connected, {idle['window_s']:.0f} s",
                "",
                "",
                "",
            ),
            (
                "  server CPU",
                f"{pct['server']:.1f}% core",
                f"< {TARGET_IDLE_CORE_PCT:g}% ({TARGET_IDLE_JUDGES} judges)",
                mark("idle_server_cpu_lt_10pct_core"),
            ),
            ("  workers / redis CPU", f"{pct['workers']:.1f}% / {pct['redis']:.1f}% core", "", "")
            if args.mode == "production"
            else ("  (embedded: no workers, no Redis)", "", "", ""),
            ("  messages to idle judges in window", f"{idle['messages_received_in_window']}", "", ""),
            (
                "  exceptions logged (incl. disconnecting)",
                f"{sum(idle['exceptions_logged'].values())}",
                "0",
                "",
            ),
            (
                "  peak RSS server after idle (max / sum)",
                rss_cell(rss["server_after_idle"]),
                "",
                "",
            ),
        ]
    head = ("figure", "value", "target", "")
    table = [head, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [
        f"Rostrum live streams, {args.mode} mode: {f['streams']} judges, model {args.model}, "
        f"{args.server_workers} uvicorn worker(s), LIVE_FLUSH_MS={args.flush_ms or 'default (100)'}"
        + (f", settings {args.settings}" if args.settings != "config.settings" else "")
        + (f", 2 Celery workers -P threads -c {args.concurrency}" if args.mode == "production" else "")
        + f", {os.cpu_count()} cores",
        "",
    ]
    for i, cells in enumerate(table):
        lines.append(
            "  ".join(
                c.ljust(widths[j]) if j != 1 else c.rjust(widths[j]) for j, c in enumerate(cells)
            ).rstrip()
        )
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    if f["problems"]:
        lines += ["", "Problems:", *(f"  {p}" for p in f["problems"])]
    for phase, errors in (
        ("streams", f["exceptions_logged"]),
        ("idle", (idle or {}).get("exceptions_logged")),
    ):
        if errors:
            lines.append(f"Exceptions logged ({phase} phase; see bench/results/*.log):")
            lines += [f"  {n} x {message}" for message, n in list(errors.items())[:5]]
    if cpu["other"] > max(1.0, 0.1 * cpu["machine"]):
        top = ", ".join(f"{o['comm']}[{o['pid']}] {o['cpu_s']:.1f} s" for o in cpu["other_processes"])
        lines.append(
            f"NOTE: other processes used {cpu['other']:.1f} s of CPU during the stream phase: latencies are "
            f"disturbed. Live ones: {top or 'none (short-lived processes)'}"
        )
    if idle is not None and idle["other_processes"]:
        top = ", ".join(f"{o['comm']}[{o['pid']}] {o['cpu_s']:.1f} s" for o in idle["other_processes"])
        lines.append(f"Idle window, other processes: {top}")
    return "\n".join(lines)


# --- Main -----------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=100, help="judges streaming at once (100)")
    parser.add_argument("--mode", choices=("production", "embedded"), default="production")
    parser.add_argument(
        "--idle", type=int, default=500, help="idle judges connected afterwards (500; 0: skip)"
    )
    parser.add_argument("--idle-seconds", type=float, default=10, help="the idle measurement window, s")
    parser.add_argument(
        "--idle-settle", type=float, default=2, help="wait after connecting the idle judges, s"
    )
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"the debaters' model string ({DEFAULT_MODEL})"
    )
    parser.add_argument("--warmup", type=int, default=8, help="warm-up sessions before measuring (8)")
    parser.add_argument(
        "--server-workers", type=int, default=None, help="uvicorn workers (production 2, embedded 1)"
    )
    parser.add_argument("--concurrency", type=int, default=64, help="threads per Celery worker (64)")
    parser.add_argument("--db-name", default="rostrum_bench_live", help="PostgreSQL database, recreated")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13", help="Redis database, flushed")
    parser.add_argument("--timeout", type=float, default=300, help="give up on a phase after this, s")
    parser.add_argument(
        "--no-compression", action="store_true", help="judges do not offer permessage-deflate"
    )
    parser.add_argument(
        "--settings",
        default="config.settings",
        help="settings module of server and workers (experiments: bench.<module>)",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="S",
        help="py-spy the server and workers for S s of the streams",
    )
    parser.add_argument(
        "--cpu-window",
        type=float,
        default=0,
        metavar="S",
        help="also print each party's CPU over the first S s after GO (with a slow model: the burst)",
    )
    parser.add_argument(
        "--flush-ms", type=int, default=None, help="LIVE_FLUSH_MS for server and workers (default: the app's)"
    )
    args = parser.parse_args()
    if args.server_workers is None:
        args.server_workers = 2 if args.mode == "production" else 1
    return args


def main() -> int:
    args = parse_args()
    if args.streams < 1:
        print("--streams must be at least 1", file=sys.stderr)
        return 2
    RESULTS.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rostrum-bench-live-"))
    procs: list = []
    pg = None

    def terminate(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, terminate)
    try:
        production = args.mode == "production"
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(48),
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="0",
            STATIC_ROOT=str(work / "static"),
            PYTHONUNBUFFERED="1",
        )
        if args.flush_ms is not None:
            env["LIVE_FLUSH_MS"] = str(args.flush_ms)
        if production:
            pg = Postgres(args.pg, args.db_name)
            say(f"recreating database {args.db_name}")
            pg.recreate()
            env["DATABASE_URL"] = pg.url
        else:
            env["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
        setup_env = dict(env)  # set-up and read-back: the project's settings, our database
        say("manage.py migrate")
        run([PYTHON, "manage.py", "migrate", "--noinput"], setup_env, "migrate")
        say(f"set-up: {args.streams} + {args.idle} idle + {args.warmup} warm-up judges at the claim step")
        setup_file = work / "setup.json"
        run(
            [
                PYTHON,
                "-m",
                "bench.live_setup",
                "setup",
                "--streams",
                str(args.streams),
                "--idle",
                str(args.idle),
            ]
            + ["--warmup", str(args.warmup), "--model", args.model, "--out", str(setup_file)],
            setup_env,
            "set-up",
            timeout=900,
        )
        setup = json.loads(setup_file.read_text())

        fake = FakeModel(env)
        procs.append(fake)
        fake.start()
        env.update(LLM_BACKEND="openai", OPENAI_BASE_URL=f"{fake.url}/v1", OPENAI_API_KEY="x")
        if args.settings != "config.settings":  # an experiment's settings module, e.g. bench.<module>
            env["DJANGO_SETTINGS_MODULE"] = args.settings
        redis = None
        if production:
            import redis as redis_lib

            try:
                redis_lib.Redis.from_url(args.redis_url).flushdb()
            except redis_lib.RedisError as exc:
                raise SetupError(f"cannot use Redis at {args.redis_url}: {exc}") from None
            env["REDIS_URL"] = args.redis_url
            redis = redis_pid(args.redis_url)
        server = Server(f"live-{args.mode}", "config.asgi:application", args.server_workers, env, "/healthz")
        procs.append(server)
        say(f"starting uvicorn with {args.server_workers} worker(s)")
        server.start()
        workers = []
        if production:
            for name in ("w1", "w2"):
                worker = celery_worker(name, env, args.concurrency)
                procs.append(worker)
                workers.append(worker)
                worker.start()
            for worker in workers:
                worker.wait_for_log("ready.")
            say("two Celery workers ready")
        counters = Counters(server, workers, fake, redis)
        url = f"ws://127.0.0.1:{server.port}"

        if setup["warmup"]:
            say(f"warm-up: {len(setup['warmup'])} sessions")
            _, warm, _ = streams_phase(url, setup["warmup"], work, counters, args, "warm-up")
            if warm["error_count"] or warm["timed_out"]:
                raise SetupError(f"the warm-up failed: {warm['errors']} (timed out: {warm['timed_out']})")
        fake.reset()

        logs = LogWatch([server.log_path, *(w.log_path for w in workers)])
        say(f"streams: {args.streams} judges connect, then all ask at once")
        ready, result, delta = streams_phase(url, setup["streams"], work, counters, args, "streams")
        say(f"streams done in {result['end_t'] - result['go_t']:.1f} s; reading back")
        fake_stats = fake.stats()
        ids_file = work / "ids.json"
        ids_file.write_text(json.dumps([s["session_id"] for s in setup["streams"]]))
        collected_file = work / "collected.json"
        run(
            [
                PYTHON,
                "-m",
                "bench.live_setup",
                "collect",
                "--sessions",
                str(ids_file),
                "--out",
                str(collected_file),
            ],
            setup_env,
            "read-back",
        )
        figures = analyse(result, fake_stats, json.loads(collected_file.read_text()))
        time.sleep(2)  # the judges' disconnections are handled
        figures["exceptions_logged"] = logs.errors()
        logs.mark()
        window = delta["t"]
        relay = delta["server"] + delta["workers"] + (delta["redis"] if production else 0.0)
        cpu = {
            **{k: v for k, v in delta.items() if k != "t"},
            "window_s": window,
            "client": result["client_cpu_s"],
            "relay_s": relay,
            "relay_cpu_s_per_1k_tokens": relay / figures["tokens"] * 1000 if figures["tokens"] else None,
            "pct": {k: 100 * v / window for k, v in delta.items() if k != "t"},
        }
        known = delta["server"] + delta["workers"] + delta["redis"] + delta["postgres"] + delta["fakellm"]
        cpu["other"] = delta["machine"] - known - result["client_cpu_s"]
        cpu["other_processes"] = result["other_processes"]
        server_pids = procstat.tree_pids(server.process.pid)
        rss = {
            "server": peak_rss_mb(server_pids),
            "workers": peak_rss_mb([p for w in workers for p in procstat.tree_pids(w.pid)]),
        }

        idle = None
        if args.idle:
            say(f"idle: {args.idle} judges connect and stay idle for {args.idle_seconds:g} s")
            idle = idle_phase(url, setup["idle"], work, counters, args)
            time.sleep(3)  # the idle judges' disconnections are handled
            idle["exceptions_logged"] = logs.errors()
            rss["server_after_idle"] = peak_rss_mb(procstat.tree_pids(server.process.pid))

        verdict = verdicts(args.mode, figures, cpu, idle)
        text = report(args, figures, cpu, rss, idle, verdict)
        print()
        print(text)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = RESULTS / f"live-{stamp}-{args.mode}-n{args.streams}.json"
        out.write_text(
            json.dumps(
                {
                    "when": datetime.now().isoformat(timespec="seconds"),
                    "config": {**vars(args), "cores": os.cpu_count(), "python": platform.python_version()},
                    "connect": ready,
                    "figures": figures,
                    "cpu": cpu,
                    "peak_rss": rss,
                    "idle": idle,
                    "model_server_totals": fake_stats.get("totals"),
                    "targets": {
                        "p95_added_latency_ms": p95_target(args.mode, args.streams),
                        "ttft_added_p95_ms": ttft_target(args.mode, args.streams),
                        "last_token_p95_ms": keep_up_target(args.mode, args.streams),
                        "relay_cpu_s_per_1k_tokens": TARGET_RELAY_CPU_S_PER_1K,
                        "idle_server_core_pct": TARGET_IDLE_CORE_PCT,
                    },
                    "verdict": {k: "PASS" if ok else "MISS" for k, ok in verdict.items()},
                    "table": text,
                },
                indent=1,
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
        for proc in reversed(procs):
            proc.stop()
        if pg is not None:
            pg.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
