"""Persuasion dialogues benchmark: N participants debate the AI agent at once (design C).

    .venv/bin/python -m bench.persuasion [--dialogues 50] [--mode production|embedded] [--rounds 2]

The whole path of a human-versus-AI dialogue, with the classification calls included: the
participant's turn over the websocket → read by the classifier (one call per turn, plus
the update checks it needs) → the agent's turn streamed through design B's relay
(debates/streaming.py) to the participant's websocket → read by the classifier in its
turn → the participant has the floor again. The model server is `devtools.fakellm` with a
responder (bench/persuasion_fakellm.py) answering classification requests with valid JSON
and the agents' requests with paced streamed words, recording when it sent every token.

Production mode: PostgreSQL, Redis (channel layer, stream buffer, Celery broker), uvicorn
with 2 workers and two Celery worker processes (`-P threads -c 64`), as bench/live.py.
Embedded mode: SQLite, no Redis, one uvicorn worker whose own loop writes the turns.

The figure of the issue: p95 added latency per token (a token's arrival at the
participant's websocket minus the time the model server sent it) under 120 ms at 50
dialogues in production. The baseline, measured in the same run: the same number of
streams of the same model read straight from the model server (no Rostrum in between).
See bench/README.md, "Persuasion dialogues benchmark". A missed target is reported, not
failed; the script exits non-zero only when it cannot run.
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
from datetime import datetime
from pathlib import Path

from bench import procstat
from bench.arrivals import PYTHON, RESULTS, ROOT, Postgres, Server, SetupError, fmt, say
from bench.live import (
    Counters,
    FakeModel,
    LogWatch,
    celery_worker,
    dist_ms,
    peak_rss_mb,
    redis_pid,
    run,
    token_ends,
)

DEFAULT_AGENT_MODEL = "pagent:ttft=300:tps=30:tokens=120"  # design B's pace (bench/live.py)
DEFAULT_CLASSIFIER_MODEL = "pclass:ttft=200"  # a JSON answer after 200 ms
TARGET_P95_MS = {"production": 120.0, "embedded": 50.0}  # at 50 dialogues (the issue; B's embedded target)
TARGET_DIALOGUES = 50
TARGET_RELAY_CPU_S_PER_1K = 1.5


class PersuasionModel(FakeModel):
    """The fake model server with the classifier's responder (bench/persuasion_fakellm.py)."""

    def __init__(self, env: dict) -> None:
        super().__init__(env)
        self.name = "persuasion-fakellm"
        self.log_path = RESULTS / f"{self.name}.log"
        self.cmd = [
            PYTHON,
            "-m",
            "bench.persuasion_fakellm",
            "--port",
            str(self.port),
            "--timing-cap",
            "100000",
        ]


