"""The load client of the persuasion benchmark: N participants, each on its own websocket,
each debating the AI agent for a few rounds; and the baseline, the same number of streams
read straight from the model server.

Run by bench/persuasion.py as a separate process:

    python -m bench.persuasion_client --url ws://127.0.0.1:P --participants FILE --rounds R --out FILE
    python -m bench.persuasion_client --baseline http://127.0.0.1:M --streams N --model MODEL --out FILE

Dialogues: every participant's websocket (/ws/persuasion/<token>/) is opened and its
snapshot received (the participant, on the pro side, is due to write); then `READY {...}`
is printed and a line awaited on stdin. On `GO` every participant sends its first turn at
once (`{"type": "say", ...}`, tagged with its dialogue id so every prompt is unique); the
turn is read by the classifier, then the agent's reply streams (`turn.start`, `turn.delta`
by offset, `turn.end`, as static/js/persuasion.js applies them), is read in its turn, and
the snapshot that gives the participant the floor again triggers the next turn, until
`--rounds` agent replies have ended. Every delta's receive time (`time.time()`), offset and
length is recorded, and for each own turn the time from sending it to the snapshot that
shows it read. The result goes to --out as JSON, then `DONE` is printed.

Baseline: `--streams` streaming requests sent at once straight to the model server with
the agent's model (plain HTTP/1.1, server-sent events), recording when each token arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time

from websockets.asyncio.client import connect

TURNS = (
    "Public investment builds the roads and railways that private firms will not build.",
    "Markets underinvest in research that benefits everyone.",
    "Public money funded the research behind most modern medicines.",
    "Stable public demand lets firms plan their investment for years ahead.",
    "Countries with an industrial policy grew faster in the last decades.",
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
        self.gaps = 0
        self.overlaps = 0

    def as_dict(self) -> dict:
        return {
            "seq": self.seq,
            "speaker": self.speaker,
            "start_t": self.start_t,
            "attempts": self.attempts,
            "deltas": self.deltas,
            "end_t": self.end_t,
            "text": self.text,
            "end_text": self.end_text,
            "gaps": self.gaps,
            "overlaps": self.overlaps,
        }


class Participant:
    def __init__(self, base: str, info: dict, rounds: int) -> None:
        self.info = info
        self.did = info["dialogue_id"]
        self.url = f"{base}/ws/persuasion/{info['token']}/"
        self.rounds = rounds
        self.ws = None
        self.error = ""
        self.connect_s: float | None = None
        self.side = ""
        self.my_turn = False
        self.go = False
        self.said: list[dict] = []  # {"t": sent, "read_t": the snapshot showing it read, "seq"}
        self.turns: dict[int, Turn] = {}
        self.agent_ended: list[int] = []
        self.resets = 0
        self.errors: list[str] = []
        self.orphans = 0
        self.counts: dict[str, int] = {}
        self.received = 0
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
                await self.handle(json.loads(raw), t)
        except Exception as exc:  # noqa: BLE001
            self.error = self.error or f"read: {type(exc).__name__}: {exc}"[:300]
        finally:
            if not self.done.is_set() and self.go and not self.error:
                self.error = f"closed by the server ({self.ws.close_code})"
            self.has_snapshot.set()
            self.done.set()

    async def handle(self, m: dict, t: float) -> None:
        kind = m.get("type", "?")
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "snapshot":
            self.side = m["side"]
            self.my_turn = m["my_turn"]
            for said in self.said:
                if said["read_t"] is None:
                    own = [x for x in m["turns"] if x["speaker"] == self.side and x["status"] == "done"]
                    if len(own) >= said["n"]:
                        said["read_t"], said["seq"] = t, own[said["n"] - 1]["seq"]
            self.has_snapshot.set()
            if m["ended"]:
                self.error = self.error or f"the dialogue ended: {m['outcome']}"
                self.done.set()
            elif self.go and self.my_turn and len(self.said) < self.rounds and self._answered():
                await self.say()
        elif kind == "turn.start":
            turn = self.turns.get(m["seq"])
            if turn is None:
                self.turns[m["seq"]] = Turn(m["seq"], m["speaker"], t, m["attempt"])
            else:
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
                return  # a participant's own turn ends too (after it is read): not streamed
            turn.end_t = t
            turn.end_text = m["text"]
            self.agent_ended.append(m["seq"])
            if len(self.agent_ended) >= self.rounds:
                self.done.set()
        elif kind == "turn.reset":
            self.resets += 1
        elif kind == "error":
            self.errors.append(m.get("message", ""))

    def _answered(self) -> bool:
        """Our last turn has had its agent reply (no double send on a repeated snapshot)."""
        return len(self.agent_ended) >= len(self.said)

    async def say(self) -> None:
        n = len(self.said)
        text = f"In dialogue {self.did}, round {n + 1}: {TURNS[n % len(TURNS)]}"
        self.said.append({"n": n + 1, "t": time.time(), "read_t": None, "seq": None})
        self.my_turn = False
        await self.ws.send(json.dumps({"type": "say", "text": text}))

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
            "dialogue_id": self.did,
            "error": self.error,
            "errors": self.errors[:5],
            "connect_s": self.connect_s,
            "said": self.said,
            "turns": [turn.as_dict() for turn in self.turns.values()],
            "resets": self.resets,
            "orphans": self.orphans,
            "counts": self.counts,
            "received": self.received,
        }


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def stdin_line() -> str:
    return (await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)).strip()


async def dialogues(args) -> dict:
    infos = json.loads(open(args.participants).read())
    people = [Participant(args.url, info, args.rounds) for info in infos]
    limit = asyncio.Semaphore(100)

    async def open_one(p: Participant) -> None:
        async with limit:
            await p.open(None if args.no_compression else "deflate")
            try:
                await asyncio.wait_for(p.has_snapshot.wait(), 120)
            except TimeoutError:
                p.error = p.error or "no snapshot within 120 s"

    started = time.time()
    await asyncio.gather(*(open_one(p) for p in people))
    connected = [p for p in people if not p.error and p.has_snapshot.is_set() and p.my_turn]
    ready = {
        "participants": len(people),
        "connected": len(connected),
        "connect_wall_s": time.time() - started,
        "errors": [p.error or "not their turn" for p in people if p not in connected][:5],
    }
    print("READY " + json.dumps(ready), flush=True)
    await stdin_line()
    cpu_before = cpu_s()
    go_t = time.time()
    for p in connected:
        p.go = True
        await p.say()
    try:
        await asyncio.wait_for(asyncio.gather(*(p.done.wait() for p in connected)), args.timeout)
        timed_out = False
    except TimeoutError:
        timed_out = True
    await asyncio.sleep(0.5)  # the last agent turns' readings reach their snapshots
    end_t = time.time()
    cpu_after = cpu_s()
    await asyncio.gather(*(p.close() for p in people))
    return {
        "ready": ready,
        "go_t": go_t,
        "end_t": end_t,
        "timed_out": timed_out,
        "client_cpu_s": cpu_after - cpu_before,
        "participants": [p.as_dict() for p in people],
        "error_count": sum(1 for p in people if p.error),
        "errors": [p.error for p in people if p.error][:10],
    }


async def baseline(args) -> dict:
    """`--streams` streams read straight from the model server: what the model server, the
    loopback and a client cost without Rostrum in between."""
    host, port = args.baseline.removeprefix("http://").split(":")

    async def one(i: int) -> dict:
        messages = [{"role": "user", "content": f"baseline stream {i} {time.time()}"}]
        body = json.dumps({"model": args.model, "messages": messages, "stream": True}).encode()
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: model\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        received: list[float] = []
        buffer = b""
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            t = time.time()
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                line = event.split(b"data: ", 1)[-1]
                if line.startswith(b"{") and b'"content":"' in line and b'"content":""' not in line:
                    received.append(t)  # a token (the role chunk has empty content)
        writer.close()
        from devtools.fakellm import messages_digest

        return {"messages_sha256": messages_digest(messages), "received": received}

    cpu_before = cpu_s()
    go_t = time.time()
    streams = await asyncio.gather(*(one(i) for i in range(args.streams)))
    return {"go_t": go_t, "end_t": time.time(), "client_cpu_s": cpu_s() - cpu_before, "streams": streams}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="ws://host:port of Rostrum")
    parser.add_argument("--participants", help="JSON file: [{token, dialogue_id}, ...]")
    parser.add_argument("--rounds", type=int, default=2, help="agent replies each participant waits for")
    parser.add_argument("--baseline", help="http://host:port of the model server: run the baseline instead")
    parser.add_argument("--streams", type=int, default=50, help="baseline: streams at once")
    parser.add_argument("--model", default="", help="baseline: the agent's model string")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--no-compression", action="store_true")
    parser.add_argument("--out", required=True)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    try:
        import uvloop
    except ImportError:
        uvloop = None
    work = baseline(arguments) if arguments.baseline else dialogues(arguments)
    result = uvloop.run(work) if uvloop else asyncio.run(work)
    with open(arguments.out, "w") as out:
        json.dump(result, out)
    print("DONE", flush=True)
