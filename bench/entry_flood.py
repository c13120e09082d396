"""Entry flood benchmark: one client filling a study with made-up PROLIFIC_PIDs, against real
Prolific arrivals from many addresses, with the abuse limits off and on, in one run.

    .venv/bin/python -m bench.entry_flood [--places 60] [--flood-seconds 10] [--arrivals 300]

Sets up a fresh PostgreSQL database with copies of the demo's design-A study (a place, a
dialogue, is taken when the story page is served) and serves Rostrum twice as production
does (uvicorn, one worker per core, DEBUG off, Redis for the limits' counters shared by the
workers, behind a trusted proxy: `TRUSTED_PROXIES=127.0.0.1`, with uvicorn's own
proxy-header handling off so that Rostrum's setting decides): one server with the limits
off (`ENTRY_RATE_LIMITS=off PLACE_RATE_LIMITS=off`), one with the defaults. Then:

1. **Flood**, on each server in turn (the other idle): one address (no X-Forwarded-For),
   `--flood-concurrency` connections, each entering with made-up ids and walking consent →
   instructions → the story, for `--flood-seconds` or until the study is full. Places
   taken per second.
2. **Arrivals**, `--rounds` times: `--arrivals` participants to each server at the same
   moment, each from its own address (X-Forwarded-For through the proxy), each walking the
   same pages to its place. Both servers share the machine's noise (other processes), so
   their figures compare: participants placed per second, page latency, refusals, server
   CPU per participant.

Places are counted in the database afterwards. Exits non-zero only when it cannot run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import time
from datetime import datetime
from urllib.parse import urlencode, urlsplit

from bench.arrivals import (
    PYTHON,
    RESULTS,
    ROOT,
    Postgres,
    Server,
    SetupError,
    machine_cpu,
    percentile,
    run,
    say,
)
from bench.client import Connection
from devtools.formparse import default_answers, parse_step

STORY = "The story"


def slugs(rounds: int) -> list[str]:
    """The studies: one flooded per mode, and one per mode and round for the arrivals."""
    return ["flood-off", "flood-on"] + [
        f"arrivals-{mode}-{k}" for k in range(rounds) for mode in ("off", "on")
    ]


# --- The study (run as `python -m bench.entry_flood --setup PLACES ARRIVALS`) -------------------


def setup_studies(places: int, arrivals: int, rounds: int) -> list[str]:
    import django

    django.setup()
    from debates.demo import loader

    dialogues = 10  # the demo's
    for slug in slugs(rounds):
        wanted = places if slug.startswith("flood") else arrivals + dialogues
        loader.mystery_study(slug=slug, target_per_item=-(-wanted // dialogues))
    return slugs(rounds)


# --- The client ------------------------------------------------------------------------------


class Browser(Connection):
    """bench.client's keep-alive connection with a cookie jar, plus headers of our own (the
    proxy's X-Forwarded-For)."""

    def __init__(self, port: int, latencies: list, headers: dict[str, str]) -> None:
        super().__init__("127.0.0.1", port, latencies, {})
        self.extra = headers

    async def request(self, method: str, target: str, kind: str, form: dict | None = None):
        body = urlencode(form).encode() if form is not None else b""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept: text/html"]
        lines += [f"{k}: {v}" for k, v in self.extra.items()]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if method == "POST":
            lines += [
                f"Origin: http://{self.host}:{self.port}",
                "Content-Type: application/x-www-form-urlencoded",
                f"Content-Length: {len(body)}",
            ]
        if self.writer is None:
            await self.open()
        started = time.perf_counter()
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        response = await self._read_response(method)
        self.latencies.append(time.perf_counter() - started)
        self.requests += 1
        if response.header("connection").lower() == "close":
            self.close()
        for key, value in response.headers:
            if key == "set-cookie":
                name, _, cookie = value.split(";", 1)[0].partition("=")
                self.cookies[name.strip()] = cookie.strip()
        return response


