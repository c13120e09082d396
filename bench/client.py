"""The load client: N participants at once, each on its own HTTP/1.1 keep-alive connection.

Run by bench/arrivals.py as a separate process (`python -m bench.client`). It prints READY,
waits for GO on stdin (so the caller can read the CPU counters right before the load), runs
every participant to the end, and writes the figures as JSON to `--result-file` and prints
DONE (without `--result-file`, one JSON line on stdout).

A deliberately small client on raw asyncio streams (under uvloop when available): it shares
the machine's cores with the server, so it must stay cheap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import resource
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from devtools.formparse import default_answers, parse_step

MAX_STEPS = 30
ERROR_SAMPLES = 12


class HTTPError(Exception):
    pass


# oTree's pages (the peer): the form's inputs and text areas, read with two expressions.
_OTREE_FORM = re.compile(r'<form class="otree-form".*?</form>', re.DOTALL)
_OTREE_FIELD = re.compile(r"<(input|textarea)\b([^>]*)>")
_ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')
TEXT_ANSWER = "I weighed the evidence each side cited and the timeline."


def otree_answers(page: str) -> dict[str, str] | None:
    """A valid answer for every field of an oTree page, as `default_answers` gives Rostrum's
    (first option, a number in range, the same text); None when the page has no form (every
    oTree page has one, the last page's without fields)."""
    form = _OTREE_FORM.search(page)
    if form is None:
        return None
    data: dict[str, str] = {}
    for tag, attributes in _OTREE_FIELD.findall(form.group(0)):
        a = dict(_ATTRIBUTE.findall(attributes))
        name, kind = a.get("name"), a.get("type", "text")
        if not name or name in data:
            continue
        if tag == "textarea" or kind == "text":
            data[name] = TEXT_ANSWER
        elif kind == "number":
            low, high = int(a.get("min") or 0), int(a.get("max") or 40)
            data[name] = str(max(low, min(high, 40)))
        elif kind in ("radio", "hidden"):
            data[name] = a.get("value", "")
    return data


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> str:
        for key, value in self.headers:
            if key == name:
                return value
        return ""


class Connection:
    """One keep-alive HTTP/1.1 connection with a cookie jar (the participant's browser)."""

    def __init__(
        self, host: str, port: int, latencies: list[float], kind_latencies: dict, forwarded_for: str = ""
    ) -> None:
        self.host, self.port = host, port
        self.forwarded_for = forwarded_for  # the client address a trusted proxy would report
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.cookies: dict[str, str] = {}
        self.latencies = latencies
        self.kind_latencies = kind_latencies
        self.requests = 0
        self.reconnects = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def request(self, method: str, target: str, kind: str, form: dict | None = None) -> Response:
        body = urlencode(form).encode() if form is not None else b""
        lines = [
            f"{method} {target} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "User-Agent: rostrum-bench/1",
            "Accept: text/html",
        ]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if self.forwarded_for:
            lines.append(f"X-Forwarded-For: {self.forwarded_for}")
        if method == "POST":
            lines += [
                f"Origin: http://{self.host}:{self.port}",
                "Content-Type: application/x-www-form-urlencoded",
                f"Content-Length: {len(body)}",
            ]
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        for attempt in (1, 2):
            if self.writer is None:
                await self.open()
            started = time.perf_counter()
            try:
                self.writer.write(raw)
                response = await self._read_response(method)
            except (ConnectionResetError, BrokenPipeError, _IdleClosed):
                # The server closed the idle keep-alive connection before reading the request
                # (uvicorn's keep-alive timeout): reconnect and send it again, once.
                self.close()
                if attempt == 2:
                    raise
                self.reconnects += 1
                continue
            elapsed = time.perf_counter() - started
            self.latencies.append(elapsed)
            self.kind_latencies.setdefault(kind, []).append(elapsed)
            self.requests += 1
            if response.header("connection").lower() == "close":
                self.close()
            for key, value in response.headers:
                if key == "set-cookie":
                    pair = value.split(";", 1)[0]
                    name, _, cookie = pair.partition("=")
                    self.cookies[name.strip()] = cookie.strip()
            return response
        raise AssertionError("unreachable")

    async def _read_response(self, method: str) -> Response:
        reader = self.reader
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise _IdleClosed() from None
            raise HTTPError("connection closed in the response head") from None
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = []
        for line in lines[1:]:
            if line:
                key, _, value = line.partition(":")
                headers.append((key.strip().lower(), value.strip()))
        response = Response(status, headers, b"")
        length = response.header("content-length")
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return response
        if length:
            response.body = await reader.readexactly(int(length))
        elif response.header("transfer-encoding").lower() == "chunked":
            chunks = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")  # no trailers expected
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            response.body = b"".join(chunks)
        else:
            response.body = await reader.read()
            self.close()
        return response


class _IdleClosed(Exception):
    pass


class Run:
    def __init__(self, args) -> None:
        self.args = args
        self.latencies: list[float] = []
        self.kind_latencies: dict[str, list[float]] = {}
        self.completed = 0
        self.errors = 0
        self.error_kinds: dict[str, int] = {}
        self.error_samples: list[str] = []
        self.requests = 0
        self.reconnects = 0
        self.durations: list[float] = []
        self.rng = random.Random(args.seed)

    def error(self, kind: str, detail: str) -> None:
        self.errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
        # A few samples per kind of error, the first ones seen.
        same = sum(1 for sample in self.error_samples if sample.startswith(f"{kind}: "))
        if same < 2 and len(self.error_samples) < ERROR_SAMPLES:
            self.error_samples.append(f"{kind}: {detail}"[:400])

    async def think(self) -> None:
        if self.args.think_ms > 0:
            # Uniform between half and one and a half times the mean: participants drift apart.
            await asyncio.sleep(self.args.think_ms * self.rng.uniform(0.5, 1.5) / 1000)

    async def participant(self, index: int) -> None:
        # Each participant from an address of its own, as Prolific's arrivals are: the server
        # trusts the loopback "proxy" (TRUSTED_PROXIES), so the per-address limits apply as in
        # production behind nginx.
        address = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
        conn = Connection(self.args.host, self.args.port, self.latencies, self.kind_latencies, address)
        started = time.perf_counter()
        try:
            walk = {"rostrum": self.rostrum, "baseline": self.baseline, "otree": self.otree}[self.args.mode]
            ok = await walk(conn)
            if ok:
                self.completed += 1
                self.durations.append(time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - every failure is a counted error
            self.error("exception", f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
            self.requests += conn.requests
            self.reconnects += conn.reconnects

    async def rostrum(self, conn: Connection) -> bool:
        ids = [secrets.token_hex(12) for _ in range(3)]
        entry = f"/s/{self.args.slug}/?PROLIFIC_PID={ids[0]}&STUDY_ID={ids[1]}&SESSION_ID={ids[2]}"
        response = await conn.request("GET", entry, "entry")
        if response.status != 302:
            self.error(f"entry {response.status}", response.body[:200].decode(errors="replace"))
            return False
        url = urlsplit(response.header("location"))
        target = url.path + (f"?{url.query}" if url.query else "")
        for _ in range(MAX_STEPS):
            page = await conn.request("GET", target, "step GET")
            if page.status != 200:
                self.error(f"step GET {page.status}", page.body[:200].decode(errors="replace"))
                return False
            form = parse_step(page.body.decode())
            if not form.position:
                self.error("no form", f"no step form on {target}")
                return False
            await self.think()
            answer = await conn.request("POST", target, "step POST", default_answers(form))
            if answer.status != 303:
                if answer.status == 200:  # the form came back with errors
                    detail = f"{form.title}: {parse_step(answer.body.decode()).errors}"
                else:
                    detail = answer.body[:200].decode(errors="replace")
                self.error(f"step POST {answer.status}", detail)
                return False
            location = answer.header("location")
            if location.startswith(self.args.exit_prefix):
                code = location[len(self.args.exit_prefix) :]
                if code != self.args.code:
                    self.error("wrong code", f"{code!r} instead of {self.args.code!r}")
                    return False
                return True
            if not location.startswith("/"):
                self.error("unexpected redirect", location)
                return False
            target = location
        self.error("too many steps", target)
        return False

    async def otree(self, conn: Connection) -> bool:
        """The peer: oTree's session-wide link with the PROLIFIC_PID as participant label,
        its two redirects, then GET + POST per form page until the last page, which must link
        to Prolific with the completion code."""
        target = f"{self.args.join}?participant_label={secrets.token_hex(12)}"
        for kind, expected in (("entry", (302,)), ("entry", (302, 307))):
            response = await conn.request("GET", target, kind)
            if response.status not in expected:
                self.error(f"{kind} {response.status}", response.body[:200].decode(errors="replace"))
                return False
            target = urlsplit(response.header("location")).path
        for _ in range(MAX_STEPS):
            page = await conn.request("GET", target, "step GET")
            if page.status != 200:
                self.error(f"step GET {page.status}", page.body[:200].decode(errors="replace"))
                return False
            body = page.body.decode()
            found = re.search(re.escape(self.args.exit_prefix) + r"(\w+)", body)
            if found is not None:  # the last page, linking back to Prolific
                if found.group(1) != self.args.code:
                    self.error("wrong code", f"{found.group(1)!r} instead of {self.args.code!r}")
                    return False
                return True
            answers = otree_answers(body)
            if not answers:
                self.error("no form", f"no form fields on {target}")
                return False
            await self.think()
            answer = await conn.request("POST", target, "step POST", answers)
            if answer.status != 302:
                self.error(f"step POST {answer.status}", answer.body[:300].decode(errors="replace"))
                return False
            target = urlsplit(answer.header("location")).path
        self.error("too many steps", target)
        return False

    async def baseline(self, conn: Connection) -> bool:
        """The same round trips as a Rostrum participant: entry, then GET + POST per step."""
        form = {"csrfmiddlewaretoken": secrets.token_urlsafe(48), "_position": "1", "answer": "x" * 60}
        response = await conn.request("GET", f"/s/hello/?PROLIFIC_PID={secrets.token_hex(12)}", "entry")
        if response.status != 200:
            self.error(f"entry {response.status}", "")
            return False
        for step in range(1, self.args.steps + 1):
            page = await conn.request("GET", f"/p/hello/{step}/", "step GET")
            await self.think()
            answer = await conn.request("POST", f"/p/hello/{step}/", "step POST", form)
            if page.status != 200 or answer.status != 200:
                self.error(f"status {page.status}/{answer.status}", "")
                return False
        return True

    async def main(self) -> dict:
        tasks = [asyncio.create_task(self.participant(i)) for i in range(self.args.participants)]
        started = time.perf_counter()
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        done, pending = await asyncio.wait(tasks, timeout=self.args.timeout)
        wall = time.perf_counter() - started
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        for task in pending:
            task.cancel()
        if pending:
            self.error("timeout", f"{len(pending)} participants unfinished after {self.args.timeout}s")
            self.errors += len(pending) - 1
        return {
            "participants": self.args.participants,
            "completed": self.completed,
            "errors": self.errors,
            "error_kinds": self.error_kinds,
            "error_samples": self.error_samples,
            "wall_s": wall,
            "requests": self.requests,
            "reconnects": self.reconnects,
            "client_cpu_s": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
            "latencies": self.latencies,
            "kind_latencies": self.kind_latencies,
            "participant_durations": self.durations,
            "uvloop": self.args.uvloop,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["rostrum", "baseline", "otree"], required=True)
    parser.add_argument("--join", default="", help="otree: the session-wide link's path")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--participants", type=int, default=500)
    parser.add_argument("--think-ms", type=float, default=0)
    parser.add_argument("--slug", default="bench-arrivals")
    parser.add_argument("--code", default="")
    parser.add_argument("--exit-prefix", default="https://app.prolific.com/submissions/complete?cc=")
    parser.add_argument("--steps", type=int, default=5, help="baseline: GET+POST pairs after the entry")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-go", action="store_true", help="start at once, without READY/GO")
    parser.add_argument(
        "--result-file", default="", help="write the result here and print DONE (else on stdout)"
    )
    args = parser.parse_args()
    try:
        import uvloop

        args.uvloop = True
    except ImportError:
        uvloop = None
        args.uvloop = False
    if not args.no_go:
        print("READY", flush=True)
        if sys.stdin.readline().strip() != "GO":
            sys.exit(2)
    run = Run(args)
    result = uvloop.run(run.main()) if uvloop else asyncio.run(run.main())
    # The result runs to hundreds of KB (every request's latency). Through a file: once in
    # about a dozen runs the caller read it from the pipe cut at 65,536 bytes (a pipe's buffer)
    # and then went on elsewhere, an unreadable line and a lost run.
    if args.result_file:
        Path(args.result_file).write_text(json.dumps(result))
        print("DONE", flush=True)
    else:
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
