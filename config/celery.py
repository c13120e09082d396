"""The Celery application: settings from Django's (CELERY_*), tasks from each package's
`tasks` module."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("rostrum")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The packages that have a `tasks` module (a design's tasks live in its package).
app.autodiscover_tasks(["participants", "debates.live", "analysis"])
