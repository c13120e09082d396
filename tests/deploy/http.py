"""A participant's browser over real HTTP for the tests' Walker (tests/support/cast.py): the
same `get`/`post` and responses as Django's test client, through a proxy and servers started
elsewhere (devtools/cluster.py). One keep-alive connection and a cookie jar; the jar sends
`Secure` cookies over the loopback's plain HTTP, as browsers do for localhost."""

from __future__ import annotations

import http.client
from urllib.parse import urlencode, urlsplit


class Response:
    def __init__(self, status: int, headers: list[tuple[str, str]], content: bytes) -> None:
        self.status_code = status
        self.headers = {k.lower(): v for k, v in headers}
        self.content = content

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]


class HTTPClient:
    def __init__(self, base: str, forwarded_for: str = "") -> None:
        parts = urlsplit(base)
        self.base, self.host, self.port = base, parts.hostname, parts.port
        self.forwarded_for = forwarded_for
        self.cookies: dict[str, str] = {}
        self.served_by: list[tuple[str, str, str]] = []  # (method, path, X-Served-By)
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post(self, path: str, data: dict) -> Response:
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": self.base}
        return self.request("POST", path, urlencode(data, doseq=True).encode(), headers)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> Response:
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if self.forwarded_for:
            headers["X-Forwarded-For"] = self.forwarded_for
        self.connection.request(method, path, body=body, headers=headers)
        raw = self.connection.getresponse()
        response = Response(raw.status, raw.getheaders(), raw.read())
        for key, value in raw.getheaders():
            if key.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0].strip()
        self.served_by.append((method, path, response.headers.get("x-served-by", "")))
        return response

    def close(self) -> None:
        self.connection.close()
