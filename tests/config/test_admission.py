"""config.admission at the ASGI level: which requests take the password-check lane."""

from __future__ import annotations

import asyncio

from config.admission import OWN_THREAD, HTTPConcurrencyLimit


def lane_of(method: str, path: str, root_path: str = "") -> bool:
    """Whether the request reached the application marked for a thread of its own."""
    seen: list[dict] = []

    async def app(scope, receive, send):
        seen.append(scope)

    limit = HTTPConcurrencyLimit(app, 4, password_paths=["/admin/login/"])
    scope = {"type": "http", "method": method, "path": path, "root_path": root_path, "headers": []}
    asyncio.run(limit(scope, None, None))
    return bool(seen[0].get(OWN_THREAD))


def test_login_posts_take_the_password_lane_and_nothing_else_does():
    assert lane_of("POST", "/admin/login/")
    assert lane_of("post", "/admin/login/")
    assert not lane_of("GET", "/admin/login/")
    assert not lane_of("POST", "/admin/")
    assert not lane_of("POST", "/p/token/")


def test_under_a_root_path_the_login_post_still_takes_the_lane():
    """Mounted under a prefix (uvicorn --root-path), the scope's path starts with it: the lane
    matched no path, and logins hashed on the thread that serves every page again."""
    assert lane_of("POST", "/study/admin/login/", root_path="/study")
    assert not lane_of("POST", "/study/p/token/", root_path="/study")
