# Rostrum: `make demo` runs the embedded default (scripts/demo.sh); `make test` runs the whole
# suite (scripts/test.sh).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: demo test test-fast install install-dev lint messages bench-arrivals bench-live bench-analysis bench-faults bench-persuasion cluster clean

# The two commands of the README are scripts (no make needed): these targets call them.
install:
	PYTHON=$(PYTHON) bash scripts/install.sh runtime
install-dev:
	PYTHON=$(PYTHON) bash scripts/install.sh dev

demo:
	PYTHON=$(PYTHON) HOST=$(HOST) PORT=$(PORT) bash scripts/demo.sh

# Scale-out on one machine: 2 ASGI servers behind nginx, 2 Celery workers, beat, on your
# PostgreSQL and Redis (DATABASE_URL, REDIS_URL; the database is migrated, the demo loaded).
CLUSTER_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/rostrum_cluster
CLUSTER_REDIS_URL    ?= redis://127.0.0.1:6379/1
CLUSTER_PORT         ?= 8080
cluster: install
	$(BIN)/python -m devtools.cluster --database-url $(CLUSTER_DATABASE_URL) --redis-url $(CLUSTER_REDIS_URL) \
		--port $(CLUSTER_PORT) --demo

test:
	PYTHON=$(PYTHON) bash scripts/test.sh

# The inner loop: lint, the import contracts, and the SQLite suite without the browser and
# the many-thread tests (under a minute). `make test` stays the whole suite.
test-fast: lint
	env -u DATABASE_URL -u REDIS_URL $(BIN)/pytest -q -m "not postgres and not redis and not browser and not slow"

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# Participant pages in other languages (docs/translation.md): refresh the catalogs in locale/
# from the code and templates, then compile the .mo files that are committed with them (needs
# GNU gettext: apt-get install gettext). Translate the new or changed entries, then run it again.
MESSAGE_LANGUAGES ?= de
messages: install-dev
	$(BIN)/python manage.py makemessages --no-obsolete --no-location $(addprefix -l ,$(MESSAGE_LANGUAGES)) \
		--ignore=.venv --ignore=var --ignore=tests --ignore=bench --ignore=docker
	$(BIN)/python manage.py compilemessages --ignore=.venv --ignore=var

bench-arrivals: install-dev
	$(BIN)/python -m bench.arrivals

bench-analysis: install-dev
	$(BIN)/python -m bench.analysis

bench-live: install-dev
	$(BIN)/python -m bench.live --streams 50
	$(BIN)/python -m bench.live --streams 100 --idle 500
	$(BIN)/python -m bench.live --streams 50 --mode embedded --idle 500

bench-persuasion: install-dev
	$(BIN)/python -m bench.persuasion --dialogues 50
	$(BIN)/python -m bench.persuasion --dialogues 50 --mode embedded

bench-faults: install-dev
	$(BIN)/python -m bench.faults

clean:
	rm -rf $(VENV) var
