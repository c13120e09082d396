"""Rostrum scaled out on one machine, as a lab would deploy it for a large study:

    .venv/bin/python -m devtools.cluster --database-url postgres://postgres@127.0.0.1:5432/rostrum_cluster \\
        --redis-url redis://127.0.0.1:6379/11 [--port 8080] [--servers 2] [--workers 2] [--demo]

Starts two ASGI server processes (uvicorn with production's options), Debian's nginx in
front of them (a generated config: round robin over both, websocket upgrades, X-Forwarded-For
set), two Celery workers and Celery beat, on an existing PostgreSQL and Redis; with DEBUG off
and a generated SECRET_KEY, as in production. Prints the URL; Ctrl-C (or SIGTERM) stops
everything. `make cluster` runs it with the defaults.

Each server process tags its responses `X-Served-By: app1`, `app2` (SERVER_NAME_TAG,
common/server_tag.py) and nginx logs the upstream of every request, websockets included,
in `<workdir>/nginx-access.log`: tests/deploy and bench/faults read both. docker/compose.yaml
describes the same topology for real deployments (docker/nginx.conf).
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from config.protocol import UVICORN_OPTIONS

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# As docker/Dockerfile starts it: httptools with limits on the request head, the client's
# address from the proxy's X-Forwarded-For (trusted from FORWARDED_ALLOW_IPS).
SERVER_OPTIONS = [*UVICORN_OPTIONS, "--proxy-headers", "--no-access-log"]
# As docker/compose.yaml starts them: live turns wait on the model, so a thread pool.
WORKER_OPTIONS = ["--loglevel", "INFO", "--pool", "threads"]
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# nginx's access log: who asked, what, the answer, and which server answered.
LOG_FORMAT = '$remote_addr $msec $status "$upstream_addr" $request_time "$request"'
LOG_LINE = re.compile(r'(\S+) (\S+) (\d+) "([^"]*)" (\S+) "(.*)"$')


class ClusterError(Exception):
    """The cluster cannot start; the message says why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    """One process of the cluster, logging to `<workdir>/<name>.log`, stopped by its own pid."""

    name: str
    cmd: list[str]
    env: dict[str, str]
    log_path: Path
    port: int | None = None
    process: subprocess.Popen | None = None
    restarts: int = 0

    def start(self) -> None:
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                self.cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM to the process's own group (uvicorn, Celery and nginx stop their children),
        SIGKILL after `timeout`."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()
        self._signal(signal.SIGKILL)  # children left behind in its group, if any
        self.process = None

    def kill(self) -> None:
        """SIGKILL, as a crash would: for fault injection (bench/faults)."""
        if self.alive():
            self._signal(signal.SIGKILL)
            self.process.wait()

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)  # its own session: start_new_session above
        except ProcessLookupError:
            pass


