"""Security middleware for every page: a default Content-Security-Policy, the admin's
address allow-list, a per-address limit on login attempts; and for the admin's login
throttle (django-axes), the client address it counts and the page a locked-out login sees.

Participant pages set their own, stricter policy (participants.views.CSP); every other
response (the admin, its analysis pages, the API, the home page) gets `DEFAULT_CSP` unless
its view set one. X-Frame-Options comes from Django's XFrameOptionsMiddleware (DENY)."""

from __future__ import annotations

import ipaddress
from functools import cache
from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user
from django.core.exceptions import MiddlewareNotUsed
from django.http import Http404, HttpRequest, HttpResponse
from django.http.cookie import parse_cookie
from django.shortcuts import render
from django.urls import reverse

from common import limits

# The admin's pages load only our own static files. Its scripts are files (Django's admin
# passes data in data- attributes, ours too: static/js/job_progress.js), but its templates
# and ours use style attributes and <style> blocks, and htmx adds one: inline styles stay.
DEFAULT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
ADMIN_PREFIX = "/admin/"
API_PREFIX = "/api/"


def app_path(scope) -> str:
    """The path Django routes, from an ASGI scope: the scope's path without the script prefix
    (uvicorn's --root-path, or FORCE_SCRIPT_NAME), taken off as Django's ASGIRequest takes it.
    The layers in front of Django (config.limits, config.admission) compare this with
    ADMIN_PREFIX and the login page: the scope's own path starts with the prefix."""
    prefix = settings.FORCE_SCRIPT_NAME or scope.get("root_path") or ""
    return scope["path"].removeprefix(prefix) if prefix else scope["path"]


def session_key(scope) -> str | None:
    """The session cookie's value in an ASGI scope's headers, or None."""
    cookies = b"; ".join(value for name, value in scope["headers"] if name == b"cookie")
    return parse_cookie(cookies.decode("latin-1")).get(settings.SESSION_COOKIE_NAME) or None


def staff_signed_in(key: str) -> bool:
    """Whether a session is an active staff member's, signed in (the session's password hash
    still matching, as Django checks it on every request). Uses the database: call it on a
    thread that may."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(key)
    user = get_user(SimpleNamespace(session=store))
    return bool(user.is_active and user.is_staff)


class SecurityHeaders:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", DEFAULT_CSP)
        if request.path_info.startswith(API_PREFIX):  # participants' data: no copy kept on the way
            response.headers.setdefault("Cache-Control", "no-store")
        return response


class AdminNetworks:
    """With ADMIN_ALLOWED_NETWORKS set, the admin does not exist (404) for other addresses."""

    def __init__(self, get_response) -> None:
        if not settings.ADMIN_ALLOWED_NETWORKS:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith(ADMIN_PREFIX) and not admin_address_allowed(client_address(request)):
            raise Http404("No such page")
        return self.get_response(request)


def admin_address_allowed(address: str | None) -> bool:
    """Whether ADMIN_ALLOWED_NETWORKS (when set) lets this client address reach the admin."""
    if not settings.ADMIN_ALLOWED_NETWORKS:
        return True
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in network for network in _networks(tuple(settings.ADMIN_ALLOWED_NETWORKS)))


@cache
def _networks(names: tuple[str, ...]) -> list:
    """The networks, parsed once per setting value (not on every admin request)."""
    return [ipaddress.ip_network(n, strict=False) for n in names]


class LoginRateLimit:
    """Admin login attempts (POSTs to the login page) per client address, counted before any
    password is checked (ADMIN_LOGIN_RATE_LIMITS): past the limit 429 and Retry-After. Axes
    locks one username from one address; a client trying a new username each time was never
    locked, and each try cost a password hash (about 0.25 s of CPU)."""

    SCOPE = "admin-login"

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        self.login_path = reverse("admin:login")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> HttpResponse | None:
        """After the CSRF check (its process_view comes first and ends the request when it
        fails): a cross-site form posted at the login from a page someone behind the
        experimenter's address opened is refused there, uncounted, and cannot use up the
        address's attempts."""
        if (
            request.method == "POST"
            and request.path_info == self.login_path
            and settings.ADMIN_LOGIN_RATE_LIMITS
        ):
            address = limits.request_address(request)
            if wait := limits.rate_hit(self.SCOPE, address, settings.ADMIN_LOGIN_RATE_LIMITS):
                context = {**admin.site.each_context(request), "title": "Too many logins", "seconds": wait}
                response = render(request, "admin/login_rate_limited.html", context, status=429)
                response["Retry-After"] = str(wait)
                return response
        return None


def login_address(request: HttpRequest) -> str | None:
    """The address a login attempt is counted under (AXES_CLIENT_IP_CALLABLE): the client as
    every per-address limit sees it (common.limits.request_address), so an IPv6 client counts
    per /64, one subscriber's block, written as the block's first address (axes stores an
    address). A client with an address per guess had a fresh lock count for each."""
    key = limits.request_address(request)
    return key.partition("/")[0] or None


def client_address(request: HttpRequest) -> str | None:
    """The peer's address as the server saw it. Behind a proxy, uvicorn's --proxy-headers
    puts the client's there (X-Forwarded-For, from trusted proxies only); a header a client
    sends itself is never read here."""
    return request.META.get("REMOTE_ADDR")


USERNAME_MAX = 150  # django.contrib.auth's User.username


def login_username(request: HttpRequest, credentials: dict | None = None) -> str | None:
    """The username a login attempt is counted under (AXES_USERNAME_CALLABLE): the one typed,
    at most as long as a username can be and without NUL characters. Axes stores it in a
    255-character column: a longer one was a database error, a 500, not a wrong login."""
    typed = (credentials or {}).get("username")
    if typed is None and request is not None:
        typed = request.POST.get("username")
    if typed is None:
        return None
    return str(typed).replace("\x00", "")[:USERNAME_MAX]


def login_locked_out(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """What a username and address locked out of the admin's login see (AXES_LOCKOUT_CALLABLE)."""
    context = {
        **admin.site.each_context(request),
        "title": "Login locked",
        "minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
        "failures": settings.AXES_FAILURE_LIMIT,
    }
    return render(request, "admin/locked_out.html", context, status=429)
