"""`python -m config.healthcheck`: exit 0 when the server in this container answers /healthz
(the app's database included), else 1 with the reason on stderr. compose.yaml's health check.

The check is sent from inside the container, so it must look like a request the production
settings accept: a Host that ALLOWED_HOSTS lists (any other is refused with 400,
DisallowedHost) and `X-Forwarded-Proto: https`, as the TLS proxy in front sends (without it
SECURE_SSL_REDIRECT answers 301). A plain `urlopen("http://127.0.0.1:8000/healthz")` met both
and never saw the server healthy, so nginx, which waits for healthy servers, never started.
It runs every 15 seconds and reads no settings; importing the `config` package brings Celery's
app along (about 0.2 s)."""

from __future__ import annotations

import http.client
import os
import sys


def host_to_send(allowed_hosts: str) -> str:
    """A host name ALLOWED_HOSTS accepts: its first entry ('.example.org' allows example.org
    itself; '*' allows anything)."""
    for item in allowed_hosts.split(","):
        item = item.strip()
        if item and item != "*":
            return item.lstrip(".")
    return "localhost"


def check(port: int, allowed_hosts: str, timeout: float = 3) -> str | None:
    """None when /healthz answers 200, else what went wrong."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Host": host_to_send(allowed_hosts), "X-Forwarded-Proto": "https"}
    try:
        connection.request("GET", "/healthz", headers=headers)
        response = connection.getresponse()
        body = response.read(200).decode(errors="replace").strip()
    except (OSError, http.client.HTTPException) as error:
        return f"no answer from 127.0.0.1:{port}: {error}"
    finally:
        connection.close()
    if response.status != 200:
        return f"/healthz answered {response.status}: {body[:120]!r}"
    return None


def main() -> int:
    problem = check(int(os.environ.get("HEALTHCHECK_PORT", "8000")), os.environ.get("ALLOWED_HOSTS", ""))
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
