"""The production static storage (common.storage): hashed URLs, looked up once per process."""

from __future__ import annotations

import re

from django.core.management import call_command

from common.storage import StaticStorage


def test_collectstatic_then_hashed_urls_from_the_manifest(tmp_path, settings):
    settings.STATIC_ROOT = str(tmp_path)
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "common.storage.StaticStorage"}}
    call_command("collectstatic", "--noinput", verbosity=0)
    storage = StaticStorage(location=str(tmp_path))
    first = storage.url("css/rostrum.css")
    assert re.fullmatch(r"/static/css/rostrum\.[0-9a-f]{12}\.css", first), first
    assert storage.url("css/rostrum.css") is first  # looked up once
    assert storage.url("js/step.js") != first
    hashed = first.removeprefix("/static/")
    assert (tmp_path / hashed).exists() and (tmp_path / f"{hashed}.gz").exists()
