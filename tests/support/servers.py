"""Real servers for integration tests: the ASGI server (uvicorn) and a Celery worker, each a
separate process talking to the test database and Redis."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection

from config.protocol import UVICORN_OPTIONS

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent

# Live debates on real servers: the openai backend (pointed at our model server by the
# test) and short watchdog times, so a stopped worker is noticed within seconds.
LIVE_ENV = {
    "LLM_BACKEND": "openai",
    "OPENAI_API_KEY": "test-key",
    "LIVE_TURN_STUCK_SECONDS": "2",
    "LIVE_HEARTBEAT_SECONDS": "1",
    "LIVE_WATCHDOG_SECONDS": "1",
    "LLM_BACKOFF_MS": "50",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_database_url() -> str:
    """A DATABASE_URL for the database the tests are using right now."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=test_database_url(),
        DEBUG="1",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
        # Every test's browser comes from 127.0.0.1: no per-address limits (tests/security's own).
        ENTRY_RATE_LIMITS="off",
        PLACE_RATE_LIMITS="off",
    )
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    else:
        env.pop("REDIS_URL", None)
    env.update(extra)
    return env


def wait_http(url: str, process: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {process.stdout.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback)
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server did not answer {url} within {timeout}s")


def quiet_database(timeout: float = 10) -> None:
    """Wait until no other session on the test database (a server's, a worker's) is running a
    statement or holds a transaction open: the flush between tests (TRUNCATE) then takes its
    locks without meeting a write still on its way, which PostgreSQL had ended as a deadlock
    (a websocket's last writes after the browser closed). No-op on SQLite."""
    if connection.vendor != "postgresql":
        return
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                " AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')"
            )
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.05)


def stop(process: subprocess.Popen, timeout: float = 10) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def uvicorn(port: int, env: dict[str, str], workers: int = 1) -> subprocess.Popen:
    """`uvicorn config.asgi:application` on 127.0.0.1:`port` as production starts it (the
    limited HTTP protocol), with `env` as its whole environment; its output in `stdout`."""
    args = [str(BIN / "uvicorn"), "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    args += ["--no-access-log", "--workers", str(workers), *UVICORN_OPTIONS]  # as production starts it
    return subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@contextlib.contextmanager
def asgi_server(workers: int = 1, **env: str) -> Iterator[str]:
    """Run `uvicorn config.asgi:application`; yields its base URL."""
    port = free_port()
    process = uvicorn(port, server_env(**env), workers)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/healthz", process)
        yield base
    finally:
        stop(process)


@contextlib.contextmanager
def celery_worker(*extra_args: str, **env: str) -> Iterator[subprocess.Popen]:
    """Run a real Celery worker (needs REDIS_URL) until the block ends; waits until it is
    ready. Its log is in `process.log_path`."""
    if not settings.REDIS_URL:
        raise RuntimeError("a Celery worker needs REDIS_URL")
    args = [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", "1"]
    args += ["--without-gossip", "--without-mingle", "--without-heartbeat", *extra_args]
    log = tempfile.NamedTemporaryFile("w+", prefix="celery-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        args, cwd=ROOT, env=server_env(**env), stdout=log, stderr=subprocess.STDOUT, text=True
    )
    process.log_path = log.name
    try:
        wait_for_log(process, "ready.")
        yield process
    finally:
        stop(process)
        log.close()


def wait_for_log(process: subprocess.Popen, text: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in Path(process.log_path).read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(
        f"no {text!r} in the log: {Path(process.log_path).read_text(errors='replace')[-3000:]}"
    )
