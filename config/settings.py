"""Rostrum settings: one file, driven by environment variables.

With no variables set, Rostrum runs the embedded default: SQLite, the in-memory channel
layer, Celery tasks executed in-process and the offline LLM backend. `DATABASE_URL` and
`REDIS_URL` switch to PostgreSQL, the Redis channel layer and a Celery broker. Any
malformed value raises `ImproperlyConfigured` at start-up rather than misbehaving later.
"""

import os
from datetime import timedelta
from ipaddress import ip_network
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from common.rates import parse_windows

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_rates(name: str, default: list[str]) -> list[str]:
    """Rate-limit windows (common.rates: "20/60,120/3600", or "off"), checked here, so a
    malformed value stops the process at start-up instead of failing the requests it limits."""
    items = env_list(name, default)
    try:
        parse_windows(items)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} must be {error}") from None
    return items


def database_from_url(url: str) -> dict:
    """Turn `sqlite:///path` or `postgres://user:pass@host:port/name` into DATABASES."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    if parts.scheme == "sqlite":
        path = unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
        if not path:
            raise ImproperlyConfigured("DATABASE_URL sqlite:/// needs a file path")
        return sqlite_database(Path(path) if path.startswith("/") else BASE_DIR / path)
    if parts.scheme in ("postgres", "postgresql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL must name the database: postgres://host/NAME")
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured(f"DATABASE_URL has a bad port: {url!r}") from None
        pool_max = env_int("DB_POOL_MAX", 8, minimum=1)
        # Prepared statements: psycopg prepares a query the second time a connection runs it,
        # and PostgreSQL then skips parsing and planning it (bench/arrivals: about a third of
        # the database's CPU per participant). They need server-side parameter binding, and
        # live per connection: behind a pgbouncer in transaction mode (older than 1.21, or
        # without max_prepared_statements) set DB_PREPARED_STATEMENTS=0.
        prepared = env_bool("DB_PREPARED_STATEMENTS", True)
        return {
            # Django's backend, checking pooled connections without the pool's back-off.
            "ENGINE": "common.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            # Persistent connections leak under ASGI (Django ticket #33497): reuse
            # connections through psycopg's pool instead, with CONN_MAX_AGE left at 0.
            "CONN_MAX_AGE": 0,
            # A pooled connection is checked before a request gets it (one empty query): the
            # pool hands out its idle connections in turn, so after a database restart or a
            # killed backend each would otherwise fail one request first (bench/faults: 500s
            # on pages, and a judge's every reconnection refused while the pool's connections
            # were killed faster than its few requests came round to them). The check is the
            # backend's (common/postgresql/base.py), not Django's: Django's runs in the pool,
            # which sleeps 1, 2, 4 s… after each dead connection.
            "CONN_HEALTH_CHECKS": False,
            "OPTIONS": {
                "pool": {"min_size": 1, "max_size": pool_max, "timeout": 20},
                **({"server_side_binding": True, "prepare_threshold": 2} if prepared else {}),
                **({"sslmode": options["sslmode"]} if "sslmode" in options else {}),
            },
            "TEST": {"NAME": env_str("TEST_DATABASE_NAME") or None},
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL must start with sqlite:/// or postgres://, got {parts.scheme or url!r}"
    )


def sqlite_database(path: Path) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # select_for_update() does nothing on SQLite: take the write lock at BEGIN so
        # concurrent assignments serialise, with WAL and a busy timeout so readers and
        # waiting writers do not fail.
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": env_str("SQLITE_TEST_NAME") or str(BASE_DIR / "var" / "test.sqlite3")},
    }


# --- Core -------------------------------------------------------------------------------

# The embedded default (neither DATABASE_URL nor ALLOWED_HOSTS set) runs on one's own
# machine, with DEBUG on. Anything else is a deployment: DEBUG is off unless DEBUG=1 turns it
# on (development against PostgreSQL, the test suite's production path), and then the
# server needs a strong SECRET_KEY.
DEBUG = env_bool("DEBUG", not (env_str("DATABASE_URL") or env_str("ALLOWED_HOSTS")))
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (DEBUG is off by default once DATABASE_URL or "
            "ALLOWED_HOSTS is set; DEBUG=1 turns it on for development and tests). Make one with: "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG-on"
elif len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
    raise ImproperlyConfigured("SECRET_KEY must be at least 50 characters long, of 5 different ones or more")
elif SECRET_KEY.startswith(("replace-with", "django-insecure-")):
    raise ImproperlyConfigured(
        "SECRET_KEY is a placeholder (docker/env.example's, or Django's insecure one): make one with "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )

# The key of the analysts' pseudonyms of Prolific ids (analysis/access.py). Without it they are
# keyed with SECRET_KEY, and rotating SECRET_KEY (after a leak) would give every participant
# new pseudonyms: downloads made before and after would no longer join. Set it once, keep it.
# To keep the pseudonyms analysts already have, set it to the SECRET_KEY they were made with.
PSEUDONYM_KEY = env_str("PSEUDONYM_KEY") or SECRET_KEY
if len(PSEUDONYM_KEY) < 32 or len(set(PSEUDONYM_KEY)) < 5:
    raise ImproperlyConfigured(
        "PSEUDONYM_KEY must be at least 32 characters long, of 5 different ones or more"
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is off")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "studies",
    "participants",
    "debates",
    "analysis",
    "pilots",
    "axes",
]

MIDDLEWARE = [
    "common.server_tag.ServerTag",  # X-Served-By when SERVER_NAME_TAG is set (several servers)
    "django.middleware.security.SecurityMiddleware",
    "common.security.SecurityHeaders",
    "common.security.AdminNetworks",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "common.security.LoginRateLimit",  # before any password is checked
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "participants.i18n.ParticipantLanguage",  # the participant's language on participant pages
    # Last: turns a locked-out login (see the AXES_ settings) into the lockout page.
    "axes.middleware.AxesMiddleware",
]
if DEBUG:  # the participants' 404 page, not Django's developer page listing the URL patterns
    MIDDLEWARE.insert(
        MIDDLEWARE.index("participants.i18n.ParticipantLanguage"),
        "participants.error_pages.ParticipantNotFoundPage",
    )

ROOT_URLCONF = "config.urls"
# Django's form renderer, with plain inputs and textareas written out in Python (issue #12).
FORM_RENDERER = "common.widgets_html.FastWidgetRenderer"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    DATABASES = {"default": sqlite_database(BASE_DIR / "var" / "rostrum.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: channel layer and Celery ----------------------------------------------------

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL and urlsplit(REDIS_URL).scheme not in ("redis", "rediss"):
    raise ImproperlyConfigured(f"REDIS_URL must start with redis:// or rediss://, got {REDIS_URL!r}")
# The test suite in parallel (pytest-xdist): each test process gets its own Redis database
# (gw0 the one given, gw1 the one below it, ...) so that one process's Celery worker never
# takes another's tasks and channel groups and rate counters never meet. Test runs only.
_xdist_worker = env_str("PYTEST_XDIST_WORKER")
if REDIS_URL and _xdist_worker.startswith("gw") and _xdist_worker[2:].isdigit():
    _redis = urlsplit(REDIS_URL)
    _redis_db = int(_redis.path.strip("/") or 0) - int(_xdist_worker[2:])
    if _redis_db < 0:
        raise ImproperlyConfigured(f"too many test processes for Redis databases below {REDIS_URL}")
    REDIS_URL = _redis._replace(path=f"/{_redis_db}").geturl()

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # Pub/sub: one PUBLISH per group_send, messages pushed to each server process's
            # subscription. RedisChannelLayer costs four round trips to send and four to
            # receive each message, one message at a time per process (bench/live: half the
            # web server's CPU in a relay). Both are at-most-once; the live relay's stream
            # buffer and offsets cover a lost frame.
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                # redis-py 8 drops idle connections unless socket_timeout is None.
                "hosts": [{"address": REDIS_URL, "socket_timeout": None}],
                # Pub/sub channels are one namespace per Redis server whatever the database
                # number: the number goes into the prefix, so two deployments (or two test
                # processes) on one server never hear each other's groups.
                "prefix": f"rostrum{urlsplit(REDIS_URL).path.strip('/') or '0'}",
            },
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CELERY_BROKER_URL = "memory://"
    CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A turn whose worker died is re-queued by the watchdog, not by the broker's redelivery
# (with Redis that waits for the visibility timeout); a redelivered duplicate is a no-op.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 900}
CELERY_BEAT_SCHEDULE = {
    "release-expired-leases": {
        "task": "participants.tasks.release_expired_leases",
        "schedule": env_int("LEASE_SWEEP_SECONDS", 60, minimum=5),
    },
    "requeue-stuck-turns": {
        "task": "debates.live.tasks.requeue_stuck_turns",
        "schedule": env_int("LIVE_WATCHDOG_SECONDS", 10, minimum=1),
    },
    "persuasion-watchdog": {
        "task": "debates.persuasion.tasks.watchdog",
        "schedule": env_int("LIVE_WATCHDOG_SECONDS", 10, minimum=1),
    },
    "jobs-watchdog": {
        "task": "debates.jobs.tasks.watchdog",
        "schedule": env_int("LIVE_WATCHDOG_SECONDS", 10, minimum=1),
    },
    "nightly-reports": {
        "task": "analysis.tasks.nightly_reports",
        "schedule": crontab(minute=0, hour=env_int("REPORTS_NIGHTLY_HOUR", 3)),
    },
    "prolific-sync": {
        "task": "participants.tasks.prolific_sync",
        "schedule": env_int("PROLIFIC_SYNC_SECONDS", 120, minimum=10),
    },
}

# --- Analysis ----------------------------------------------------------------------------

REPORT_BOOTSTRAP = env_int("REPORT_BOOTSTRAP", 1000, minimum=10)  # resamples for intervals
REPORTS_KEPT = env_int("REPORTS_KEPT", 5, minimum=1)  # finished reports kept per study
REPORTS_RECENT_DAYS = env_int("REPORTS_RECENT_DAYS", 14)  # closed studies reported nightly this long
if not 0 <= env_int("REPORTS_NIGHTLY_HOUR", 3) <= 23:
    raise ImproperlyConfigured("REPORTS_NIGHTLY_HOUR must be an hour of the day, 0-23 (UTC)")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "analysis.api_auth.CountedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 500,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": env_str("API_RATE", "1200/hour")},
}
# Wrong API tokens per client address (COUNT/SECONDS windows, "off": none); past them the
# address gets 429 until the window ends, and no token of it is looked up meanwhile.
API_TOKEN_FAILURE_LIMITS = env_rates("API_TOKEN_FAILURE_LIMITS", ["20/600"])
SPECTACULAR_SETTINGS = {
    "TITLE": "Rostrum analysis API",
    "DESCRIPTION": "Read-only access to studies, their live progress, export tables and reports.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema needs a token like the rest of the API: it lists every table and column.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

# --- Auth, i18n, static -----------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "admin:login"
LOGIN_REDIRECT_URL = "admin:index"  # a login whose next= is refused (another host) lands here, not on a 404
# Admin logins (django-axes): after this many failed passwords for one username from one
# address, that pair is locked out for this many minutes (each further try restarts the
# clock) and sees common.security.login_locked_out; a successful login clears the count. The address is
# the one the server saw (behind the proxy, uvicorn's --proxy-headers), never a header.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("ADMIN_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("ADMIN_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "common.security.login_locked_out"
AXES_CLIENT_IP_CALLABLE = "common.security.login_address"
# Admin login attempts per client address (COUNT/SECONDS windows, "off": none), counted before
# any password is checked: past them 429 and Retry-After (common.security.LoginRateLimit).
# Axes locks one username from one address; this bounds the hashing one address can ask for.
ADMIN_LOGIN_RATE_LIMITS = env_rates("ADMIN_LOGIN_RATE_LIMITS", ["10/60", "100/3600"])
AXES_USERNAME_CALLABLE = "common.security.login_username"
# Optional: the admin answers only these networks (comma-separated, e.g. "10.0.0.0/8,
# 192.0.2.7"), and is a 404 for every other address (common.security.AdminNetworks).
ADMIN_ALLOWED_NETWORKS = env_list("ADMIN_ALLOWED_NETWORKS", [])
for _network in ADMIN_ALLOWED_NETWORKS:
    try:
        ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"ADMIN_ALLOWED_NETWORKS: {_network!r} is not a network") from None

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
# Participant pages speak each participant's language (participants.i18n, docs/translation.md);
# the admin stays in English. A language here needs a complete catalog in locale/.
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "var" / "staticfiles")
if DEBUG:
    # The embedded default keeps its SQLite file and collected static files under var/.
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "common.storage.StaticStorage"
        )
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# --- Security ---------------------------------------------------------------------------

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- Rostrum ----------------------------------------------------------------------------

PROLIFIC_COMPLETE_URL = env_str("PROLIFIC_COMPLETE_URL", "https://app.prolific.com/submissions/complete?cc=")
# Requests let into Django at once per server process; the rest wait in the event loop.
# About the database pool size: more only adds threads contending for the same connections.
HTTP_CONCURRENCY = env_int("HTTP_CONCURRENCY", 8, minimum=0)
# Admin login attempts checked at once per server process, on threads of their own (each
# hashes a password: ~0.25 s of CPU); the rest wait for one of these places (config.admission).
# Each holds a pooled database connection while it hashes: the shared thread (1), the live
# turns' threads (LIVE_DB_THREADS, 4), the embedded beat (1) and these must fit in DB_POOL_MAX.
PASSWORD_CHECK_CONCURRENCY = env_int("PASSWORD_CHECK_CONCURRENCY", 1, minimum=1)
# Limits on a request, checked before it takes one of those places (config.limits, and
# config.protocol while the head arrives): the whole body within this many seconds (else
# 408) and at most this many bytes (413; admin imports are the largest bodies); the request
# line and header lines within this many bytes and seconds, and at most this many headers.
HTTP_BODY_TIMEOUT_S = env_int("HTTP_BODY_TIMEOUT_SECONDS", 30, minimum=1)
HTTP_MAX_BODY_BYTES = env_int("HTTP_MAX_BODY_BYTES", 10 * 1024 * 1024, minimum=1024)
# Outside the admin (participants' forms, the webhook, the API) bodies are small: a page of
# twenty free-text answers at their 5,000-character limit, all emoji, is ~1.2 MB as a form.
HTTP_MAX_PUBLIC_BODY_BYTES = env_int("HTTP_MAX_PUBLIC_BODY_BYTES", 2 * 1024 * 1024, minimum=1024)
# The admin too takes only that much unless the request comes from a signed-in staff session.
# All bodies held at once by one server process: past this, bodies above 64 KiB (not a
# participant's page in ordinary use, nor a staff member's import) are refused with 503.
# Never below the public limit: one participant's largest page would be refused every time.
HTTP_MAX_BODY_BYTES_HELD = max(
    env_int("HTTP_MAX_BODY_BYTES_HELD", 32 * 1024 * 1024, minimum=1024 * 1024), HTTP_MAX_PUBLIC_BODY_BYTES
)
HTTP_HEADER_TIMEOUT_S = env_int("HTTP_HEADER_TIMEOUT_SECONDS", 20, minimum=1)
HTTP_MAX_HEADER_BYTES = env_int("HTTP_MAX_HEADER_BYTES", 32 * 1024, minimum=1024)
HTTP_MAX_HEADERS = env_int("HTTP_MAX_HEADERS", 100, minimum=10)
# Participant pages re-read a study's settings at most this often per server process.
STUDY_CACHE_SECONDS = env_int("STUDY_CACHE_SECONDS", 5)
# Accept only Prolific-shaped ids (24 hexadecimal characters) at the study link.
PROLIFIC_STRICT_IDS = env_bool("PROLIFIC_STRICT_IDS", True)
# Abuse limits (docs/decisions.md, "Abuse limits"), per client address as COUNT/SECONDS
# windows ("off": none): study-link entries, and places taken (a dialogue, a claim, comparisons).
# A place taken and not yet answered on is held PLACE_IDLE_MINUTES, not the whole time limit.
ENTRY_RATE_LIMITS = env_rates("ENTRY_RATE_LIMITS", ["20/60", "120/3600"])
PLACE_RATE_LIMITS = env_rates("PLACE_RATE_LIMITS", ["6/60", "30/3600"])
PLACE_IDLE_MINUTES = env_int("PLACE_IDLE_MINUTES", 5, minimum=1)
# X-Forwarded-For names the client only when the peer is one of these proxies (addresses or
# networks, e.g. "10.0.0.0/8"); by default none is trusted and the peer is the client.
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", [])
# This server process's name in an X-Served-By header (several servers behind a proxy).
SERVER_NAME_TAG = env_str("SERVER_NAME_TAG", "")
# Django's cache: shared by every server process in production (Redis), memory embedded.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# --- Prolific's API (participants/prolific.py) -------------------------------------------

# The API token carries full permission and never expires: a secret from the environment only,
# never stored in the database nor logged. Without it the Prolific pages say how to set it and the
# periodic sync does nothing. PROLIFIC_WEBHOOK_SECRET checks the signature of Prolific's webhooks
# (a deployment with a public HTTPS address); without it the webhook route answers 404.
PROLIFIC_API_TOKEN = env_str("PROLIFIC_API_TOKEN")
PROLIFIC_API_URL = env_str("PROLIFIC_API_URL", "https://api.prolific.com/api/v1").rstrip("/")
# The workspace participant groups are made in (two-stage studies); empty: the token's default.
PROLIFIC_WORKSPACE_ID = env_str("PROLIFIC_WORKSPACE_ID")
if urlsplit(PROLIFIC_API_URL).scheme not in ("https", "http"):
    raise ImproperlyConfigured(f"PROLIFIC_API_URL must be an http(s) URL, got {PROLIFIC_API_URL!r}")
PROLIFIC_WEBHOOK_SECRET = env_str("PROLIFIC_WEBHOOK_SECRET")
PROLIFIC_TIMEOUT_S = env_int("PROLIFIC_TIMEOUT_SECONDS", 30, minimum=1)
PROLIFIC_MAX_RETRIES = env_int("PROLIFIC_MAX_RETRIES", 3)
# A bonus whose pay call's outcome is unknown is settled as not paid (safe to send again) only
# when Prolific still shows no such payment this long after the call (it pays within minutes).
PROLIFIC_BONUS_SETTLE_MINUTES = env_int("PROLIFIC_BONUS_SETTLE_MINUTES", 60, minimum=1)
PROLIFIC_BONUS_MAX_CENTS = env_int("PROLIFIC_BONUS_MAX_CENTS", 5000, minimum=1)

# --- Language models (live debates) ----------------------------------------------------

OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
LLM_BACKEND = env_str("LLM_BACKEND") or ("openai" if OPENAI_API_KEY else "offline")
if LLM_BACKEND not in ("openai", "offline"):
    raise ImproperlyConfigured(f"LLM_BACKEND must be openai or offline, got {LLM_BACKEND!r}")
LLM_TIMEOUT_S = env_int("LLM_TIMEOUT_SECONDS", 60, minimum=1)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 3)
LLM_BACKOFF_S = float(env_int("LLM_BACKOFF_MS", 1000)) / 1000
# The offline backend streams a word every this many milliseconds (the demo's "typing").
LLM_OFFLINE_TOKEN_DELAY_MS = env_int("LLM_OFFLINE_TOKEN_DELAY_MS", 30)
# Live turns: a turn with no heartbeat for this long is re-queued; after this many failed
# attempts the participant is told and may try again or move on.
LIVE_TURN_STUCK_S = env_int("LIVE_TURN_STUCK_SECONDS", 30, minimum=2)
LIVE_TURN_MAX_ATTEMPTS = env_int("LIVE_TURN_MAX_ATTEMPTS", 3, minimum=1)
LIVE_HEARTBEAT_S = env_int("LIVE_HEARTBEAT_SECONDS", 3, minimum=1)
# A page showing a reply as being written that has heard nothing for this long asks for a
# snapshot: the reply's end may have been lost (pub/sub is at most once when a server's link to
# Redis drops). Also the persuasion page's.
LIVE_RESYNC_QUIET_S = env_int("LIVE_RESYNC_QUIET_SECONDS", 10, minimum=1)
# Streamed text goes out in frames at most 10 times a second per stream (debates.streaming:
# 100 ms apart, the README's stated rate; a longer LIVE_FLUSH_MS sends fewer, larger frames),
# and above this many streams at once in a process the interval grows in proportion (frames
# cost CPU; over Redis 100 streams per process, a loop's frames sharing their pipelines;
# in-process no stretching). 50 had stretched a worker that drew a few more than half of 100
# judges' turns (bench/live: frames 160 ms apart, per token p95 147-160 ms; 93-111 ms at 100,
# and 200 streams still keep up: last token p95 266 ms).
LIVE_FLUSH_MS = env_int("LIVE_FLUSH_MS", 100, minimum=10)
LIVE_MAX_FRAMES_PER_SECOND = env_int("LIVE_MAX_FRAMES_PER_SECOND", 10, minimum=1)
LIVE_STREAMS_PER_INTERVAL = env_int("LIVE_STREAMS_PER_INTERVAL", 100 if REDIS_URL else 10_000, minimum=1)
# Threads for the turn writers' database work in a worker process (0: the one shared thread).
LIVE_DB_THREADS = env_int("LIVE_DB_THREADS", 4)
# Persuasion dialogues (design C): attempts at an agent's turn before the safe default move;
# how often a connected participant's page checks the dialogue's clocks (time limit, silence,
# a partner gone, the waiting room); model-versus-model dialogues run at once per batch.
PERSUASION_TURN_ATTEMPTS = env_int("PERSUASION_TURN_ATTEMPTS", 2, minimum=1)
PERSUASION_CHECK_SECONDS = env_int("PERSUASION_CHECK_SECONDS", 5, minimum=1)
PERSUASION_BATCH_PARALLEL = env_int("PERSUASION_BATCH_PARALLEL", 8, minimum=1)
# LLM jobs (debates.jobs): attempts at an item before a retryable failure fails it.
JOB_ITEM_ATTEMPTS = env_int("JOB_ITEM_ATTEMPTS", 3, minimum=1)
# Limits per model endpoint shared by every job and process (through the cache): "model=C/R"
# pairs, comma-separated, C calls in flight at most and R calls a window (0: no limit), "*"
# for any other model; e.g. "gpt-4o=8/500,*=4/60". Empty: only each job's own concurrency.
JOB_MODEL_LIMITS = env_str("JOB_MODEL_LIMITS")
JOB_RATE_WINDOW_S = env_int("JOB_RATE_WINDOW_SECONDS", 60, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "axes.apps": {"level": "WARNING"},
        # The model client's HTTP library logs every request at INFO: a line per AI turn and
        # per judge call, which the call log (debates.call_log) records better.
        "httpx2": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
    },
}
