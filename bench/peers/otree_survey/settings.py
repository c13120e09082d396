"""oTree settings of the arrivals benchmark's peer: one session config, the survey app."""

from os import environ

SESSION_CONFIGS = [dict(name="survey", app_sequence=["survey"], num_demo_participants=1)]
SESSION_CONFIG_DEFAULTS = dict(real_world_currency_per_point=1.00, participation_fee=0.00, doc="")
PARTICIPANT_FIELDS = []
SESSION_FIELDS = []
LANGUAGE_CODE = "en"
REAL_WORLD_CURRENCY_CODE = "GBP"
USE_POINTS = True
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = environ.get("OTREE_ADMIN_PASSWORD")
DEMO_PAGE_INTRO_HTML = ""
SECRET_KEY = environ.get("OTREE_SECRET_KEY", "bench-only")
INSTALLED_APPS = ["otree"]