async def to_place(browser: Browser, slug: str) -> str:
    """Enter with made-up ids and walk to the story: "placed", "refused" (429), "full", or an
    error."""
    ids = [secrets.token_hex(12) for _ in range(3)]
    link = f"/s/{slug}/?PROLIFIC_PID={ids[0]}&STUDY_ID={ids[1]}&SESSION_ID={ids[2]}"
    entry = await browser.request("GET", link, "entry")
    if entry.status != 302:
        return "refused" if entry.status == 429 else f"entry {entry.status}"
    target = urlsplit(entry.header("location")).path
    for _ in range(4):
        page = await browser.request("GET", target, "page")
        if page.status == 429:
            return "refused"
        if page.status != 200:
            return f"page {page.status}"
        form = parse_step(page.body.decode())
        if form.title == STORY:
            return "placed"
        if not form.position:
            return "full" if "full" in page.body.decode() else "no form"
        answer = await browser.request("POST", target, "answer", default_answers(form))
        if answer.status != 303:
            return f"answer {answer.status}"
    return "lost"


async def flood(port: int, slug: str, concurrency: int, seconds: float) -> dict:
    latencies: list[float] = []
    outcomes: dict[str, int] = {}
    placed_at: list[float] = []
    started = time.perf_counter()
    deadline = started + seconds
    full = asyncio.Event()

    async def worker() -> None:
        browser = Browser(port, latencies, {})
        try:
            while time.perf_counter() < deadline and not full.is_set():
                browser.cookies.clear()
                outcome = await to_place(browser, slug)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                if outcome == "placed":
                    placed_at.append(time.perf_counter() - started)
                elif outcome == "full":
                    full.set()
        finally:
            browser.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "outcomes": outcomes,
        "placed": len(placed_at),
        "filled_after_s": max(placed_at) if full.is_set() and placed_at else None,
        "requests": len(latencies),
        "latency_p95_ms": (percentile(latencies, 95) or 0) * 1000,
    }


async def arrivals(port: int, slug: str, n: int, first_address: int = 0) -> dict:
    latencies: list[float] = []
    outcomes: dict[str, int] = {}
    durations: list[float] = []
    started = time.perf_counter()

    async def participant(i: int) -> None:
        a = first_address + i
        forwarded = f"198.{18 + a // 62500}.{a // 250 % 250}.{a % 250 + 1}"  # its own address, via the proxy
        browser = Browser(port, latencies, {"X-Forwarded-For": forwarded})
        t0 = time.perf_counter()
        try:
            outcome = await to_place(browser, slug)
        except Exception as exc:  # noqa: BLE001 - counted
            outcome = type(exc).__name__
        finally:
            browser.close()
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome == "placed":
            durations.append(time.perf_counter() - t0)

    await asyncio.gather(*(participant(i) for i in range(n)))
    wall = time.perf_counter() - started
    placed = outcomes.get("placed", 0)
    return {
        "wall_s": wall,
        "outcomes": outcomes,
        "placed": placed,
        "placed_per_s": placed / wall if wall else None,
        "requests": len(latencies),
        "latency_ms": {q: (percentile(latencies, q) or 0) * 1000 for q in (50, 95, 99)},
        "time_to_place_p95_s": percentile(durations, 95),
    }


# --- The run ---------------------------------------------------------------------------------


def measured(servers: list[Server], load) -> tuple:
    """Run a load phase (a coroutine); the CPU each server used, and the CPU nobody of ours
    used (other processes on the machine: noise in rates and latencies, less in CPU)."""
    before = ([x.cpu() for x in servers], machine_cpu(), resource.getrusage(resource.RUSAGE_SELF))
    figures = asyncio.run(load)
    after = ([x.cpu() for x in servers], machine_cpu(), resource.getrusage(resource.RUSAGE_SELF))
    client = (after[2].ru_utime + after[2].ru_stime) - (before[2].ru_utime + before[2].ru_stime)
    cpu = [b - a for a, b in zip(before[0], after[0])]
    return figures, cpu, (after[1] - before[1]) - sum(cpu) - client


