"""The project's configuration: settings, URLs, ASGI, Celery and websocket routes."""

from .celery import app as celery_app

__all__ = ["celery_app"]
