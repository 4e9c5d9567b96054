# Cluster Twin — the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=

.PHONY: install migrate seed run worker test test-fast lint format bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install the project with its dev tools

migrate: install
	$(BIN)/python manage.py migrate --noinput

# Development (DEBUG not 0) asks for the demo account even in Redis mode; with DEBUG=0
# demo_seed refuses it (its password is published) and `make seed` stops with the reason.
DEMO_USER_FLAG := $(if $(filter 0 false False no off,$(DEBUG)),,--with-demo-user)

seed: migrate  ## load the hardware catalog and the demo team, user and designs
	$(BIN)/python manage.py catalog import
	$(BIN)/python manage.py demo_seed $(DEMO_USER_FLAG)

run: seed  ## serve HTTP + WebSocket on $(HOST):$(PORT) (embedded worker unless REDIS_URL is set)
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

worker: install  ## a separate Celery worker (Redis mode)
	$(BIN)/celery -A twin worker --loglevel INFO --concurrency 2

# The whole suite in two stages on both cores (pytest-xdist): every test but the browser and
# worker ones, then those (they start their own servers, Celery workers and Chromium; each xdist
# worker has Redis databases and a channel prefix of its own, tests/xdist_services.py). A stage
# that PYTEST_ARGS leaves empty (pytest exit status 5) is not a failure.
test: install  ## run the whole test suite (PostgreSQL/Redis when DATABASE_URL/REDIS_URL are set)
	$(BIN)/python -m pytest -n 2 -m "not e2e and not integration" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(BIN)/python -m pytest -n 2 -m "e2e or integration" $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-fast: install  ## the tier to run while working (under 2 min): no slow, browser or worker tests, on every core
	$(BIN)/python -m pytest -n auto -m "not slow and not e2e and not integration" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install  ## print the performance figures (each bench/*.py says what it measures)
	for script in bench/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) var/*.sqlite3* var/staticfiles .pytest_cache
