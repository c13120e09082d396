"""Faults benchmark: a study and live debates on the scaled-out cluster while things break.

    .venv/bin/python -m bench.faults [--participants 200] [--debates 50] [--fault-every 3]

Starts devtools/cluster.py (two uvicorn servers behind nginx, two Celery workers, beat) on a
fresh PostgreSQL database and a flushed Redis database, the fake OpenAI-compatible model
(devtools/fakellm.py) for the debaters, and, between the participants and nginx, a small TCP
proxy that cuts 10% of HTTP responses on the way back (the request reached the server; the
participant sees the connection drop). Then N participants walk bench/study.py's study (as
bench/client.py does, each from an address of its own in X-Forwarded-For) and M judges each
ask both debaters of a live debate a question over the websocket (bench/live_setup.py's
sessions) while, in turn, a server process, a Celery worker, every database connection
(pg_terminate_backend) and every Redis connection of our database (CLIENT KILL) are killed;
killed processes are started again a second later, as a supervisor would.

Participants behave like people: after an error they wait a little and do the same again
(a reload, a resubmitted form); judges reconnect and retry a failed turn. The report: answers
lost, duplicated, participants stranded, turns written twice (all must be 0), and what the
participants saw (errors, seconds lost). Figures only; it asserts nothing about timings.
See bench/README.md, "Faults benchmark".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench.arrivals import PYTHON, RESULTS, Postgres, SetupError, percentile, run, say
from bench.client import Connection
from bench.live import FakeModel
from devtools.cluster import Cluster, ClusterError
from devtools.formparse import default_answers, parse_step

MODEL = "fake-faults:ttft=300:tps=30:tokens=60"
RETRIES = 30


# --- The proxy that cuts responses -------------------------------------------------------------


class CuttingProxy:
    """Client -> nginx. For a share of requests, the connection is closed as the response's
    first bytes come back: the server did the work, the participant never hears of it."""

    def __init__(self, upstream_port: int, rate: float, seed: int) -> None:
        self.upstream_port, self.rate = upstream_port, rate
        self.rng = random.Random(seed)
        self.requests = 0
        self.cut = 0

    async def start(self) -> int:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def handle(self, client_r, client_w) -> None:
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_w.close()
            return
        state = {"cut": False}

        async def upward() -> None:
            while data := await client_r.read(65536):
                self.requests += 1
                state["cut"] = self.rng.random() < self.rate
                up_w.write(data)
                await up_w.drain()

        async def downward() -> None:
            while data := await up_r.read(65536):
                if state["cut"]:
                    self.cut += 1
                    return
                client_w.write(data)
                await client_w.drain()

        tasks = [asyncio.ensure_future(upward()), asyncio.ensure_future(downward())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except Exception:  # noqa: BLE001, S110 - a dropped connection either way
            pass
        for task in tasks:
            task.cancel()
        for writer in (client_w, up_w):
            writer.close()


# --- Participants -------------------------------------------------------------------------------


class Stranded(Exception):
    pass


class Walkers:
    def __init__(self, args, port: int, slug: str, code: str) -> None:
        self.args, self.port, self.slug, self.code = args, port, slug, code
        self.rng = random.Random(args.seed)
        self.latencies: list[float] = []
        self.kinds: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.lost_s: list[float] = []
        self.completed = 0
        self.stranded: list[str] = []

    async def think(self) -> None:
        await asyncio.sleep(self.args.think_ms * self.rng.uniform(0.5, 1.5) / 1000)

    async def participant(self, index: int) -> None:
        await asyncio.sleep(self.args.arrival_s * index / max(1, self.args.participants))
        address = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
        conn = Connection("127.0.0.1", self.port, self.latencies, self.kinds, address)
        person = {"lost": 0.0}
        pid = secrets.token_hex(12)
        try:
            if await self.walk(conn, pid, person):
                self.completed += 1
            else:
                self.stranded.append(pid)
        except Stranded:
            self.stranded.append(pid)
        finally:
            conn.close()
            self.lost_s.append(person["lost"])

    async def request(self, conn, person, method, target, kind, form=None, want=(200,)):
        """The request, again and again after an error (a person reloading or resubmitting)."""
        for _ in range(RETRIES):
            started = time.perf_counter()
            try:
                response = await asyncio.wait_for(conn.request(method, target, kind, form), 60)
                if response.status in want or response.status < 500 and response.status not in (408, 429):
                    return response
                problem = f"{kind} {response.status}"
            except Exception as exc:  # noqa: BLE001 - every failure is seen by the participant
                problem = f"{kind} {type(exc).__name__}"
            conn.close()
            self.errors[problem] = self.errors.get(problem, 0) + 1
            pause = self.rng.uniform(0.5, 1.5)
            await asyncio.sleep(pause)
            person["lost"] += time.perf_counter() - started
        raise Stranded

    async def walk(self, conn, pid: str, person) -> bool:
        ids = f"PROLIFIC_PID={pid}&STUDY_ID={secrets.token_hex(12)}&SESSION_ID={secrets.token_hex(12)}"
        entry = await self.request(conn, person, "GET", f"/s/{self.slug}/?{ids}", "entry", want=(302,))
        if entry.status != 302:
            return False
        target = urlsplit(entry.header("location")).path
        for _ in range(40):
            page = await self.request(conn, person, "GET", target, "step GET")
            body = page.body.decode(errors="replace")
            if f"cc={self.code}" in body or page.header("location").endswith(f"cc={self.code}"):
                return True  # the last answer arrived, its response did not: the page says done
            if page.status in (301, 302, 303):
                target = page.header("location")
                continue
            form = parse_step(body)
            if not form.position:
                return False
            await self.think()
            answer = await self.request(
                conn, person, "POST", target, "step POST", default_answers(form), (303,)
            )
            location = answer.header("location")
            if answer.status == 303 and location.endswith(f"cc={self.code}"):
                return True
            if answer.status == 200 and f"cc={self.code}" in answer.body.decode(errors="replace"):
                # The last answer was sent again after its response was cut: the participant,
                # already done, is shown the finished page with the code (not an error).
                return True
            if answer.status == 303 and location.startswith("/"):
                target = location
            else:
                self.errors[f"step POST {answer.status}"] = (
                    self.errors.get(f"step POST {answer.status}", 0) + 1
                )
        return False


# --- Judges -------------------------------------------------------------------------------------


QUIET_S = 10  # as static/js/live.js (LIVE_RESYNC_QUIET_SECONDS)


class Judges:
    """Each judge asks both debaters one question and reads both replies as live.js does:
    reconnecting after a dropped socket, asking for a resync after a lost frame or a lost end
    (a later turn starting, the judge's turn coming, or nothing heard for QUIET_S while a reply
    is being written) and for a retry after a failed turn."""

    def __init__(self, ws_base: str, sessions: list[dict]) -> None:
        self.ws_base, self.sessions = ws_base, sessions
        self.errors: dict[str, int] = {}
        self.shown: dict[int, dict[int, str]] = {}
        self.done: set[int] = set()
        self.lost_s: list[float] = []

    async def judge(self, info: dict, delay: float) -> None:
        from websockets.asyncio.client import connect

        await asyncio.sleep(delay)
        sid, shown, asked, lost = info["session_id"], {}, False, 0.0
        self.shown[sid] = shown
        url = f"{self.ws_base}/ws/live/{info['token']}/"
        deadline = time.monotonic() + 240
        failures = 0  # in a row: the back-off of static/js/live.js (0.5 s doubling, at most 8 s)
        dropped: float | None = None  # when the judge lost the conversation, until it is back
        while time.monotonic() < deadline and sid not in self.done:
            try:
                async with connect(url, origin="http://127.0.0.1", open_timeout=20, proxy=None) as ws:
                    failures = 0  # open: the browser starts its back-off again
                    if dropped is not None:
                        lost += time.perf_counter() - dropped
                        dropped = None
                    unended: set[int] = set()  # turns started whose end has not come
                    while True:
                        try:
                            raw = await asyncio.wait_for(ws.recv(), QUIET_S)
                        except TimeoutError:  # live.js: a reply being written, nothing heard
                            if unended:
                                await ws.send(json.dumps({"type": "resync"}))
                            continue
                        m = json.loads(raw)
                        kind = m["type"]
                        if kind == "snapshot":
                            shown.update({t["seq"]: t["text"] for t in m["turns"]})
                            writing = ("pending", "streaming")
                            unended = {t["seq"] for t in m["turns"] if t["status"] in writing}
                            if any(t["status"] == "failed" for t in m["turns"]):
                                # live.js shows "try again" (its turn.failed may have been lost)
                                self.errors["turn failed"] = self.errors.get("turn failed", 0) + 1
                                await ws.send(json.dumps({"type": "retry"}))
                        elif kind in ("turn.start", "turn.reset"):
                            if kind == "turn.start" and any(seq < m["seq"] for seq in unended):
                                await ws.send(json.dumps({"type": "resync"}))  # an end was lost
                                continue
                            shown[m["seq"]] = ""
                            unended.add(m["seq"])
                        elif kind == "turn.delta":
                            have = shown.get(m["seq"], "")
                            if m["offset"] > len(have):
                                await ws.send(json.dumps({"type": "resync"}))
                                continue
                            shown[m["seq"]] = have + m["text"][len(have) - m["offset"] :]
                        elif kind in ("turn.end", "judge.message"):
                            shown[m["seq"]] = m["text"]
                            unended.discard(m["seq"])
                        elif kind == "turn.failed":
                            unended.discard(m["seq"])
                            self.errors["turn failed"] = self.errors.get("turn failed", 0) + 1
                            await ws.send(json.dumps({"type": "retry"}))
                        state = m.get("state") if kind == "snapshot" else m
                        if not state or state.get("type") != "state":
                            continue
                        if (state["next"] == "J" or state.get("done")) and unended:
                            await ws.send(json.dumps({"type": "resync"}))  # live.js: an end was lost
                            continue
                        # A snapshot (a new socket) still waiting for the question: the one
                        # sent before the drop never arrived; the judge asks again, as a
                        # person would (a second one in flight is refused: not their turn).
                        if state["next"] == "J" and len(shown) <= 2 and (not asked or kind == "snapshot"):
                            text = f"[session {sid}] Which of your sources is the strongest?"
                            await ws.send(json.dumps({"type": "ask", "target": "both", "text": text}))
                            asked = True
                        elif state["next"] in ("J", "") and len(shown) >= 5:
                            self.done.add(sid)
                            break
            except Exception as exc:  # noqa: BLE001 - a dropped or refused socket: reconnect
                problem = f"websocket {type(exc).__name__}"
                self.errors[problem] = self.errors.get(problem, 0) + 1
                # As the browser does: a client retrying every second stays over the server's
                # 20 connection attempts a minute (refused attempts count) and is never let in.
                dropped = time.perf_counter() if dropped is None else dropped
                await asyncio.sleep(min(0.5 * 2**failures, 8.0))
                failures += 1
        if dropped is not None:  # never got back before the end
            lost += time.perf_counter() - dropped
        self.lost_s.append(lost)


# --- Faults -------------------------------------------------------------------------------------


class Faults:
    def __init__(self, cluster: Cluster, pg: Postgres, redis_url: str, every: float) -> None:
        self.cluster, self.pg, self.redis_url, self.every = cluster, pg, redis_url, every
        self.done: dict[str, int] = {}

    def _count(self, name: str, n: int = 1) -> None:
        self.done[name] = self.done.get(name, 0) + n

    def kill(self, name: str) -> None:
        self.cluster.procs[name].kill()
        self._count(f"killed {name[:-1]}")
        time.sleep(1)
        self.cluster.restart(name)

    def database(self) -> None:
        rows = self.pg.conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (self.pg.db_name,),
        ).fetchall()
        self._count("database connections terminated", len(rows))

    def redis(self) -> None:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        db = str(client.connection_pool.connection_kwargs.get("db", 0))
        me = client.client_id()
        killed = 0
        for c in client.client_list():
            if str(c.get("db")) == db and str(c.get("id")) != str(me):
                killed += client.execute_command("CLIENT", "KILL", "ID", c["id"])  # ours only: one db
        client.close()
        self._count("redis connections killed", killed)

    async def run(self, stop: asyncio.Event) -> None:
        plan = [
            lambda: self.kill("app1"),
            self.database,
            lambda: self.kill("worker1"),
            self.redis,
            lambda: self.kill("app2"),
            self.database,
            lambda: self.kill("worker2"),
            self.redis,
        ]
        i = 0
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.every)
                return
            except TimeoutError:
                pass
            await asyncio.to_thread(plan[i % len(plan)])
            i += 1


# --- The run -----------------------------------------------------------------------------------


async def load(args, cluster: Cluster, pg: Postgres, study: dict, live: dict) -> dict:
    proxy = CuttingProxy(cluster.port, args.cut, args.seed)
    proxy_port = await proxy.start()
    walkers = Walkers(args, proxy_port, study["slug"], study["completion_code"])
    judges = Judges(f"ws://127.0.0.1:{cluster.port}", live["streams"])
    faults = Faults(cluster, pg, args.redis_url, args.fault_every)
    stop = asyncio.Event()
    fault_task = asyncio.ensure_future(faults.run(stop))
    started = time.perf_counter()
    tasks = [walkers.participant(i) for i in range(args.participants)]
    tasks += [
        judges.judge(s, args.arrival_s * i / max(1, args.debates)) for i, s in enumerate(live["streams"])
    ]
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - started
    stop.set()
    await fault_task
    proxy.server.close()
    return {
        "wall_s": wall,
        "walkers": walkers,
        "judges": judges,
        "faults": faults.done,
        "cut": {"requests": proxy.requests, "cut": proxy.cut},
    }


def check_answers(pg: Postgres, slug: str, per: int) -> dict:
    with pg.psycopg.connect(pg.url, autocommit=True) as conn:
        q = conn.execute
        sid = q("SELECT id FROM studies_study WHERE slug = %s", (slug,)).fetchone()[0]
        participants = q(
            "SELECT status, count(*) FROM participants_participant WHERE study_id = %s GROUP BY status",
            (sid,),
        ).fetchall()
        duplicated = q(
            "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) n FROM participants_response r JOIN "
            "participants_participant p ON p.id = r.participant_id WHERE p.study_id = %s "
            "GROUP BY r.participant_id, r.key HAVING count(*) > 1) x",
            (sid,),
        ).fetchone()[0]
        lost = q(
            "SELECT coalesce(sum(%s - n), 0) FROM (SELECT p.id, count(DISTINCT r.key) n "
            "FROM participants_participant p "
            "LEFT JOIN participants_response r ON r.participant_id = p.id WHERE p.study_id = %s "
            "AND p.status = 'completed' GROUP BY p.id) x WHERE n < %s",
            (per, sid, per),
        ).fetchone()[0]
        multiple = q(
            "SELECT count(*) FROM (SELECT prolific_pid FROM participants_participant WHERE study_id = %s "
            "GROUP BY prolific_pid HAVING count(*) > 1) x",
            (sid,),
        ).fetchone()[0]
    return {
        "by_status": dict(participants),
        "answers_duplicated": int(duplicated),
        "answers_lost": int(lost),
        "participants_entered_twice": int(multiple),
    }


def check_turns(pg: Postgres, judges: Judges, ids: list[int]) -> dict:
    with pg.psycopg.connect(pg.url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT session_id, seq, round, speaker, status, attempts, text FROM debates_liveturn "
            "WHERE session_id = ANY(%s) ORDER BY session_id, seq",
            (ids,),
        ).fetchall()
    turns: dict[int, list] = {}
    for row in rows:
        turns.setdefault(row[0], []).append(row)
    twice = sum(
        len(ts) - len({(t[2], t[3]) for t in ts}) for ts in turns.values()
    )  # a (round, speaker) with more than one turn
    unfinished = sum(1 for ts in turns.values() for t in ts if t[4] != "done")
    complete = sum(1 for ts in turns.values() if len(ts) >= 5 and all(t[4] == "done" for t in ts))
    unlike = [
        (sid, t, judges.shown[sid][t[1]])
        for sid, ts in turns.items()
        for t in ts
        if t[4] == "done" and judges.shown.get(sid, {}).get(t[1]) not in (None, t[6])
    ]
    mismatched = len(unlike)
    return {
        "debates": len(ids),
        "debates_complete": complete,
        "turns_written_twice": twice,
        "turns_unfinished": unfinished,
        "turns_rewritten_after_a_fault": sum(1 for ts in turns.values() for t in ts if t[5] > 1),
        "turns_shown_unlike_stored": mismatched,
        # What the judge was left with: a prefix of the stored text is a lost end.
        "unlike_samples": [
            {
                "session": sid,
                "seq": t[1],
                "speaker": t[3],
                "attempts": t[5],
                "shown_chars": len(seen),
                "stored_chars": len(t[6]),
                "shown_is_a_prefix": t[6].startswith(seen),
            }
            for sid, t, seen in unlike[:10]
        ],
    }


def report(args, out: dict, answers: dict, turns: dict) -> str:
    w, j = out["walkers"], out["judges"]
    lost = w.lost_s
    errors_seen = sum(w.errors.values())
    zero = {
        "answers lost": answers["answers_lost"],
        "answers duplicated": answers["answers_duplicated"],
        "participants stranded": len(w.stranded) + answers["participants_entered_twice"],
        "debates stranded": turns["debates"] - turns["debates_complete"],
        "turns written twice": turns["turns_written_twice"],
        "turns shown unlike stored": turns["turns_shown_unlike_stored"],
    }
    lines = [
        f"Faults benchmark: {args.participants} participants, {len(j.sessions)} live debates, "
        f"{out['wall_s']:.0f} s, a fault every {args.fault_every:g} s",
        f"faults injected: {json.dumps(out['faults'])}",
        f"responses cut: {out['cut']['cut']} of {out['cut']['requests']} requests through the cutting proxy",
        "",
        "must be 0:",
        *(f"  {k:<28} {v}{'' if v == 0 else '   <-- NOT ZERO'}" for k, v in zero.items()),
        *(f"    shown unlike stored: {json.dumps(sample)}" for sample in turns["unlike_samples"]),
        "",
        f"participants completed: {w.completed} / {args.participants}; "
        f"in the database: {answers['by_status']}",
        f"debates complete: {turns['debates_complete']} / {turns['debates']}; turns written again after a "
        f"fault (a new attempt, not a duplicate): {turns['turns_rewritten_after_a_fault']}",
        "",
        "what participants saw:",
        f"  errors seen: {errors_seen} ({json.dumps(dict(sorted(w.errors.items(), key=lambda kv: -kv[1])))})",
        f"  participants who saw an error: {sum(1 for s in lost if s > 0)}",
        f"  seconds lost per participant: mean {sum(lost) / max(1, len(lost)):.2f}, "
        f"p95 {percentile(lost, 95) or 0:.2f}, max {max(lost or [0]):.2f}",
        f"  page latency p50 / p95: {1000 * (percentile(w.latencies, 50) or 0):.0f} / "
        f"{1000 * (percentile(w.latencies, 95) or 0):.0f} ms",
        f"  judges: errors seen {sum(j.errors.values())} ({json.dumps(j.errors)}); seconds lost "
        f"mean {sum(j.lost_s) / max(1, len(j.lost_s)):.2f}, max {max(j.lost_s or [0]):.2f}",
    ]
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--participants", type=int, default=200, help="participants walking the study (200)")
    parser.add_argument("--debates", type=int, default=50, help="judges in live debates (50)")
    parser.add_argument(
        "--think-ms", type=float, default=1500, help="mean think time before each answer (1500)"
    )
    parser.add_argument(
        "--arrival-s", type=float, default=20, help="arrivals spread over this many seconds (20)"
    )
    parser.add_argument("--fault-every", type=float, default=3, help="seconds between faults (3)")
    parser.add_argument("--cut", type=float, default=0.10, help="share of HTTP responses cut (0.10)")
    parser.add_argument("--db-name", default="rostrum_bench_faults", help="database dropped and recreated")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14", help="Redis database, flushed")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    RESULTS.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rostrum-bench-faults-"))
    pg = cluster = fake = None

    def terminate(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    try:
        import redis

        pg = Postgres(args.pg, args.db_name)
        say(f"recreating database {args.db_name}, flushing {args.redis_url}")
        pg.recreate()
        redis.Redis.from_url(args.redis_url).flushdb()
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings", DATABASE_URL=pg.url, DEBUG="1", PYTHONUNBUFFERED="1"
        )
        run([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
        study = json.loads(run([PYTHON, "-m", "bench.study"], env, "study set-up").strip().splitlines()[-1])
        setup_file = work / "live.json"
        cmd = [PYTHON, "-m", "bench.live_setup", "setup", "--streams", str(args.debates), "--model", MODEL]
        run([*cmd, "--out", str(setup_file)], env, "live set-up", timeout=900)
        live = json.loads(setup_file.read_text())

        fake = FakeModel(env)
        fake.start()
        cluster_env = {
            "LLM_BACKEND": "openai",
            "OPENAI_BASE_URL": f"{fake.url}/v1",
            "OPENAI_API_KEY": "x",
            # A killed worker's turn is noticed within seconds (production: 30 s, every 10 s).
            "LIVE_TURN_STUCK_SECONDS": "3",
            "LIVE_HEARTBEAT_SECONDS": "1",
            "LIVE_WATCHDOG_SECONDS": "2",
            "LLM_BACKOFF_MS": "100",
        }
        cluster = Cluster(
            database_url=pg.url, redis_url=args.redis_url, env=cluster_env, worker_concurrency=32
        )
        say("starting the cluster: 2 servers behind nginx, 2 Celery workers, beat")
        cluster.start()
        say(f"load: {args.participants} participants and {args.debates} judges while faults are injected")
        out = asyncio.run(load(args, cluster, pg, study, live))
        time.sleep(2)
        answers = check_answers(pg, study["slug"], study["answers_per_participant"])
        turns = check_turns(pg, out["judges"], [s["session_id"] for s in live["streams"]])
        text = report(args, out, answers, turns)
        print()
        print(text)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = RESULTS / f"faults-{stamp}-n{args.participants}-d{args.debates}.json"
        path.write_text(
            json.dumps({"config": vars(args), "answers": answers, "turns": turns, "table": text}, indent=1)
        )
        print(f"\nresults written to {path.relative_to(RESULTS.parent.parent)}")
        return 0
    except (SetupError, ClusterError) as exc:
        print(f"\nbench: cannot run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbench: interrupted", file=sys.stderr)
        return 130
    finally:
        if cluster is not None:
            cluster.stop()
        if fake is not None:
            fake.stop()
        if pg is not None:
            pg.close()


if __name__ == "__main__":
    sys.exit(main())
