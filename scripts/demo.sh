#!/usr/bin/env bash
# The embedded default (SQLite, in-memory channel layer, tasks in-process, the offline model
# backend): installs into .venv, migrates, loads the demo studies, prints the participant
# links and the admin login, and starts the server on HOST:PORT (127.0.0.1:8000; Ctrl-C stops
# it). Needs only Python 3.11 and the package registry.
set -euo pipefail
cd "$(dirname "$0")/.."
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
BIN=.venv/bin
# The address the study URL given to Prolific starts with (the admin's Prolific page).
export SITE_URL="${SITE_URL:-http://$HOST:$PORT}"

bash scripts/install.sh runtime
mkdir -p var
$BIN/python manage.py migrate --noinput
$BIN/python manage.py load_demo --admin --base-url "http://$HOST:$PORT"
printf '\nStarting the ASGI server on http://%s:%s/ (Ctrl-C stops it)\n' "$HOST" "$PORT"
exec $BIN/uvicorn config.asgi:application --host "$HOST" --port "$PORT" --no-access-log --lifespan off \
  --http config.protocol:LimitedHttpTools --ws-max-size 262144 --no-server-header
