"""The embedded default's beat: with no Celery beat process, the periodic tasks of
CELERY_BEAT_SCHEDULE (the lease sweep, the live-turn watchdog, the nightly reports) run in
the server process, scheduled on its event loop, each task's body on a worker thread."""

from __future__ import annotations

import asyncio
import importlib
import logging
from datetime import timedelta

from celery.schedules import BaseSchedule, schedule
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

log = logging.getLogger(__name__)
MAX_SLEEP_S = 60.0


class EmbeddedBeat:
    """Runs each entry of a Celery beat schedule when it is due, one at a time per entry."""

    def __init__(self, app, entries: dict) -> None:
        self.app = app
        self.entries: dict[str, tuple[str, BaseSchedule]] = {}
        for name, entry in entries.items():
            when = entry["schedule"]
            if isinstance(when, int | float | timedelta):
                when = schedule(when if isinstance(when, timedelta) else timedelta(seconds=when))
            when.app = app
            self.entries[name] = (entry["task"], when)
        start = timezone.now()
        self.last_run = dict.fromkeys(self.entries, start)  # the first run after one period
        self.running: set[str] = set()

    async def forever(self) -> None:
        while True:
            await asyncio.sleep(self.tick())

    def tick(self) -> float:
        """Start what is due; returns the seconds until something may be due."""
        wait = MAX_SLEEP_S
        for name, (task_name, when) in self.entries.items():
            due, next_in = when.is_due(self.last_run[name])
            if due and name not in self.running:
                self.last_run[name] = timezone.now()
                self.running.add(name)
                task = asyncio.get_running_loop().create_task(self._run(name, task_name))
                task.add_done_callback(lambda _t, name=name: self.running.discard(name))
            wait = min(wait, max(float(next_in), 0.5))
        return wait

    async def _run(self, name: str, task_name: str) -> None:
        try:
            await asyncio.to_thread(self._call, task_name)
        except Exception:  # a failed run is logged; the next period tries again
            log.exception("periodic task %s failed", name)

    def _call(self, task_name: str) -> None:
        module, _, _ = task_name.rpartition(".")
        importlib.import_module(module)  # only workers autodiscover tasks; this is a web process
        close_old_connections()
        try:
            self.app.tasks[task_name]()  # the body, here and now (no trace logged each period)
        finally:
            close_old_connections()


_started: set[int] = set()
_running: set[asyncio.Task] = set()


def start_beat(loop: asyncio.AbstractEventLoop) -> None:
    """Start the beat on the embedded server's loop (once per loop; never with real workers)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER or id(loop) in _started:
        return
    from config.celery import app

    _started.add(id(loop))
    task = loop.create_task(EmbeddedBeat(app, settings.CELERY_BEAT_SCHEDULE).forever())
    _running.add(task)
