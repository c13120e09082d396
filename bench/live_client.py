"""The load client of the live streams benchmark: N judges, each on its own websocket.

Run by bench/live.py as a separate process:

    python -m bench.live_client --url ws://127.0.0.1:P --judges FILE --phase streams|idle

It opens every judge's websocket (/ws/live/<participant token>/) at once and waits for each
one's snapshot, then prints `READY {...}` and waits for a line on stdin.

- streams: on `GO`, every judge asks both debaters a question (`{"type": "ask", "target":
  "both", ...}`, tagged with its session id so every prompt and reply is unique), which
  starts debater A's turn, then B's; the client applies every message like the browser
  (static/js/live.js) and tests/debates/live/test_streaming.py's `Judge` do (snapshot,
  turn.start, turn.delta by offset, turn.end) and records, for every delta, its receive
  time (`time.time()`), offset and length. It ends when every judge has both replies (or
  at the timeout), writes its result as JSON to --out and prints `DONE`.
- idle: the judges stay connected, reading, until `STOP`; then the same.

Like a browser, it sends no pings (the server's own pings are answered) and offers
permessage-deflate. Under uvloop when available.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time

from websockets.asyncio.client import connect

QUESTION = (
    "[session {sid}] Which of your sources is the strongest, and why should I trust it over the other side's?"
)


class Turn:
    __slots__ = (
        "seq",
        "speaker",
        "start_t",
        "attempts",
        "deltas",
        "end_t",
        "text",
        "end_text",
        "gaps",
        "overlaps",
    )

    def __init__(self, seq: int, speaker: str, t: float, attempt: int) -> None:
        self.seq, self.speaker, self.start_t, self.attempts = seq, speaker, t, [attempt]
        self.deltas: list[list] = []  # [receive time, offset, length]
        self.end_t: float | None = None
        self.text = ""
        self.end_text: str | None = None
        self.gaps = 0  # a delta beyond the text so far: something was lost
        self.overlaps = 0  # a delta starting before the end of the text so far: a duplicate

    def as_dict(self) -> dict:
        return {
            "seq": self.seq,
            "speaker": self.speaker,
            "start_t": self.start_t,
            "attempts": self.attempts,
            "deltas": self.deltas,
            "end_t": self.end_t,
            "text": self.text,
            "end_text_matches": self.end_text is not None and self.end_text == self.text,
            "gaps": self.gaps,
            "overlaps": self.overlaps,
        }


class Judge:
    def __init__(self, base: str, info: dict, want_turns: int) -> None:
        self.info = info
        self.sid = info["session_id"]
        self.url = f"{base}/ws/live/{info['token']}/"
        self.want_turns = want_turns
        self.ws = None
        self.error = ""
        self.connect_s: float | None = None
        self.snapshot_seqs: list[int] = []
        self.snapshot_t: float | None = None
        self.trigger_t: float | None = None
        self.turns: dict[int, Turn] = {}
        self.ended: list[int] = []
        self.failed: list[dict] = []
        self.resets: list[dict] = []
        self.orphans = 0  # deltas or ends for a turn whose start was never seen
        self.counts: dict[str, int] = {}
        self.received = 0
        self.bytes = 0
        self.first_t: float | None = None  # first message after the trigger
        self.last_t: float | None = None
        self.has_snapshot = asyncio.Event()
        self.done = asyncio.Event()
        self.reader: asyncio.Task | None = None

    async def open(self, compression: str | None) -> None:
        started = time.perf_counter()
        try:
            self.ws = await connect(
                self.url,
                origin="http://127.0.0.1",
                open_timeout=120,
                ping_interval=None,
                close_timeout=5,
                proxy=None,
                compression=compression,
                max_queue=None,
            )
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            self.error = f"connect: {type(exc).__name__}: {exc}"[:300]
            self.has_snapshot.set()
            self.done.set()
            return
        self.connect_s = time.perf_counter() - started
        self.reader = asyncio.ensure_future(self.read())

    async def read(self) -> None:
        try:
            async for raw in self.ws:
                t = time.time()
                self.received += 1
                self.bytes += len(raw)
                if self.trigger_t is not None:
                    if self.first_t is None:
                        self.first_t = t
                    self.last_t = t
                self.handle(json.loads(raw), t)
        except Exception as exc:  # noqa: BLE001
            self.error = self.error or f"read: {type(exc).__name__}: {exc}"[:300]
        finally:
            if not self.done.is_set() and self.trigger_t is not None and not self.error:
                self.error = f"closed by the server ({self.ws.close_code})"
            self.has_snapshot.set()
            self.done.set()

    def handle(self, m: dict, t: float) -> None:
        kind = m.get("type", "?")
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "snapshot":
            self.snapshot_seqs = [turn["seq"] for turn in m["turns"]]
            self.snapshot_t = t
            self.has_snapshot.set()
        elif kind == "turn.start":
            turn = self.turns.get(m["seq"])
            if turn is None:
                self.turns[m["seq"]] = Turn(m["seq"], m["speaker"], t, m["attempt"])
            else:  # a new attempt: the browser starts the text again
                turn.attempts.append(m["attempt"])
                turn.text = ""
        elif kind == "turn.delta":
            turn = self.turns.get(m["seq"])
            if turn is None:
                self.orphans += 1
                return
            have, offset, text = len(turn.text), m["offset"], m["text"]
            turn.deltas.append([t, offset, len(text)])
            if offset > have:
                turn.gaps += 1
                return
            if offset < have:
                turn.overlaps += 1
            turn.text += text[have - offset :]
        elif kind == "turn.end":
            turn = self.turns.get(m["seq"])
            if turn is None:
                self.orphans += 1
                return
            turn.end_t = t
            turn.end_text = m["text"]
            self.ended.append(m["seq"])
            self._check_done()
        elif kind == "turn.failed":
            self.failed.append({"seq": m["seq"], "t": t, "message": m.get("message", "")})
            self.done.set()
        elif kind == "turn.reset":
            self.resets.append({"seq": m["seq"], "t": t, "attempt": m.get("attempt")})

    def _check_done(self) -> None:
        asked_at = max(self.snapshot_seqs or [0]) + 1  # the judge's own turn
        if len([s for s in self.ended if s > asked_at]) >= self.want_turns:
            self.done.set()

    async def ask(self) -> None:
        message = json.dumps({"type": "ask", "target": "both", "text": QUESTION.format(sid=self.sid)})
        self.trigger_t = time.time()
        await self.ws.send(message)

    async def close(self) -> None:
        if self.ws is not None:
            try:
                await self.ws.close()
            except Exception:  # noqa: BLE001, S110 - closing anyway
                pass
        if self.reader is not None:
            self.reader.cancel()

    def as_dict(self) -> dict:
        return {
            "session_id": self.sid,
            "error": self.error,
            "connect_s": self.connect_s,
            "snapshot_seqs": self.snapshot_seqs,
            "trigger_t": self.trigger_t,
            "first_t": self.first_t,
            "last_t": self.last_t,
            "turns": [turn.as_dict() for turn in self.turns.values()],
            "failed": self.failed,
            "resets": self.resets,
            "orphans": self.orphans,
            "counts": self.counts,
            "received": self.received,
            "bytes": self.bytes,
        }


async def stdin_line() -> str:
    return (await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)).strip()


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(args) -> dict:
    infos = json.loads(open(args.judges).read())
    judges = [Judge(args.url, info, args.turns) for info in infos]
    compression = None if args.no_compression else "deflate"
    limit = asyncio.Semaphore(args.connect_concurrency)

    async def open_one(judge: Judge) -> None:
        async with limit:
            await judge.open(compression)
            try:
                await asyncio.wait_for(judge.has_snapshot.wait(), 120)
            except TimeoutError:
                judge.error = judge.error or "no snapshot within 120 s"

    started = time.time()
    await asyncio.gather(*(open_one(j) for j in judges))
    connected = [j for j in judges if not j.error and j.snapshot_t is not None]
    connect_times = sorted(j.connect_s for j in connected)
    ready = {
        "judges": len(judges),
        "connected": len(connected),
        "connect_wall_s": time.time() - started,
        "connect_p50_s": connect_times[len(connect_times) // 2] if connect_times else None,
        "connect_max_s": connect_times[-1] if connect_times else None,
        "errors": [j.error for j in judges if j.error][:5],
    }
    print("READY " + json.dumps(ready), flush=True)
    command = await stdin_line()
    cpu_before = cpu_s()
    go_t = time.time()
    if args.phase == "streams" and command == "GO":
        for judge in connected:
            await judge.ask()
        try:
            await asyncio.wait_for(asyncio.gather(*(j.done.wait() for j in connected)), args.timeout)
            timed_out = False
        except TimeoutError:
            timed_out = True
    else:  # idle: read until told to stop
        while command not in ("STOP", ""):
            command = await stdin_line()
        timed_out = False
    end_t = time.time()
    cpu_after = cpu_s()
    await asyncio.gather(*(j.close() for j in judges))
    return {
        "phase": args.phase,
        "ready": ready,
        "go_t": go_t,
        "end_t": end_t,
        "timed_out": timed_out,
        "client_cpu_s": cpu_after - cpu_before,
        "judges": [j.as_dict() for j in judges] if args.phase == "streams" else [],
        # After the snapshot each judge got on connecting: what the idle judges were sent.
        "idle_received": sum(j.received - j.counts.get("snapshot", 0) for j in judges)
        if args.phase == "idle"
        else None,
        "idle_counts": _merge([j.counts for j in judges]) if args.phase == "idle" else None,
        "errors": [j.error for j in judges if j.error][:10],
        "error_count": sum(1 for j in judges if j.error),
    }


def _merge(counts: list[dict]) -> dict:
    total: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True, help="ws://host:port")
    parser.add_argument("--judges", required=True, help="JSON file: [{token, session_id}, ...]")
    parser.add_argument("--phase", choices=("streams", "idle"), default="streams")
    parser.add_argument("--out", required=True, help="where to write the result (JSON)")
    parser.add_argument("--turns", type=int, default=2, help="AI turns each question starts (A and B)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for every reply")
    parser.add_argument("--connect-concurrency", type=int, default=100, help="handshakes in flight at once")
    parser.add_argument("--no-compression", action="store_true", help="do not offer permessage-deflate")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    try:
        import uvloop
    except ImportError:
        uvloop = None
    result = uvloop.run(main(arguments)) if uvloop else asyncio.run(main(arguments))
    # The result can be megabytes: to a file (a pipe the event loop may have left
    # non-blocking would take a partial write), then one short line for the caller.
    with open(arguments.out, "w") as out:
        json.dump(result, out)
    print("DONE", flush=True)