@dataclass
class Cluster:
    """N servers behind nginx, M Celery workers and beat; a context manager."""

    database_url: str
    redis_url: str
    port: int = 0
    servers: int = 2
    workers: int = 2
    worker_concurrency: int = 64
    beat: bool = True
    env: dict[str, str] = field(default_factory=dict)  # extra settings for every process
    workdir: Path | None = None
    procs: dict[str, Proc] = field(default_factory=dict)
    _own_workdir: bool = False

    # --- Start and stop -----------------------------------------------------------------

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        if not Path(NGINX).exists():
            raise ClusterError("nginx is missing: apt-get install -y nginx (Debian's package)")
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="rostrum-cluster-"))
            self._own_workdir = True
        self.port = self.port or free_port()
        base = self.base_env()
        try:
            run([str(BIN / "python"), "manage.py", "collectstatic", "--noinput"], base, "collectstatic")
            for i in range(1, self.servers + 1):
                self._server(f"app{i}", base).start()
            for i in range(1, self.servers + 1):
                wait_http(f"http://127.0.0.1:{self.procs[f'app{i}'].port}/healthz", self.procs[f"app{i}"])
            self._nginx().start()
            wait_http(f"{self.url}/healthz", self.procs["nginx"])
            for i in range(1, self.workers + 1):
                self._worker(f"worker{i}", base).start()
            if self.beat:
                self._beat(base).start()
            for i in range(1, self.workers + 1):
                wait_log(self.procs[f"worker{i}"], "ready.")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.stop()
        if self._own_workdir and self.workdir is not None and not os.environ.get("CLUSTER_KEEP_WORKDIR"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def restart(self, name: str) -> None:
        """Start a stopped or killed process again (a supervisor's, compose's `restart:` job)."""
        proc = self.procs[name]
        proc.stop()
        proc.restarts += 1
        proc.start()
        if name.startswith("app"):
            wait_http(f"http://127.0.0.1:{proc.port}/healthz", proc)
        elif name.startswith("worker"):
            wait_log(proc, "ready.", since=proc.log_path.read_text(errors="replace").count("ready."))

    # --- Environment and processes --------------------------------------------------------

    def base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        origins = f"http://127.0.0.1:{self.port},http://localhost:{self.port}"
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=self.database_url,
            REDIS_URL=self.redis_url,
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(48),
            ALLOWED_HOSTS="127.0.0.1,localhost",
            CSRF_TRUSTED_ORIGINS=origins,
            SITE_URL=self.url,
            # Plain HTTP on this machine's loopback: no redirect to https, no HSTS.
            SECURE_SSL_REDIRECT="0",
            SECURE_HSTS_SECONDS="0",
            # nginx on 127.0.0.1 is the proxy: uvicorn and the per-address limits trust it.
            FORWARDED_ALLOW_IPS="127.0.0.1",
            TRUSTED_PROXIES="127.0.0.1",
            STATIC_ROOT=str(self.workdir / "static"),
            PYTHONUNBUFFERED="1",
        )
        env.update(self.env)
        return env

    def _add(self, proc: Proc) -> Proc:
        self.procs[proc.name] = proc
        return proc

    def _server(self, name: str, base: dict) -> Proc:
        port = free_port()
        cmd = [str(BIN / "uvicorn"), "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        env = {**base, "SERVER_NAME_TAG": name}
        return self._add(Proc(name, cmd + SERVER_OPTIONS, env, self.workdir / f"{name}.log", port=port))

    def _worker(self, name: str, base: dict) -> Proc:
        cmd = [str(BIN / "celery"), "-A", "config", "worker", "-n", f"{name}@%h", *WORKER_OPTIONS]
        cmd += ["--concurrency", str(self.worker_concurrency)]
        return self._add(Proc(name, cmd, base, self.workdir / f"{name}.log"))

    def _beat(self, base: dict) -> Proc:
        schedule = str(self.workdir / "celerybeat-schedule")
        cmd = [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO", "--schedule", schedule]
        return self._add(Proc("beat", cmd, base, self.workdir / "beat.log"))

    def _nginx(self) -> Proc:
        conf = self.workdir / "nginx.conf"
        conf.write_text(self.nginx_conf())
        cmd = [NGINX, "-p", str(self.workdir), "-c", str(conf), "-e", str(self.workdir / "nginx-error.log")]
        return self._add(Proc("nginx", cmd, dict(os.environ), self.workdir / "nginx.log", port=self.port))

    def nginx_conf(self) -> str:
        temp = self.workdir / "nginx-temp"
        temp.mkdir(exist_ok=True)
        user = ""
        if os.geteuid() == 0:  # nginx's workers drop root: let them use their temp files
            nobody = pwd.getpwnam("nobody")
            os.chown(temp, nobody.pw_uid, nobody.pw_gid)
            user = f"user nobody {pwd_group(nobody.pw_gid)};"
        upstreams = "\n".join(
            f"        server 127.0.0.1:{self.procs[f'app{i}'].port} max_fails=1 fail_timeout=2s;"
            for i in range(1, self.servers + 1)
        )
        return NGINX_CONF.format(
            user=user,
            work=self.workdir,
            temp=temp,
            log_format=LOG_FORMAT,
            upstreams=upstreams,
            port=self.port,
        )

    # --- What happened ----------------------------------------------------------------------

    def upstream_names(self) -> dict[str, str]:
        """`127.0.0.1:PORT` (nginx's $upstream_addr) -> the server's tag (app1, app2)."""
        return {f"127.0.0.1:{p.port}": name for name, p in self.procs.items() if name.startswith("app")}

    def access_log(self) -> list[dict]:
        """nginx's access log: one dict per request (a websocket's when it closed)."""
        names = self.upstream_names()
        entries = []
        path = self.workdir / "nginx-access.log"
        for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
            match = LOG_LINE.match(line)
            if match is None:
                continue
            client, msec, status, upstream, seconds, request = match.groups()
            hops = [u.strip() for u in upstream.replace(" : ", ",").split(",") if u.strip() not in ("", "-")]
            entries.append(
                {
                    "client": client,
                    "t": float(msec),
                    "status": int(status),
                    "upstreams": [names.get(u, u) for u in hops],
                    "seconds": float(seconds),
                    "request": request,
                    "path": request.split(" ")[1] if request.count(" ") >= 1 else request,
                }
            )
        return entries


NGINX_CONF = """\
# Generated by devtools/cluster.py (docker/nginx.conf is the same for compose).
{user}
worker_processes 1;
daemon off;
pid {work}/nginx.pid;
events {{ worker_connections 4096; }}

http {{
    log_format rostrum '{log_format}';
    access_log {work}/nginx-access.log rostrum;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    server_tokens off;  # "Server: nginx", no version

    # A websocket upgrade passes through; other requests keep the upstream connection alive.
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      '';
    }}

    # Round robin: each request (and each websocket) goes to the next server, so one
    # participant's pages and their websocket land on different servers.
    upstream rostrum {{
{upstreams}
        keepalive 32;
    }}

    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 10m;  # HTTP_MAX_BODY_BYTES
        location / {{
            proxy_pass http://rostrum;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_read_timeout 1h;  # a judge's websocket may be quiet for minutes
            proxy_send_timeout 1h;
            # A server that is down: try the other (never for a POST nginx already sent).
            proxy_next_upstream error timeout;
        }}
    }}
}}
"""


def pwd_group(gid: int) -> str:
    import grp

    return grp.getgrgid(gid).gr_name


def run(cmd: list[str], env: dict, what: str, timeout: float = 300) -> str:
    done = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise ClusterError(f"{what} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def wait_http(url: str, proc: Proc, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise ClusterError(f"{proc.name} exited:\n{proc.log()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback)
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise ClusterError(f"{proc.name} did not answer {url} within {timeout}s:\n{proc.log()}")


def wait_log(proc: Proc, text: str, timeout: float = 60, since: int = 0) -> None:
    """Until `text` is in the process's log more than `since` times."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.log_path.read_text(errors="replace").count(text) > since:
            return
        if not proc.alive():
            break
        time.sleep(0.1)
    raise ClusterError(f"{proc.name}: no {text!r} in its log:\n{proc.log()}")


# --- The command line ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""), required=False)
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""))
    parser.add_argument("--port", type=int, default=8080, help="nginx's port on 127.0.0.1 (8080)")
    parser.add_argument("--servers", type=int, default=2, help="ASGI server processes (2)")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes (2)")
    parser.add_argument("--concurrency", type=int, default=64, help="threads per Celery worker (64)")
    parser.add_argument("--demo", action="store_true", help="load the demo studies and an admin login")
    args = parser.parse_args(argv)
    if not args.database_url.startswith("postgres") or not args.redis_url:
        parser.error("--database-url (PostgreSQL) and --redis-url are required (or DATABASE_URL, REDIS_URL)")

    def terminate(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    cluster = Cluster(
        database_url=args.database_url,
        redis_url=args.redis_url,
        port=args.port,
        servers=args.servers,
        workers=args.workers,
        worker_concurrency=args.concurrency,
    )
    try:
        cluster.workdir = Path(tempfile.mkdtemp(prefix="rostrum-cluster-"))
        cluster._own_workdir = True
        env = cluster.base_env()
        print("[cluster] manage.py migrate", flush=True)
        run([str(BIN / "python"), "manage.py", "migrate", "--noinput"], env, "migrate")
        if args.demo:
            out = run(
                [str(BIN / "python"), "manage.py", "load_demo", "--admin", "--base-url", cluster.url],
                env,
                "load_demo",
            )
            print(out, flush=True)
        print(f"[cluster] starting {args.servers} servers, nginx, {args.workers} workers, beat", flush=True)
        cluster.start()
        for name, proc in cluster.procs.items():
            where = f" on 127.0.0.1:{proc.port}" if proc.port else ""
            print(f"[cluster] {name}: pid {proc.pid}{where}, log {proc.log_path}", flush=True)
        print(f"\nRostrum is at {cluster.url}/  (Ctrl-C stops everything)", flush=True)
        while all(p.alive() for p in cluster.procs.values()):
            time.sleep(1)
        dead = [name for name, p in cluster.procs.items() if not p.alive()]
        print(f"[cluster] {', '.join(dead)} exited; stopping", file=sys.stderr)
        return 1
    except ClusterError as error:
        print(f"[cluster] cannot start: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\n[cluster] stopping", flush=True)
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
