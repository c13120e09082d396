"""Instructions per participant: a figure of the server's Python work that the machine's load
does not move.

    python -m bench.instructions                 # 3 and 23 participants, PostgreSQL
    python -m bench.instructions --against REF   # and the same for a git commit, side by side

The machines these sessions run on are shared: the same code gave 24 and 54 ms of server +
database CPU per participant on bench/arrivals within the hour, one machine slowing as its
neighbours woke. CPU seconds move with the machine; the number of instructions executed does
not (valgrind's callgrind counts them, repeatably). This walks participants through the
arrivals study in one process — the real middleware, views, templates and database writes on
PostgreSQL, driven by Django's test client with CSRF checks on — under callgrind, twice (N1 and
N2 participants), and prints (instructions of N2 − instructions of N1) / (N2 − N1): the
start-up cancels out. It also counts the SQL statements Django sent per participant.

What it leaves out: uvicorn and the event loop (about a third of a server's CPU at 500
arrivals), PostgreSQL's own CPU, and the connection checks of the pool (the test client keeps
its connection). Use it to compare changes to the Python a page runs; bench/arrivals for what
a server does. `--against REF` checks REF out into a temporary worktree (git worktree) and
measures it in the same run, alternating. Needs valgrind and PostgreSQL on 127.0.0.1; takes
about two minutes per tree and pair (valgrind runs the code ~50× slower).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def walk(participants: int, first_address: int) -> int:
    """In this process: `participants` through the study, each from an address of its own; the
    SQL statements sent (Django's cursors)."""
    from http.cookies import SimpleCookie

    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    from bench.study import SLUG
    from devtools.formparse import default_answers, parse_step

    token = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')
    step = re.compile(rb'name="_position" value="([^"]*)"')
    forms: dict[bytes, object] = {}  # parsed once per step: the same form for everyone
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    # One client, so one handler and its middleware made once, as in a server process
    # (WhiteNoise alone reads the static files' folder when made); a fresh cookie jar and
    # address for each participant.
    client = Client(enforce_csrf_checks=True, HTTP_USER_AGENT="bench.instructions")
    with connection.execute_wrapper(count):
        for n in range(participants):
            address = first_address + n
            client.cookies = SimpleCookie()
            client.defaults["REMOTE_ADDR"] = f"10.{address >> 16 & 255}.{address >> 8 & 255}.{address & 255}"
            ids = [secrets.token_hex(12) for _ in range(3)]
            response = client.get(f"/s/{SLUG}/?PROLIFIC_PID={ids[0]}&STUDY_ID={ids[1]}&SESSION_ID={ids[2]}")
            if response.status_code != 302:
                raise SystemExit(f"the study link answered {response.status_code}")
            url = response["Location"]
            for _ in range(20):
                page = client.get(url)
                if page.status_code != 200:
                    raise SystemExit(f"a step answered {page.status_code}")
                position = step.search(page.content).group(1)
                form = forms.get(position)
                if form is None:
                    form = forms[position] = parse_step(page.content.decode())
                answers = default_answers(form, None)
                answers["csrfmiddlewaretoken"] = token.search(page.content).group(1).decode()
                response = client.post(url, answers)
                if response.status_code not in (302, 303):
                    raise SystemExit(f"an answer was refused ({response.status_code})")
                if not response["Location"].startswith("/"):
                    break  # the completion link: done
            else:
                raise SystemExit("a participant did not reach the end")
    return statements


def measured(tree: Path, env: dict, participants: int) -> tuple[int, int]:
    """(instructions, statements) of a walk of `participants` in `tree`, under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "walk.json"
        # This file by its path: the tree measured may be a commit from before it existed.
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", PYTHON, __file__]
        cmd += ["--walk", str(participants), "--address", str(secrets.randbelow(1 << 23)), "--out", str(out)]
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
        collected = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or collected is None or not out.exists():
            raise SystemExit(f"the walk failed in {tree}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return int(collected.group(1)), json.loads(out.read_text())["statements"]


def prepare(tree: Path, env: dict) -> None:
    for what, cmd in (
        ("migrate", [PYTHON, "manage.py", "migrate", "--noinput"]),
        ("collectstatic", [PYTHON, "manage.py", "collectstatic", "--noinput"]),
        ("the study", [PYTHON, "-m", "bench.study"]),
    ):
        done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"{what} failed in {tree}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n1", type=int, default=3, help="participants of the first walk (3)")
    parser.add_argument("--n2", type=int, default=23, help="participants of the second walk (23)")
    parser.add_argument("--pairs", type=int, default=1, help="measurements of each tree (1)")
    parser.add_argument("--against", default="", help="a git commit measured in the same run")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    parser.add_argument("--walk", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--address", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.walk is not None:
        Path(args.out).write_text(json.dumps({"statements": walk(args.walk, args.address)}))
        return 0
    if args.n2 <= args.n1 or args.n1 < 1:
        parser.error("--n2 must be larger than --n1, and --n1 at least 1")
    if shutil.which("valgrind") is None:
        print("valgrind is missing (apt-get install -y valgrind)", file=sys.stderr)
        return 2

    from bench.arrivals import Postgres

    trees = {"this tree": ROOT}
    worktree = None
    if args.against:
        worktree = Path(tempfile.mkdtemp(prefix="rostrum-instructions-"))
        add = ["git", "worktree", "add", "--detach", str(worktree), args.against]
        subprocess.run(add, cwd=ROOT, check=True)
        trees[args.against] = worktree
    static_root = tempfile.mkdtemp(prefix="rostrum-instructions-static-")
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    try:
        envs = {}
        for index, (name, tree) in enumerate(trees.items()):
            pg = Postgres(args.pg, f"rostrum_bench_instructions_{index}")
            pg.recreate()
            env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
            env.update(
                DATABASE_URL=pg.url,
                DEBUG="0",
                SECRET_KEY=secrets.token_urlsafe(48),
                ALLOWED_HOSTS="testserver",
                SECURE_SSL_REDIRECT="0",
                STATIC_ROOT=static_root + f"/{index}",
                PYTHONPATH=str(tree),
            )
            print(f"[instructions] preparing {name} ({tree})", flush=True)
            prepare(tree, env)
            envs[name] = env
        for _ in range(args.pairs):
            for name, tree in trees.items():
                first, few = measured(tree, envs[name], args.n1)
                second, many = measured(tree, envs[name], args.n2)
                each = (second - first) / (args.n2 - args.n1)
                statements = (many - few) / (args.n2 - args.n1)
                results[name].append((each, statements))
                say = f"[instructions] {name}: {each / 1e6:.1f} M instructions, {statements:.1f} statements"
                print(say, flush=True)
    finally:
        if worktree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
        shutil.rmtree(static_root, ignore_errors=True)

    print(f"\nPer participant (walks of {args.n1} and {args.n2}, in process, under callgrind):")
    base = None
    for name, rows in results.items():
        low, high = min(r[0] for r in rows), max(r[0] for r in rows)
        mean = sum(r[0] for r in rows) / len(rows)
        base = mean if base is None else base
        spread = f" ({low / 1e6:.1f}-{high / 1e6:.1f})" if len(rows) > 1 else ""
        line = f"  {name:<12} {mean / 1e6:7.1f} M instructions{spread}, {rows[-1][1]:.1f} SQL statements"
        if name != "this tree":
            line += f"   this tree / {name}: {base / mean:.3f}x"
        print(line)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.exit(main())