async def both(*loads) -> list:
    return await asyncio.gather(*loads)


def places_in_db(pg: Postgres, slug: str) -> int:
    with pg.psycopg.connect(pg.url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM debates_dialogueassignment a "
            "JOIN debates_studydialogue s ON s.id = a.study_dialogue_id "
            "JOIN studies_study st ON st.id = s.study_id WHERE st.slug = %s",
            (slug,),
        ).fetchone()[0]


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def report(args, figures: dict, totals: dict) -> str:
    floods, rounds = figures["flood"], figures["arrivals"]

    def flood_rate(x: dict) -> float:  # until the study was full, else over the whole flood
        return x["placed"] / (x["filled_after_s"] or x["wall_s"])

    def fill(x: dict) -> str:
        if x["filled_after_s"]:
            return f"full after {x['filled_after_s']:.1f} s"
        return f"{x['placed']}/{totals['flood']} in {x['wall_s']:.0f} s"

    def cpu_ms(x: dict) -> float:
        return 1000 * x["server_cpu_s"] / max(x["placed"], 1)

    def row(label: str, off: str, on: str) -> tuple[str, str, str]:
        return label, off, on

    rows = [
        ("", "limits off", "limits on"),
        row("FLOOD: one address, alone on its server", "", ""),
        row("places taken per second", *(f"{flood_rate(floods[m]):.2f}" for m in ("off", "on"))),
        row("the study", *(fill(floods[m]) for m in ("off", "on"))),
        row("places in the database", *(str(floods[m]["db_places"]) for m in ("off", "on"))),
        row("requests refused (429)", *(str(floods[m]["outcomes"].get("refused", 0)) for m in ("off", "on"))),
    ]
    for k, pair in enumerate(rounds):
        rows += [
            row(f"ARRIVALS round {k + 1}: {args.arrivals} to each server at once", "", ""),
            row(
                "placed / refused",
                *(f"{pair[m]['placed']} / {pair[m]['outcomes'].get('refused', 0)}" for m in ("off", "on")),
            ),
            row("participants placed per second", *(f"{pair[m]['placed_per_s']:.1f}" for m in ("off", "on"))),
            row(
                "page latency p50 / p95",
                *(
                    f"{pair[m]['latency_ms'][50]:.0f} / {pair[m]['latency_ms'][95]:.0f} ms"
                    for m in ("off", "on")
                ),
            ),
            row("server CPU per placed participant", *(f"{cpu_ms(pair[m]):.1f} ms" for m in ("off", "on"))),
            row("other processes' CPU (noise)", f"{pair['other_cpu_s']:.1f} s", ""),
        ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        f"Rostrum entry flood: two servers of {args.workers} uvicorn workers (limits off, on), "
        f"{os.cpu_count()} cores; the flood: {args.flood_concurrency} connections, {args.flood_seconds:g} s, "
        f"{totals['flood']} places",
        "",
    ]
    for r in rows:
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))

    def mean(mode: str, value) -> float:
        return statistics.fmean(value(pair[mode]) for pair in rounds)

    rate = {m: mean(m, lambda x: x["placed_per_s"]) for m in ("off", "on")}
    p95 = {m: mean(m, lambda x: x["latency_ms"][95]) for m in ("off", "on")}
    cpu = {m: mean(m, cpu_ms) for m in ("off", "on")}
    lines += [
        "",
        f"Flood, places taken per second: {flood_rate(floods['off']):.2f} limits off, "
        f"{flood_rate(floods['on']):.2f} limits on.",
        f"Real arrivals (mean of {len(rounds)} rounds), placed per second: {rate['off']:.1f} off, "
        f"{rate['on']:.1f} on ({rate['on'] / rate['off']:.2f}x); p95 page latency {p95['off']:.0f} / "
        f"{p95['on']:.0f} ms; server CPU per participant {cpu['off']:.1f} / {cpu['on']:.1f} ms.",
    ]
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--places", type=int, default=60, help="places in the flooded study")
    parser.add_argument("--flood-seconds", type=float, default=10.0)
    parser.add_argument("--flood-concurrency", type=int, default=16)
    parser.add_argument("--arrivals", type=int, default=300)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--db-name", default="rostrum_bench_flood")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/5", help="this database is flushed")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of arrivals to both servers at once")
    parser.add_argument("--setup", nargs=3, type=int, help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.setup:
        print(json.dumps(setup_studies(*args.setup)))
        return 0
    RESULTS.mkdir(exist_ok=True)
    static_root = tempfile.mkdtemp(prefix="rostrum-bench-static-")
    servers: dict[str, Server] = {}
    pg = None

    def terminate(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, terminate)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        pg = Postgres(args.pg, args.db_name)
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=pg.url,
            REDIS_URL=args.redis_url,
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(48),
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="0",
            STATIC_ROOT=static_root,
            PYTHONUNBUFFERED="1",
            TRUSTED_PROXIES="127.0.0.1",
        )
        say(f"recreating database {args.db_name}")
        pg.recreate()
        run([PYTHON, "manage.py", "migrate", "--noinput"], env, "migrate")
        run([PYTHON, "manage.py", "collectstatic", "--noinput"], env, "collectstatic")
        setup = [PYTHON, "-m", "bench.entry_flood", "--setup", str(args.places), str(args.arrivals)]
        setup.append(str(args.rounds))
        say("four copies of the demo's design-A study")
        run(setup, env, "study set-up")
        totals = {"flood": -(-args.places // 10) * 10}
        flush_redis(args.redis_url)
        for mode in ("off", "on"):
            limits = {"ENTRY_RATE_LIMITS": "off", "PLACE_RATE_LIMITS": "off"} if mode == "off" else {}
            server = Server(
                f"flood-{mode}", "config.asgi:application", args.workers, {**env, **limits}, "/healthz"
            )
            server.cmd.append("--no-proxy-headers")  # the proxy header is Rostrum's to judge
            say(f"limits {mode}: starting {' '.join(server.cmd[1:])}")
            server.start()
            servers[mode] = server
        figures: dict = {"flood": {}, "arrivals": []}
        for mode, server in servers.items():
            say(f"limits {mode}: one address floods flood-{mode} for {args.flood_seconds:g} s")
            load = flood(server.port, f"flood-{mode}", args.flood_concurrency, args.flood_seconds)
            flooded, cpu, other = measured([server], load)
            flooded.update(db_places=places_in_db(pg, f"flood-{mode}"), other_cpu_s=other)
            figures["flood"][mode] = flooded
        for k in range(args.rounds):
            say(f"round {k + 1}: {args.arrivals} arrivals to each server at once, each from its own address")
            loads = [
                arrivals(server.port, f"arrivals-{mode}-{k}", args.arrivals, first_address=k * args.arrivals)
                for mode, server in servers.items()
            ]
            crowds, cpu, other = measured(list(servers.values()), both(*loads))
            pair = {}
            for (mode, _), crowd, used in zip(servers.items(), crowds, cpu):
                crowd.update(db_places=places_in_db(pg, f"arrivals-{mode}-{k}"), server_cpu_s=used)
                pair[mode] = crowd
            pair["other_cpu_s"] = other
            figures["arrivals"].append(pair)
        text = report(args, figures, totals)
        print()
        print(text)
        out = RESULTS / f"entry-flood-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps({"config": vars(args), "figures": figures, "table": text}, indent=2) + "\n")
        print(f"\nresults written to {out.relative_to(ROOT)}")
        return 0
    except SetupError as exc:
        print(f"\nbench: cannot run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nbench: interrupted", file=sys.stderr)
        return 130
    finally:
        for server in servers.values():
            server.stop()
        if pg is not None:
            pg.close()
        shutil.rmtree(static_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
