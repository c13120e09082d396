"""compose.yaml's health check against a server with production settings (DEBUG off, a real
host name in ALLOWED_HOSTS, the HTTPS redirect on): nginx starts only once the app servers
are healthy, so a check the settings refuse keeps the whole stack down."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from config.healthcheck import check, host_to_send
from tests.support.servers import BIN, ROOT, free_port, server_env, stop, uvicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HOSTS = "rostrum.example.org,.lab.example.org"
KEY = "k3Vq9-pZt7Lm2xWc8Rb4Ny6Hs1Jd5Fg0Ue3Ao7Ki9Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8"


@pytest.fixture(scope="module")
def production_server(django_db_setup) -> Iterator[int]:
    port = free_port()
    process = uvicorn(port, server_env(DEBUG="0", ALLOWED_HOSTS=HOSTS, SECRET_KEY=KEY, PSEUDONYM_KEY=KEY))
    try:
        deadline = time.monotonic() + 60
        while check(port, HOSTS) is not None:
            assert process.poll() is None, process.stdout.read()[-3000:]
            assert time.monotonic() < deadline, check(port, HOSTS)
            time.sleep(0.2)
        yield port
    finally:
        stop(process)


def test_compose_checks_health_with_the_module():
    compose = yaml.safe_load((Path(ROOT) / "docker" / "compose.yaml").read_text())
    for name in ("app1", "app2"):
        test = compose["services"][name]["healthcheck"]["test"]
        assert test == ["CMD", "python", "-m", "config.healthcheck"]


def test_the_check_passes_where_a_plain_request_is_refused(production_server):
    assert check(production_server, HOSTS) is None
    # What compose ran before: a Host of 127.0.0.1, which ALLOWED_HOSTS does not list.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{production_server}/healthz", timeout=3)  # noqa: S310
    assert refused.value.code == 400
    # A listed host without the proxy's X-Forwarded-Proto is sent to https.
    request = urllib.request.Request(
        f"http://127.0.0.1:{production_server}/healthz", headers={"Host": "rostrum.example.org"}
    )

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    with pytest.raises(urllib.error.HTTPError) as redirected:
        urllib.request.build_opener(NoRedirect).open(request, timeout=3)
    assert redirected.value.code == 301


def test_the_module_exits_by_health(production_server):
    def run(hosts: str, port: int) -> subprocess.CompletedProcess:
        env = {"ALLOWED_HOSTS": hosts, "HEALTHCHECK_PORT": str(port), "PATH": "/usr/bin:/bin"}
        module = [str(BIN / "python"), "-m", "config.healthcheck"]
        return subprocess.run(module, cwd=ROOT, env=env, capture_output=True)

    ok = run(HOSTS, production_server)
    assert ok.returncode == 0, ok.stderr
    down = run(HOSTS, free_port())
    assert down.returncode == 1 and b"unhealthy: no answer from 127.0.0.1" in down.stderr
    refused = run("elsewhere.example.com", production_server)
    assert refused.returncode == 1 and b"unhealthy: /healthz answered 400" in refused.stderr


@pytest.mark.parametrize(
    "allowed, sent",
    [
        ("rostrum.example.org", "rostrum.example.org"),
        (" .lab.example.org , other.org", "lab.example.org"),
        ("*", "localhost"),
        ("*,rostrum.example.org", "rostrum.example.org"),
        ("", "localhost"),
    ],
)
def test_the_host_sent_is_one_allowed_hosts_accepts(allowed, sent):
    assert host_to_send(allowed) == sent
