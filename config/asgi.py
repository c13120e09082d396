"""ASGI entry point: HTTP through Django, websockets through Channels."""

import asyncio
import gc
import os
from concurrent.futures import ThreadPoolExecutor

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)

from asgiref.sync import sync_to_async  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core import signals  # noqa: E402
from django.core.exceptions import RequestAborted  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.db import close_old_connections  # noqa: E402
from django.http import FileResponse, HttpResponseBase  # noqa: E402
from django.urls import reverse, set_script_prefix  # noqa: E402

from common.downloads import pulled_in_thread  # noqa: E402
from common.security import admin_address_allowed, session_key, staff_signed_in  # noqa: E402
from config.admission import OWN_THREAD, HTTPConcurrencyLimit  # noqa: E402
from config.embedded import start_beat  # noqa: E402
from config.limits import Limits, RequestLimits  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402
from debates import llm  # noqa: E402
from debates.streaming import register_local_loop  # noqa: E402


class SharedThreadASGIHandler(ASGIHandler):
    """Django's ASGI handler, tuned for synchronous views under bursts of arrivals.

    Measured on the arrivals benchmark (bench/arrivals.py), two costs of the stock handler
    dominated the server's CPU:
    - it runs each request's synchronous code in a thread made for that request, so a
      burst means hundreds of short-lived threads per process contending for the GIL;
    - in async mode every built-in middleware hops to a thread and back for its
      process_request and process_response: about fifteen hops per request.
    Here the middleware chain and the view run synchronously, as under WSGI, in one hop to
    one long-lived thread per process (asgiref's shared thread-sensitive executor), one
    request after another, which is what the GIL allows anyway. The event loop keeps
    accepting and streaming meanwhile; async views still work (Django adapts them), and
    websockets are served by Channels, not by this handler.

    The one hop also sends `request_started` and, for a response whose body is already in
    memory (every page), closes it (`request_finished`: the database connection goes back to
    the pool) before the body is sent: the stock handler makes a hop of its own for each of
    those. A streaming response is closed after its last chunk, as Django does. A client that
    leaves meanwhile is not waited for: a synchronous view cannot be stopped anyway, and the
    server drops what is sent to a closed connection.
    """

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)
        self._serve_in_thread = sync_to_async(self._serve, thread_sensitive=True)
        # A password check (config.admission's own lane): off the shared thread, on threads of
        # its own (not the loop's default executor, which other work shares), as many as the
        # lane lets in at once. Its response is closed there too (`_serve`): a login page never
        # streams, and a streaming one would be closed on another thread (refused below).
        self._password_threads = ThreadPoolExecutor(
            max_workers=settings.PASSWORD_CHECK_CONCURRENCY, thread_name_prefix="password-check"
        )
        self._serve_in_own_thread = sync_to_async(
            self._serve, thread_sensitive=False, executor=self._password_threads
        )

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)

    async def handle(self, scope, receive, send):
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            own_thread = bool(scope.get(OWN_THREAD))
            serve = self._serve_in_own_thread if own_thread else self._serve_in_thread
            response = await serve(scope, body_file)
            if own_thread and response.streaming:
                raise RuntimeError("a password check's response streams: it would be closed off its thread")
            if response.streaming and not response.is_async:
                # A file, say: Django's handler would read it whole into a list first (its
                # "must consume synchronous iterators" warning); sent a chunk at a time.
                response.streaming_content = pulled_in_thread(response.streaming_content)
            try:
                await self.send_response(response, send)
            finally:
                if response.streaming:
                    await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    def _serve(self, scope, body_file) -> HttpResponseBase:
        """The request's synchronous part, in the shared thread: from `request_started` to
        the response (closed unless it streams)."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)  # the synchronous chain, as under WSGI
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()
        return response


def _staff_signed_in(key: str) -> bool:
    try:
        return staff_signed_in(key)
    finally:
        close_old_connections()  # the shared thread's connection back to the pool, as after a page


_staff_signed_in_on_shared_thread = sync_to_async(_staff_signed_in, thread_sensitive=True)


STAFF_CHECKS_AT_ONCE = 2
_staff_checks = 0  # in this process's event loop, now


async def large_body_allowed(scope) -> bool:
    """Whether an admin request may send a body above the public limit, or past the cap on
    bodies held (config.limits): only from a signed-in staff session. Asked only of such
    bodies (imports), so rarely. No database read without a session cookie or from an address
    the admin is closed to (ADMIN_ALLOWED_NETWORKS), nor past STAFF_CHECKS_AT_ONCE checks in
    flight (a flood of made-up cookies would queue reads on the thread that serves pages:
    refused as signed out, a real import can be sent again)."""
    global _staff_checks
    key = session_key(scope)
    client = scope.get("client") or ("", 0)
    if key is None or not admin_address_allowed(client[0]) or _staff_checks >= STAFF_CHECKS_AT_ONCE:
        return False
    _staff_checks += 1
    try:
        return await _staff_signed_in_on_shared_thread(key)
    finally:
        _staff_checks -= 1


class RegisterLoop:
    """Tell the streamed turns which loop serves this process (see debates.streaming), and in
    the embedded default start the periodic tasks there (see config.embedded)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        loop = asyncio.get_running_loop()
        register_local_loop(loop)
        start_beat(loop)
        await self.app(scope, receive, send)


if settings.CELERY_TASK_ALWAYS_EAGER:  # the embedded default writes turns on this server's loop
    llm.warm()

django_asgi_app = SharedThreadASGIHandler()

# The garbage collector (issue #12, bench/arrivals): a page allocates tens of thousands of
# short-lived objects, so the default threshold (700) ran a collection every few hundred
# microseconds of work, each walking the young objects. The objects made at start-up
# (modules, settings, URL patterns, compiled templates) are frozen out of every collection.
gc.collect()
gc.freeze()
gc.set_threshold(20_000, 20, 20)

application = RegisterLoop(
    ProtocolTypeRouter(
        {
            # A request's body is read (in full, within limits) before it waits for a place.
            "http": RequestLimits(
                HTTPConcurrencyLimit(
                    django_asgi_app,
                    settings.HTTP_CONCURRENCY,
                    password_paths=[reverse("admin:login")],
                    password_limit=settings.PASSWORD_CHECK_CONCURRENCY,
                ),
                Limits.from_settings(),
                large_body_allowed=large_body_allowed,
            ),
            "websocket": AllowedHostsOriginValidator(URLRouter(websocket_urlpatterns)),
        }
    )
)
