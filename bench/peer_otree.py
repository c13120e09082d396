"""oTree, the peer of `bench/arrivals`: its own virtual environment, database, session and
server (bench/peers/otree_survey/README.md says what it runs).

Used by `bench.arrivals`; `setup()` raises `PeerUnavailable` when oTree cannot be installed
or started, which the benchmark reports instead of failing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench import procstat

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PROJECT = BENCH / "peers" / "otree_survey"
VENV = ROOT / "var" / "peers" / "otree-venv"
COMPLETION_CODE = "CBENCHDONE"  # written in the project's last page, as bench/study.py's
ANSWERS = ("consent", "colour", "agree", "warmth", "age", "why", "again")


class PeerUnavailable(Exception):
    """oTree could not be installed, set up or started; the message says why."""


def _otree() -> Path:
    return VENV / "bin" / "otree"


def ensure_installed() -> str:
    """Install the pinned oTree into its own virtual environment (once); its version."""
    requirements = PROJECT / "requirements.txt"
    stamp = VENV / ".installed"
    if not stamp.exists() or stamp.read_text() != requirements.read_text():
        try:
            if not (VENV / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True)
            subprocess.run(
                [str(VENV / "bin" / "pip"), "install", "--quiet", "-r", str(requirements)],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            detail = getattr(exc, "stderr", "") or str(exc)
            raise PeerUnavailable(f"cannot install oTree into {VENV}: {detail[-800:]}") from None
        stamp.write_text(requirements.read_text())
    match = re.search(r"^otree==(\S+)", requirements.read_text(), re.MULTILINE)
    return match.group(1) if match else "?"


def environment(database_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "OTREE_"))}
    env.update(
        DATABASE_URL=database_url,
        OTREE_PRODUCTION="1",
        OTREE_ADMIN_PASSWORD=os.urandom(12).hex(),
        OTREE_SECRET_KEY=os.urandom(24).hex(),
        PATH=f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        PYTHONUNBUFFERED="1",
    )
    return env


def _run(args: list[str], env: dict, what: str) -> str:
    try:
        done = subprocess.run(
            [str(_otree()), *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        raise PeerUnavailable(f"oTree {what}: {exc}") from None
    if done.returncode != 0:
        raise PeerUnavailable(f"oTree {what} failed:\n{(done.stdout + done.stderr)[-2000:]}")
    return done.stdout + done.stderr


def setup(pg, participants: int) -> tuple[dict, str]:
    """A fresh database with a session of `participants`: (the server's environment, the
    path of its session-wide link)."""
    pg.recreate()
    env = environment(pg.url)
    _run(["resetdb", "--noinput"], env, "resetdb")
    out = _run(["create_session", "survey", str(participants)], env, "create_session")
    match = re.search(r"Created session with code (\w+)", out)
    if match is None:
        raise PeerUnavailable(f"oTree create_session said: {out[-500:]}")
    with pg.psycopg.connect(pg.url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT _anonymous_code FROM otree_session WHERE code = %s", (match.group(1),)
        ).fetchone()
    if row is None:
        raise PeerUnavailable(f"oTree's session {match.group(1)} is not in {pg.db_name}")
    return env, f"/join/{row[0]}"


class Server:
    """`otree prodserver 127.0.0.1:PORT` in the project, logged to a file: the interface of
    bench.arrivals' Server (port, cpu(), stop())."""

    def __init__(self, port: int, env: dict, log_path: Path) -> None:
        self.port, self.env, self.log_path = port, env, log_path
        self.cmd = [str(_otree()), "prodserver", f"127.0.0.1:{port}"]
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 90) -> None:
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            self.cmd,
            cwd=PROJECT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PeerUnavailable(
                    f"otree prodserver exited with {self.process.returncode}:\n{self.tail()}"
                )
            if self._answers():
                return
            time.sleep(0.3)
        raise PeerUnavailable(f"otree prodserver did not answer within {timeout}s:\n{self.tail()}")

    def _answers(self) -> bool:
        try:  # the login page: it answers without touching a session
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login", timeout=5) as response:
                return response.status == 200
        except urllib.error.HTTPError as exc:
            return exc.code < 500
        except OSError:
            return False

    def cpu(self) -> float:
        """The server and the helper process it starts (`otree timeoutsubprocess`)."""
        return procstat.tree_cpu(self.process.pid)

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, 15)
            self.process.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.process = None
        self.log.close()


def verify(pg, participants: int) -> dict:
    """Every participant at the last page with all seven answers stored."""
    with pg.psycopg.connect(pg.url, autocommit=True) as conn:
        filled = " AND ".join(f"{name} IS NOT NULL" for name in ANSWERS)
        complete = conn.execute(f"SELECT count(*) FROM survey_player WHERE {filled}").fetchone()[0]  # noqa: S608 - fixed names
        started = conn.execute(
            "SELECT count(*) FROM otree_participant WHERE label IS NOT NULL AND label <> ''"
        ).fetchone()[0]
    return {
        "participants_started": started,
        "completed": complete,
        "responses": complete * len(ANSWERS),
        "expected_responses": participants * len(ANSWERS),
        "ok": complete == participants and started == participants,
    }
