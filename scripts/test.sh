#!/usr/bin/env bash
# The whole test suite: lint, the embedded default (SQLite, in-memory layers), then the
# production path (PostgreSQL, Redis, Celery worker, browser). Installs (the virtual
# environment, Debian's chromium and nginx) and starts (PostgreSQL, Redis) what a clean
# machine lacks; fails loudly when something cannot be provided. No make needed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

say() { printf '\n== %s\n' "$*"; }
die() { printf '\nFATAL: %s\n' "$*" >&2; exit 1; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root for: $*"; fi; }

# Debian's package. Another apt or dpkg run (unattended upgrades, a second checkout
# installing too) holds apt's locks for a while: wait for it (up to 10 minutes: DPkg's own
# timeout for the install; retries every 10 s for the update, which fails at once on its
# lock), and fail at once on anything else.
apt_install() {
  local tries=0 out
  until out=$(as_root apt-get update -qq 2>&1); do
    case "$out" in *"Could not get lock"*|*"Unable to lock"*) ;; *) echo "$out" >&2; die "apt-get update failed" ;; esac
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || die "apt-get update: apt's lock still held after 10 minutes"
    echo "apt-get update: waiting for apt's lock ($tries)"
    sleep 10
  done
  DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$1" >/dev/null \
    || die "could not install $1"
}

ensure_chromium() {
  if ! command -v chromium >/dev/null; then
    say "installing Debian's chromium for the browser tests"
    apt_install chromium
  fi
  command -v chromium >/dev/null || die "chromium is missing"
}

ensure_nginx() {
  if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    say "installing Debian's nginx for the scale-out tests (tests/deploy)"
    apt_install nginx
  fi
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || die "nginx is missing"
}

ensure_postgres() {
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    say "starting PostgreSQL"
    command -v pg_ctlcluster >/dev/null || die "PostgreSQL is not installed (pg_ctlcluster missing)"
    version=$(ls /etc/postgresql | sort -n | tail -1)
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || die "could not start PostgreSQL"
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -q -h 127.0.0.1 -p 5432 || die "PostgreSQL is not accepting connections on 127.0.0.1:5432"
}

ensure_redis() {
  if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
    say "starting Redis"
    command -v redis-server >/dev/null || die "Redis is not installed (redis-server missing)"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || die "could not start Redis"
    for _ in $(seq 30); do (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && break; sleep 0.5; done
  fi
  (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null || die "Redis is not accepting connections on 127.0.0.1:6379"
}

bash scripts/install.sh dev
ensure_chromium
ensure_nginx
ensure_postgres
ensure_redis

say "lint"
$BIN/ruff check .
$BIN/ruff format --check .
$BIN/lint-imports >/dev/null || { $BIN/lint-imports; die "an import breaks the architecture's contracts (pyproject.toml)"; }
$BIN/python manage.py makemigrations --check --dry-run >/dev/null || die "models changed without a migration"

# Two test processes (pytest-xdist; TEST_PROCESSES=1 for one): each has its own test
# database and Redis database (config/settings.py). The `slow` tests (hundreds of threads,
# clusters of servers, browser journeys) then run one at a time, alone on the machine.
PROCESSES="${TEST_PROCESSES:-2}"
parallel=(-n "$PROCESSES" --dist loadfile)
[ "$PROCESSES" = 1 ] && parallel=(-p no:xdist)

say "embedded default: SQLite, in-memory channel layer, eager tasks"
env -u DATABASE_URL -u REDIS_URL $BIN/pytest -q -m "not postgres and not redis and not slow" "${parallel[@]}" "$@"
env -u DATABASE_URL -u REDIS_URL $BIN/pytest -q -m "slow and not postgres and not redis" -p no:xdist "$@"

say "production path: PostgreSQL, Redis, Celery, ASGI server, Chromium"
# DEBUG=1: with DATABASE_URL set, DEBUG is otherwise off and a SECRET_KEY required (the
# tests themselves run with DEBUG off either way: pytest-django sees to it).
# TESTS_BACKEND_ONLY=1: tests that reach no database, service or browser ran above already.
export DEBUG=1 TESTS_BACKEND_ONLY=1
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/rostrum}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}"
$BIN/pytest -q -m "not slow" "${parallel[@]}" "$@"
$BIN/pytest -q -m slow -p no:xdist "$@"