class Client:
    """bench/persuasion_client.py: READY after every participant is connected, then GO."""

    def __init__(self, cmd: list[str], out: Path) -> None:
        self.out = out
        self.process = subprocess.Popen(
            [*cmd, "--out", str(out)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def line(self, timeout: float, what: str) -> str:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise SetupError(f"the client gave no {what} within {timeout}s")
        return self.process.stdout.readline().strip()

    def ready(self, timeout: float) -> dict:
        line = self.line(timeout, "READY")
        if not line.startswith("READY "):
            raise SetupError(
                f"the client did not get ready (said {line[:300]!r}, exit {self.process.poll()})"
            )
        return json.loads(line[6:])

    def go(self) -> None:
        self.process.stdin.write("GO\n")
        self.process.stdin.flush()

    def result(self, timeout: float) -> dict:
        if self.line(timeout, "result") != "DONE":
            raise SetupError(f"the client exited ({self.process.wait()}) without a result")
        self.process.wait(30)
        return json.loads(self.out.read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def dialogues_phase(url: str, people: list[dict], work: Path, args, counters: Counters | None, label: str):
    name = f"{label}-{secrets.token_hex(3)}"
    path = work / f"participants-{name}.json"
    path.write_text(json.dumps(people))
    cmd = [PYTHON, "-m", "bench.persuasion_client", "--url", url, "--participants", str(path)]
    cmd += ["--rounds", str(1 if label == "warm-up" else args.rounds), "--timeout", str(args.timeout)]
    if args.no_compression:
        cmd.append("--no-compression")
    client = Client(cmd, work / f"client-{name}.json")
    try:
        ready = client.ready(args.timeout)
        if ready["connected"] != len(people):
            raise SetupError(f"{label}: only {ready['connected']}/{len(people)} connected: {ready['errors']}")
        before = counters.read() if counters else None
        client.go()
        result = client.result(args.timeout + 60)
        after = counters.read() if counters else None
        if counters:
            result["other_processes"] = counters.others(before, after, client.process.pid)
    finally:
        client.stop()
    return ready, result, (Counters.delta(before, after) if counters else None)


def baseline_phase(fake: FakeModel, work: Path, args) -> dict:
    """The same number of streams of the agent's model, straight from the model server."""
    fake.reset()
    out = work / "baseline.json"
    cmd = [PYTHON, "-m", "bench.persuasion_client", "--baseline", fake.url, "--streams", str(args.dialogues)]
    cmd += ["--model", args.agent_model, "--out", str(out)]
    run(cmd, dict(os.environ), "baseline client", timeout=args.timeout)
    result = json.loads(out.read_text())
    records = {r["messages_sha256"]: r for r in fake.stats().get("timings", [])}
    lat, unmatched = [], 0
    for stream in result["streams"]:
        record = records.get(stream["messages_sha256"])
        if record is None or len(record["sent_at"]) != len(stream["received"]):
            unmatched += 1
            continue
        lat += [r - s for r, s in zip(stream["received"], record["sent_at"])]
    return {
        "streams": len(result["streams"]),
        "unmatched": unmatched,
        "token_latency_ms": dist_ms(lat),
        "client_cpu_s": result["client_cpu_s"],
    }


# --- Analysis -------------------------------------------------------------------------------


def analyse(result: dict, fake: dict, collected: dict, rounds: int) -> dict:
    records: dict[str, list[dict]] = {}
    for record in sorted(fake.get("timings", []), key=lambda r: r["arrived_at"]):
        records.setdefault(record.get("messages_sha256"), []).append(record)
    problems: list[str] = []
    integrity = dict.fromkeys(
        (
            "gaps",
            "overlaps",
            "end_text_mismatch",
            "client_db_mismatch",
            "db_model_mismatch",
            "retries",
            "missing_turns",
            "unmatched_requests",
            "token_count_mismatch",
            "fallback_turns",
            "failed_calls",
        ),
        0,
    )
    lat, frame_lat, client_gaps = [], [], []
    by_round: dict[int, list[float]] = {}  # round 1 starts with every participant at once
    read_own, to_reply, reply_added, model_ttft = [], [], [], []
    turns_expected = turns_exact = tokens = deltas = 0
    for person in result["participants"]:
        did = str(person["dialogue_id"])
        if person["error"]:
            problems.append(f"dialogue {did}: {person['error']}")
        integrity["retries"] += person["resets"]
        db_turns = {t["seq"]: t for t in collected["turns"].get(did, [])}
        integrity["fallback_turns"] += sum(1 for t in db_turns.values() if t["fallback"])
        calls = collected["calls"].get(did, [])
        integrity["failed_calls"] += sum(1 for c in calls if c["error_kind"])
        agent_calls = {
            c["turn_seq"]: c for c in calls if c["role"] == "persuasion_agent" and not c["error_kind"]
        }
        said = {s["seq"]: s for s in person["said"] if s["seq"] is not None}
        for s in person["said"]:
            if s["read_t"] is not None:
                read_own.append(s["read_t"] - s["t"])
        client_turns = sorted(person["turns"], key=lambda t: t["seq"])
        turns_expected += rounds
        if len(client_turns) < rounds:
            integrity["missing_turns"] += rounds - len(client_turns)
            problems.append(f"dialogue {did}: {len(client_turns)}/{rounds} agent turns seen")
        for n, ct in enumerate(client_turns[:rounds]):
            seq = ct["seq"]
            dbt, call = db_turns.get(seq), agent_calls.get(seq)
            if ct["end_t"] is None or dbt is None or call is None:
                integrity["missing_turns"] += 1
                problems.append(
                    f"dialogue {did} turn {seq}: ended={ct['end_t'] is not None} db={dbt and dbt['status']}"
                )
                continue
            found = records.get(call["messages_sha256"]) or []
            record = found.pop(0) if found else None
            if record is None:
                integrity["unmatched_requests"] += 1
                problems.append(f"dialogue {did} turn {seq}: no model-server record for its request")
                continue
            text, sent, ds = ct["text"], record["sent_at"], ct["deltas"]
            exact = ct["gaps"] == 0 and ct["overlaps"] == 0 and ct["attempts"] == [1] and dbt["attempts"] == 1
            integrity["gaps"] += ct["gaps"]
            integrity["overlaps"] += ct["overlaps"]
            # The stored turn (and turn.end) is the reply without its trailing space.
            checks = (
                ("end_text_mismatch", (ct["end_text"] or "") == text.strip()),
                ("client_db_mismatch", dbt["text"] == text.strip()),
                ("db_model_mismatch", dbt["text"] == call["expected_text"].strip()),
            )
            for key, ok in checks:
                if not ok:
                    integrity[key] += 1
                    exact = False
            ends = token_ends(text)
            if len(ends) != len(sent):
                integrity["token_count_mismatch"] += 1
                exact = False
            at = 0
            for _, offset, length in ds:
                exact &= offset == at
                at = offset + length
            turns_exact += exact
            tokens += len(sent)
            deltas += len(ds)
            i = 0
            for k, end in enumerate(ends[: len(sent)]):
                while i < len(ds) and ds[i][1] + ds[i][2] < end:
                    i += 1
                if i == len(ds):
                    break
                lat.append(ds[i][0] - sent[k])
                by_round.setdefault(n + 1, []).append(ds[i][0] - sent[k])
            k = 0
            for t, offset, length in ds:
                while k + 1 < len(ends) and ends[k + 1] <= offset + length:
                    k += 1
                if k < len(sent) and ends[k] <= offset + length:
                    frame_lat.append(t - sent[k])
            client_gaps += [b[0] - a[0] for a, b in zip(ds, ds[1:])]
            mine = said.get(seq - 1)
            if mine is not None and ds:
                first_model = sent[0] - record["arrived_at"]
                to_reply.append(ds[0][0] - mine["t"])
                model_ttft.append(first_model)
                reply_added.append(ds[0][0] - mine["t"] - first_model)
    classify = [c for cs in collected["calls"].values() for c in cs if c["role"] != "persuasion_agent"]
    roles: dict[str, int] = {}
    for c in classify:
        roles[c["role"]] = roles.get(c["role"], 0) + 1
    ends_t = [t["end_t"] for p in result["participants"] for t in p["turns"] if t["end_t"]]
    wall = (max(ends_t) - result["go_t"]) if ends_t else None
    messages = sum(p["received"] - p["counts"].get("snapshot", 0) for p in result["participants"])
    return {
        "dialogues": len(result["participants"]),
        "turns_expected": turns_expected,
        "turns_exact": turns_exact,
        "all_exact": turns_exact == turns_expected and turns_expected > 0,
        "integrity": integrity,
        "tokens": tokens,
        "deltas": deltas,
        "wall_s": wall,
        "timed_out": result["timed_out"],
        "token_latency_ms": dist_ms(lat),
        "token_latency_by_round_ms": {str(r): dist_ms(v) for r, v in sorted(by_round.items())},
        "frame_latency_newest_token_ms": dist_ms(frame_lat),
        "client_frame_gap_ms": dist_ms(client_gaps),
        "own_turn_read_ms": dist_ms(read_own, (50, 95)),
        "turn_to_first_reply_token_ms": dist_ms(to_reply, (50, 95)),
        "model_ttft_ms": dist_ms(model_ttft, (50, 95)),
        "added_before_first_token_ms": dist_ms(reply_added, (50, 95)),
        "classifier_calls": roles,
        "classifier_call_ms": dist_ms(
            [c["total_ms"] / 1000 for c in classify if c["total_ms"] is not None], (50, 95)
        ),
        "ws_messages": messages,
        "ws_messages_per_s": messages / wall if wall else None,
        "problems": problems[:20],
    }


# --- Report ---------------------------------------------------------------------------------


def report(args, f: dict, cpu: dict, base: dict, rss: dict) -> tuple[str, dict]:
    target = TARGET_P95_MS[args.mode] if args.dialogues <= TARGET_DIALOGUES else None
    p95 = f["token_latency_ms"]["p95"]
    verdict = {"no_token_lost_duplicated_or_out_of_order": f["all_exact"] and not f["timed_out"]}
    if target is not None:
        verdict[f"p95_added_latency_lt_{target:g}ms"] = p95 is not None and p95 < target
    if args.mode == "production":
        per_k = cpu["relay_cpu_s_per_1k_tokens"]
        verdict["relay_cpu_lt_1.5s_per_1k_tokens"] = per_k is not None and per_k < TARGET_RELAY_CPU_S_PER_1K

    def mark(key: str) -> str:
        return "" if key not in verdict else ("PASS" if verdict[key] else "MISS")

    def d(x: dict, keys=("p50", "p95"), digits=0) -> str:
        return " / ".join(fmt(x.get(k), " ms" if k == keys[-1] else "", digits) for k in keys)

    integrity = ", ".join(f"{k} {v}" for k, v in f["integrity"].items() if v) or "none"
    calls = ", ".join(f"{k} {v}" for k, v in sorted(f["classifier_calls"].items()))
    rows = [
        (
            "dialogues / agent turns exact",
            f"{f['dialogues']} / {f['turns_exact']} of {f['turns_expected']}",
            "all",
            mark("no_token_lost_duplicated_or_out_of_order"),
        ),
        ("  problems (lost, doubled, retried, fallback, …)", integrity, "none", ""),
        ("tokens / frames / wall", f"{f['tokens']} / {f['deltas']} / {fmt(f['wall_s'], ' s', 1)}", "", ""),
        (
            "added latency per token p50/p95/p99",
            d(f["token_latency_ms"], ("p50", "p95", "p99")),
            f"< {target:g} ms" if target is not None else "(target at ≤ 50)",
            mark(f"p95_added_latency_lt_{target:g}ms") if target is not None else "",
        ),
        ("  per frame, newest token p50/p95", d(f["frame_latency_newest_token_ms"]), "", ""),
        (
            "  p95 by round (1: all start at once)",
            " / ".join(fmt(v["p95"], "", 0) for v in f["token_latency_by_round_ms"].values()) + " ms",
            "",
            "",
        ),
        (
            "  baseline: model server → client directly p50/p95/p99",
            d(base["token_latency_ms"], ("p50", "p95", "p99"), 1),
            "",
            "",
        ),
        ("  gaps between frames at the participant p50/p95", d(f["client_frame_gap_ms"]), "", ""),
        ("classifier calls (same model server)", calls, "", ""),
        ("  classifier call p50/p95", d(f["classifier_call_ms"]), "", ""),
        ("participant's turn → shown read p50/p95", d(f["own_turn_read_ms"]), "", ""),
        ("participant's turn → first reply token p50/p95", d(f["turn_to_first_reply_token_ms"]), "", ""),
        ("  of which the model's own TTFT p50/p95", d(f["model_ttft_ms"]), "", ""),
        (
            "  of which Rostrum (reading incl. classifier, relay) p50/p95",
            d(f["added_before_first_token_ms"]),
            "",
            "",
        ),
        ("websocket messages/s", fmt(f["ws_messages_per_s"], "", 0), "", ""),
        (
            "CPU over the dialogues, server",
            f"{cpu['server']:.2f} s ({cpu['pct']['server']:.0f}% core)",
            "",
            "",
        ),
    ]
    if args.mode == "production":
        rows += [
            ("  Celery workers", f"{cpu['workers']:.2f} s ({cpu['pct']['workers']:.0f}% core)", "", ""),
            ("  Redis", f"{cpu['redis']:.2f} s ({cpu['pct']['redis']:.0f}% core)", "", ""),
        ]
    rows += [
        (
            "relay CPU per 1,000 tokens (incl. classification work)",
            fmt(cpu["relay_cpu_s_per_1k_tokens"], " s", 2),
            f"< {TARGET_RELAY_CPU_S_PER_1K:g} s" if args.mode == "production" else "",
            mark("relay_cpu_lt_1.5s_per_1k_tokens"),
        ),
        (
            "  (not counted) PostgreSQL / model server / client",
            f"{cpu['postgres']:.2f} / {cpu['fakellm']:.2f} / {cpu['client']:.2f} s",
            "",
            "",
        ),
        ("  other processes' CPU", f"{cpu['other']:.2f} s", "~0", ""),
        ("exceptions logged (server, workers)", str(sum(f["exceptions_logged"].values())), "0", ""),
        (
            "peak RSS server / workers (max process)",
            f"{fmt(rss['server']['max_mb'], ' MB', 0)} / {fmt(rss['workers']['max_mb'], ' MB', 0)}",
            "",
            "",
        ),
    ]
    table = [("figure", "value", "target", ""), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [
        f"Rostrum persuasion dialogues, {args.mode} mode: {f['dialogues']} participants × "
        f"{args.rounds} rounds, agent {args.agent_model}, classifier {args.classifier_model}, "
        f"{args.server_workers} uvicorn worker(s)"
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
    if f["exceptions_logged"]:
        lines.append("Exceptions logged (see bench/results/*.log):")
        lines += [f"  {n} x {message}" for message, n in list(f["exceptions_logged"].items())[:5]]
    if cpu["other"] > max(1.0, 0.1 * cpu["machine"]):
        top = ", ".join(f"{o['comm']}[{o['pid']}] {o['cpu_s']:.1f} s" for o in cpu["other_processes"])
        lines.append(
            f"NOTE: other processes used {cpu['other']:.1f} s of CPU meanwhile: latencies are "
            f"disturbed. Live ones: {top or 'none'}"
        )
    return "\n".join(lines), verdict


# --- Main -----------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dialogues", type=int, default=50, help="participants debating the agent at once (50)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="agent replies per participant (2)")
    parser.add_argument("--mode", choices=("production", "embedded"), default="production")
    parser.add_argument("--agent-model", default=DEFAULT_AGENT_MODEL, help=f"({DEFAULT_AGENT_MODEL})")
    parser.add_argument(
        "--classifier-model", default=DEFAULT_CLASSIFIER_MODEL, help=f"({DEFAULT_CLASSIFIER_MODEL})"
    )
    parser.add_argument("--warmup", type=int, default=8, help="warm-up dialogues before measuring (8)")
    parser.add_argument(
        "--server-workers", type=int, default=None, help="uvicorn workers (production 2, embedded 1)"
    )
    parser.add_argument("--concurrency", type=int, default=64, help="threads per Celery worker (64)")
    parser.add_argument(
        "--db-name", default="rostrum_bench_persuasion", help="PostgreSQL database, recreated"
    )
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12", help="Redis database, flushed")
    parser.add_argument("--timeout", type=float, default=300, help="give up on a phase after this, s")
    parser.add_argument("--no-compression", action="store_true", help="no permessage-deflate")
    args = parser.parse_args()
    if args.server_workers is None:
        args.server_workers = 2 if args.mode == "production" else 1
    return args


def main() -> int:
    args = parse_args()
    if args.dialogues < 1 or args.rounds < 1:
        print("--dialogues and --rounds must be at least 1", file=sys.stderr)
        return 2
    RESULTS.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rostrum-bench-persuasion-"))
    procs: list = []
    pg = None

    def terminate(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, terminate)
    try:
        production = args.mode == "production"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE", "LLM_BACKEND")
        }
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(48),
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="0",
            STATIC_ROOT=str(work / "static"),
            PYTHONUNBUFFERED="1",
        )
        if production:
            pg = Postgres(args.pg, args.db_name)
            say(f"recreating database {args.db_name}")
            pg.recreate()
            env["DATABASE_URL"] = pg.url
        else:
            env["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
        setup_env = dict(env)
        say("manage.py migrate")
        run([PYTHON, "manage.py", "migrate", "--noinput"], setup_env, "migrate")
        say(f"set-up: {args.dialogues} + {args.warmup} warm-up participants seated against the agent")
        setup_file = work / "setup.json"
        cmd = [PYTHON, "-m", "bench.persuasion_setup", "setup", "--dialogues", str(args.dialogues)]
        cmd += ["--warmup", str(args.warmup), "--agent-model", args.agent_model]
        cmd += ["--classifier-model", args.classifier_model, "--out", str(setup_file)]
        run(cmd, setup_env, "set-up", timeout=900)
        setup = json.loads(setup_file.read_text())

        fake = PersuasionModel(env)
        procs.append(fake)
        fake.start()
        env.update(LLM_BACKEND="openai", OPENAI_BASE_URL=f"{fake.url}/v1", OPENAI_API_KEY="x")
        redis = None
        if production:
            import redis as redis_lib

            try:
                redis_lib.Redis.from_url(args.redis_url).flushdb()
            except redis_lib.RedisError as exc:
                raise SetupError(f"cannot use Redis at {args.redis_url}: {exc}") from None
            env["REDIS_URL"] = args.redis_url
            redis = redis_pid(args.redis_url)
        server = Server(
            f"persuasion-{args.mode}", "config.asgi:application", args.server_workers, env, "/healthz"
        )
        procs.append(server)
        say(f"starting uvicorn with {args.server_workers} worker(s)")
        server.start()
        workers = []
        if production:
            for name in ("w1", "w2"):
                worker = celery_worker(name, env, args.concurrency)
                worker.name = f"persuasion-celery-{name}"
                worker.log_path = RESULTS / f"{worker.name}.log"
                procs.append(worker)
                workers.append(worker)
                worker.start()
            for worker in workers:
                worker.wait_for_log("ready.")
            say("two Celery workers ready")
        counters = Counters(server, workers, fake, redis)
        url = f"ws://127.0.0.1:{server.port}"

        if setup["warmup"]:
            say(f"warm-up: {len(setup['warmup'])} dialogues, one round")
            _, warm, _ = dialogues_phase(url, setup["warmup"], work, args, None, "warm-up")
            if warm["error_count"] or warm["timed_out"]:
                raise SetupError(f"the warm-up failed: {warm['errors']} (timed out: {warm['timed_out']})")
        fake.reset()

        logs = LogWatch([server.log_path, *(w.log_path for w in workers)])
        say(f"dialogues: {args.dialogues} participants connect, then all write their first turn at once")
        ready, result, delta = dialogues_phase(url, setup["dialogues"], work, args, counters, "dialogues")
        say(f"dialogues done in {result['end_t'] - result['go_t']:.1f} s; reading back")
        fake_stats = fake.stats()
        ids_file = work / "ids.json"
        ids_file.write_text(json.dumps([p["dialogue_id"] for p in setup["dialogues"]]))
        collected_file = work / "collected.json"
        cmd = [PYTHON, "-m", "bench.persuasion_setup", "collect", "--dialogues", str(ids_file)]
        run([*cmd, "--out", str(collected_file)], setup_env, "read-back")
        figures = analyse(result, fake_stats, json.loads(collected_file.read_text()), args.rounds)
        time.sleep(2)  # the participants' disconnections are handled
        figures["exceptions_logged"] = logs.errors()

        say(f"baseline: {args.dialogues} streams of {args.agent_model} straight from the model server")
        base = baseline_phase(fake, work, args)

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
        rss = {
            "server": peak_rss_mb(procstat.tree_pids(server.process.pid)),
            "workers": peak_rss_mb([p for w in workers for p in procstat.tree_pids(w.pid)]),
        }
        text, verdict = report(args, figures, cpu, base, rss)
        print()
        print(text)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        out = RESULTS / f"persuasion-{stamp}-{args.mode}-n{args.dialogues}.json"
        out.write_text(
            json.dumps(
                {
                    "when": datetime.now().isoformat(timespec="seconds"),
                    "config": {**vars(args), "cores": os.cpu_count(), "python": platform.python_version()},
                    "connect": ready,
                    "figures": figures,
                    "baseline": base,
                    "cpu": cpu,
                    "peak_rss": rss,
                    "model_server_totals": fake_stats.get("totals"),
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
