"""What every participant websocket shares (design B's `/ws/live/<token>/`, design C's
`/ws/persuasion/<token>/`): limits that hold across reconnections and server processes, and
a frame reader that answers junk with an error instead of dying on it.

- Per token, counted in the cache (Redis in production, so across server processes; memory
  in the embedded default): at most `sockets_per_token` open at once (counted minute by
  minute, so the sockets of a server process that died are forgotten: `LEASE_S`) and at most
  `connects_per_minute` connection attempts (a reconnect loop). Refused at the handshake
  with close code 4429; the browser's back-off (static/js) then waits longer each time.
- Per socket: every frame counts toward `frames_per_minute` (junk, binary and oversized
  frames too); one more within the minute closes the socket with 4429: that is abuse.
- A frame that is binary, longer than `max_frame_chars`, not JSON, nested deeper than
  `max_depth` (measured before `json.loads`, whose recursion a 100,000-deep array would
  blow), holding a NUL character or a lone surrogate (PostgreSQL stores neither), or not an
  object with a string `type`, is answered with an error message (`SocketError`) and the
  socket stays open.

A consumer subclasses `ParticipantSocket` and writes `open()` (authenticate, join its
group, accept, first messages; False refuses with 4403), `close_down()` (leave) and
`receive_json()` (a checked message); a refusing `open()` may say why in `refusal` (logged);
`open()` sets `languages` (the participant's, the
study's) so that errors, the base's included, are in the participant's language. Limits
are `SocketLimits`, overridable with the `WEBSOCKET_LIMITS` setting (a dict of the same
names).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal, TypedDict

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils.translation import gettext, gettext_noop

from common import limits
from debates.streaming import db
from participants.i18n import participant_language
from participants.services import TOKEN_SHAPE, participant_by_token

log = logging.getLogger(__name__)

FORBIDDEN = 4403  # no such participant, or not at a step with this socket
TOO_MANY = 4429  # too many sockets, connection attempts or frames
# A token's open sockets are counted per minute: each socket counts itself in the current
# minute's counter when it opens and again, from a timer, in each new minute while it stays
# open; admission looks at the current minute only. A server process that dies (a crash, a
# deploy's restart) stops counting its sockets, so they are forgotten within a minute. (With
# one counter released on close, bench/faults' server kills left judges refused at every
# reconnection: counts held by dead processes, for hours.)
LEASE_S = 60.0
UNREADABLE = gettext_noop("Unreadable message.")


@dataclass(frozen=True)
class SocketLimits:
    sockets_per_token: int = 4  # two tabs and a refresh whose old socket is still closing
    connects_per_minute: int = 20  # the browser backs off to one attempt per 8 s
    frames_per_minute: int = 30
    max_frame_chars: int = 16_384  # a message's text is at most 2,000 characters
    max_depth: int = 20  # our messages are flat objects


def socket_limits() -> SocketLimits:
    return SocketLimits(**getattr(settings, "WEBSOCKET_LIMITS", {}))


class SocketError(TypedDict):
    """The error every participant websocket answers with (design B's `realtime.Error`)."""

    type: Literal["error"]
    message: str


def error(message: str) -> SocketError:
    return SocketError(type="error", message=message)


# --- Reading a frame ---------------------------------------------------------------------

_SPECIAL = re.compile(r'[\[\]{}"\\]')


def too_deep(text: str, max_depth: int) -> bool:
    """Whether JSON text opens more than `max_depth` arrays or objects inside each other,
    brackets inside strings aside. One pass over the text's brackets, quotes and backslashes
    (a regular expression for whole strings retried from every quote of one never closed: a
    16,000-character frame of escaped quotes held the loop 0.9 s). Cheap for ordinary
    messages: only a text with more brackets than the limit is scanned."""
    if text.count("[") + text.count("{") <= max_depth:
        return False
    depth, in_string, escaped_at = 0, False, -1
    for match in _SPECIAL.finditer(text):
        at, char = match.start(), match.group()
        if at == escaped_at:  # the character after a backslash
            continue
        if in_string:
            if char == "\\":
                escaped_at = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _storable(value) -> str:
    """'' if every string of the message (keys too) can be stored, else the problem."""
    if isinstance(value, str):
        if "\x00" in value:
            return gettext("Messages cannot contain a NUL character.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate ("\ud800")
            return gettext(UNREADABLE)
        return ""
    if isinstance(value, dict):
        parts = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        parts = value
    else:
        return ""
    for part in parts:
        problem = _storable(part)
        if problem:
            return problem
    return ""


def read_frame(text: str | None, data: bytes | None, limits: SocketLimits) -> tuple[dict | None, str]:
    """(message, '') for a readable message, else (None, what to tell the sender, in the
    active language)."""
    if text is None:
        return None, gettext(UNREADABLE)  # a binary frame: our browsers send text
    if len(text) > limits.max_frame_chars:
        return None, gettext("Message too long: at most %(max)s characters.") % {
            "max": limits.max_frame_chars
        }
    if "\x00" in text:
        return None, gettext("Messages cannot contain a NUL character.")
    if too_deep(text, limits.max_depth):
        return None, gettext("Message nested too deeply: at most %(max)s levels.") % {"max": limits.max_depth}
    try:
        content = json.loads(text)
    except (ValueError, RecursionError):
        return None, gettext(UNREADABLE)
    if not isinstance(content, dict) or not isinstance(content.get("type"), str):
        return None, gettext(UNREADABLE)
    problem = _storable(content)
    return (None, problem) if problem else (content, "")


class FrameCounter:
    """Frames of one socket in the last minute (a sliding window)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.times: deque[float] = deque(maxlen=per_minute)

    def take(self, now: float) -> bool:
        if len(self.times) == self.per_minute and now - self.times[0] < 60:
            return False
        self.times.append(now)
        return True


# --- Counting sockets per token ----------------------------------------------------------


def _minute(now: float | None = None) -> int:
    return int((time.time() if now is None else now) // LEASE_S)


def _open_key(token: str, minute: int) -> str:
    return f"ws-open:{token}:{minute}"


def _lease_ttl() -> int:
    return int(LEASE_S * 2) + 1


NO_SUCH_PARTICIPANT = "no such participant"


@db
def socket_admit(token: str, caps: SocketLimits) -> tuple[str, int]:
    """Count a connection attempt and, if allowed, the socket in the current minute: ('', the
    minute) when admitted, else (why it is refused, 0): NO_SUCH_PARTICIPANT (FORBIDDEN), or
    too many of something (TOO_MANY). A token past its attempts is refused on a counter read
    alone (no database); a token no participant holds is refused before anything is counted:
    counters keyed by made-up tokens were two shared keys a handshake (1,016 refused handshakes
    in 3 s left 2,032 keys in Redis)."""
    spec = [f"{caps.connects_per_minute}/60"]
    if limits.rate_wait("ws-connect", token, spec):  # a reconnect loop: refused by a counter read
        return "connection attempts", 0
    if participant_by_token(token) is None:
        return NO_SUCH_PARTICIPANT, 0
    if limits.rate_hit("ws-connect", token, spec):
        return "connection attempts", 0
    minute = _minute()
    if limits.count_add(_open_key(token, minute), 1, _lease_ttl()) > caps.sockets_per_token:
        limits.count_add(_open_key(token, minute), -1, _lease_ttl())
        return "sockets open", 0
    return "", minute


@db
def socket_renew(token: str, counted: int) -> int:
    """Count the open socket in the current minute if it is not counted there yet; the
    minute it is counted in now."""
    minute = _minute()
    if minute != counted:
        limits.count_add(_open_key(token, minute), 1, _lease_ttl())
    return minute


@db
def socket_release(token: str, counted: int) -> None:
    """The socket closed: no longer counted in the current minute (an older minute's count
    is forgotten anyway)."""
    if counted != _minute():
        return
    if limits.count_add(_open_key(token, counted), -1, _lease_ttl()) < 0:  # a count lost meanwhile
        limits.count_add(_open_key(token, counted), 1, _lease_ttl())


def refused(token: str, code: int, why: str) -> None:
    """Log a refused handshake with its reason: the browser only sees HTTP 403, whatever the
    close code (4403 and 4429 alike). The token is shortened: a log is no place for it."""
    log.info("participant socket refused with %s (%s): token %s...", code, why, token[:6])


def participant_or_refusal(token: str):
    """The active participant with this token, else why a socket of theirs is refused (for
    the log): the check every consumer's `open()` starts with."""
    participant = participant_by_token(token)
    if participant is None:
        return NO_SUCH_PARTICIPANT
    if not participant.is_active:
        return f"participant {participant.pk} {participant.status}"
    return participant


# --- The consumers' base -----------------------------------------------------------------


class ParticipantSocket(AsyncJsonWebsocketConsumer):
    """A participant's websocket, authenticated by the token in its URL. See the module."""

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            # However the consumer ends (a task cancelled without `disconnect()` included),
            # its count is not renewed any more, and is released if it still stands.
            token = self._stop_counting()
            if token:
                asyncio.ensure_future(socket_release(token, self.counted_minute))

    async def connect(self) -> None:
        token = self.scope["url_route"]["kwargs"]["token"]
        self.caps = caps = socket_limits()
        self.frames = FrameCounter(caps.frames_per_minute)
        self.counted_token = ""
        self.closing = False
        self.refusal = ""  # why open() refused, for the log
        if not TOKEN_SHAPE.match(token):
            await self.close(code=FORBIDDEN)
            return
        refusal, self.counted_minute = await socket_admit(token, caps)
        if refusal == NO_SUCH_PARTICIPANT:
            refused(token, FORBIDDEN, refusal)
            await self.close(code=FORBIDDEN)
            return
        if refusal:
            refused(token, TOO_MANY, f"too many {refusal}")
            await self.close(code=TOO_MANY)
            return
        self.counted_token = token
        self.lease = asyncio.ensure_future(self._keep_counted(token))
        try:
            opened = await self.open(token)
        except BaseException:
            await self._release()
            raise
        if not opened:
            refused(token, FORBIDDEN, self.refusal or "not at a step with this socket")
            await self._release()
            await self.close(code=FORBIDDEN)

    async def disconnect(self, code: int) -> None:
        try:
            await self.close_down()
        finally:
            await self._release()

    async def _keep_counted(self, token: str) -> None:
        """While open: counted in each new minute (see LEASE_S)."""
        while True:
            await asyncio.sleep(LEASE_S / 4)
            try:
                self.counted_minute = await socket_renew(token, self.counted_minute)
            except Exception:  # a cache hiccup: counted again next time
                log.warning("socket lease of a token not renewed", exc_info=True)

    def _stop_counting(self) -> str:
        """Stop renewing the socket's count; the token whose count is to be released ('' when
        already released or never counted)."""
        lease = getattr(self, "lease", None)
        if lease is not None:
            lease.cancel()
        token, self.counted_token = getattr(self, "counted_token", ""), ""
        return token

    async def _release(self) -> None:
        token = self._stop_counting()
        if token:
            await socket_release(token, self.counted_minute)

    async def receive(self, text_data=None, bytes_data=None, **kwargs) -> None:
        if self.closing:
            return
        if not self.frames.take(time.monotonic()):
            self.closing = True
            await self.close(code=TOO_MANY)
            return
        with self.speaking():
            content, problem = read_frame(text_data, bytes_data, self.caps)
        if problem:
            await self.send_json(error(problem))
            return
        await self.receive_json(content)

    def speaking(self) -> contextlib.AbstractContextManager:
        """The participant's language active for the block (once `open()` set `languages`)."""
        languages = getattr(self, "languages", None)
        return participant_language(*languages) if languages else contextlib.nullcontext()

    # What a consumer writes:

    async def open(self, token: str) -> bool:
        """Authenticate, join the group, accept and send the first messages; False refuses."""
        raise NotImplementedError

    async def close_down(self) -> None:
        """Leave what `open()` joined (also called after a refusal: check what was set)."""

    async def receive_json(self, content: dict, **kwargs) -> None:
        """A readable message: a dict with a string `type`."""
