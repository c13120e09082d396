#!/usr/bin/env bash
# The virtual environment .venv with Rostrum's packages: `install.sh` for what a server needs
# (requirements.txt), `install.sh dev` for the tests, lint and benchmarks too
# (requirements-dev.txt). Installs again only when a requirements file changed since.
# Needs only Python 3.11 or newer (PYTHON=python3.11 where python3 is another version) and
# the package registry: no make, no compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv
want="${1:-runtime}"

die() { printf '\nFATAL: %s\n' "$*" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found: Rostrum needs Python 3.11 or newer (PYTHON=python3.11 ...)"
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "Rostrum needs Python 3.11 or newer: $PYTHON is $("$PYTHON" -V 2>&1); run with PYTHON=python3.11"
  "$PYTHON" -m venv "$VENV" || {
    rm -rf "$VENV"
    die "could not make a virtual environment: on Debian/Ubuntu, apt-get install python3-venv"
  }
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi

# A stamp newer than the requirements file(s) it stands for: installed already.
fresh() { local stamp=$1; shift; [ -e "$stamp" ] && for f in "$@"; do [ "$stamp" -nt "$f" ] || return 1; done; }

case "$want" in
  runtime)
    fresh "$VENV/.runtime" requirements.txt && exit 0
    "$VENV/bin/pip" install --quiet -r requirements.txt || die "pip could not install requirements.txt"
    touch "$VENV/.runtime"
    ;;
  dev)
    fresh "$VENV/.dev" requirements.txt requirements-dev.txt && exit 0
    "$VENV/bin/pip" install --quiet -r requirements-dev.txt || die "pip could not install requirements-dev.txt"
    touch "$VENV/.runtime" "$VENV/.dev"
    ;;
  *) die "usage: scripts/install.sh [runtime|dev]" ;;
esac
