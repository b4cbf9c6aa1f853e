# `make run`: the bot on the built-in local default (console, local folders, SQLite); it
# installs only what running needs.
# `make test`: adds what the tests need (test extras, openssh-server, systemd, chromium), then
# lints, type-checks and runs the tests.
# Both install exactly the versions in uv.lock, each file checked against its hash: uv (from
# PyPI, itself pinned with hashes in deploy/requirements-uv.txt) reads the lock.
# `make lock` updates uv.lock and the files made from it; `make deploy` installs into /opt/relbot.

VENV ?= .venv
PYTHON ?= python3
PREFIX ?= /opt/relbot
BIN := $(VENV)/bin
UV := $(BIN)/uv
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# uv syncs this virtualenv with the interpreter it was made with, and never downloads a Python.
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export UV_PYTHON_DOWNLOADS := never
SYNC := $(UV) sync --quiet --frozen --inexact --python $(BIN)/python

.PHONY: run test check install system-deps lint bench lock deploy mutants mutants-extra venv-check

# relbot needs Python 3.11 or later. A $(VENV) made by an older one breaks every later step
# (uv refuses it, in many lines): said in one, with the two ways out. Order-only: it runs
# every time and never makes the virtualenv out of date.
OLD_PYTHON := import sys; sys.exit(sys.version_info < (3, 11))
venv-check:
	@if [ -x $(BIN)/python ] && ! $(BIN)/python -c '$(OLD_PYTHON)' 2>/dev/null; then \
	  echo "make: $(VENV) was made by $$($(BIN)/python -V 2>&1), but relbot needs Python 3.11 or later: rm -rf $(VENV) and make again, or make PYTHON=python3.11 after rm -rf $(VENV)." >&2; \
	  exit 1; \
	fi
	@if [ ! -e $(BIN)/python ] && ! $(PYTHON) -c '$(OLD_PYTHON)' 2>/dev/null; then \
	  echo "make: $(PYTHON) is $$($(PYTHON) -V 2>&1), but relbot needs Python 3.11 or later: make PYTHON=python3.11 (or the path of a newer one)." >&2; \
	  exit 1; \
	fi

$(UV): deploy/requirements-uv.txt | venv-check
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r deploy/requirements-uv.txt
	touch $@

# What running needs, as locked, and relbot itself (editable; again when its version changes).
# --inexact: uv stays installed.
$(BIN)/relbot: pyproject.toml uv.lock bot/__init__.py $(UV) | venv-check
	$(SYNC)
	touch $@

# The test tools (pytest, mypy, ruff, hypothesis, hadolint, selenium) on top, as locked.
$(VENV)/.test-extras: $(BIN)/relbot
	$(SYNC) --extra test
	touch $@

install: $(VENV)/.test-extras

# `make run PORT=9200` serves the release board on that port (default: a free one);
# `make run ARGS="--as steve"` passes anything else to relbot run.
run: $(BIN)/relbot
	$(BIN)/relbot run $(if $(PORT),--board $(PORT)) $(ARGS)

# The SFTP tests start a real sshd on 127.0.0.1; the deploy tests verify the systemd unit;
# the release board's tests drive Debian's chromium through its chromedriver; the registry
# tests run python.org's own app on Debian's PostgreSQL.
system-deps:
	@missing=""; \
	test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v systemd-analyze >/dev/null || missing="$$missing systemd"; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	test -x /usr/bin/chromedriver || missing="$$missing chromium-driver"; \
	if [ -n "$$missing" ]; then \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

lint: install
	$(BIN)/ruff check bot adapters tests bench
	$(BIN)/ruff format --check bot adapters tests bench
	$(BIN)/mypy --strict bot adapters tests

# The tests run in $(TEST_WORKERS) worker processes (pytest-xdist): most of a test's time is
# waiting on a server, a subprocess or a deadline, so more workers than cores pay.
# `make test TEST_WORKERS=0` runs them in this one process.
# The tests start hundreds of Python processes (each worker, relbot run, check, wait…): each
# reads the bytecode Python caches in __pycache__ rather than compiling 600 modules again, even
# where the environment says not to write it (PYTHONDONTWRITEBYTECODE): 0.7 s of CPU a start.
TEST_WORKERS ?= 6
TEST_ENV := PYTHONDONTWRITEBYTECODE=
test: install system-deps lint
	$(TEST_ENV) $(BIN)/pytest --numprocesses $(TEST_WORKERS) --dist loadgroup

# `make check`: the edit-test loop, under a minute: lint, then the rules (bot/domain) and the
# service layer (the gate, the handlers, the publish's steps) on the console's world, with no
# server started. `make test` runs these again with everything else.
CHECK_TESTS := tests/domain tests/signatures/test_login.py tests/test_gate.py \
  tests/test_gate_guards.py tests/test_holds.py tests/test_pinning.py tests/test_waivers.py \
  tests/test_waivers_bind.py tests/test_late_files.py tests/test_properties.py \
  tests/test_manifest_kinds.py tests/test_typed_text.py tests/test_staging_stall.py \
  tests/test_publishing_handler_rules.py tests/test_handler_sentences.py \
  tests/test_replies_lead_somewhere.py tests/test_console_output.py \
  tests/test_pipeline_step_rules.py tests/test_runner_rules.py tests/test_runner_more_rules.py \
  tests/test_ready_rules.py tests/test_status_rules.py tests/test_day_at_a_glance.py \
  tests/test_freeze_step_rules.py \
  tests/test_wait_rules.py tests/test_config.py tests/announcing/test_announce_handler_rules.py \
  tests/storage/test_finishing_rules.py
check: lint
	$(TEST_ENV) $(BIN)/pytest --numprocesses 2 $(CHECK_TESTS)

bench: install system-deps
	$(BIN)/python bench/promotion_bench.py

# The mutation score of the rules (not part of `make test`: a nightly job). Suites, each with the
# tests that cover it: `make mutants SUITES=rules` runs one (`bench/mutation_score.py --list`);
# mutmut keeps each suite's results in .mutation/SUITE/ and a second run re-tests what changed.
$(VENV)/.mutation-extras: $(VENV)/.test-extras
	$(SYNC) --extra test --extra mutation
	touch $@

mutants: $(VENV)/.mutation-extras system-deps
	$(BIN)/python bench/mutation_score.py $(SUITES)

# The mutants mutmut never makes (issue #46): an operand of `and`/`or` dropped, a condition
# forced True or False, a statement replaced by `pass`; the same suites and tests, each mutant
# run against the tests that run its line (bench/extra_mutants.py). Its own target, not part of
# `make mutants`: it takes minutes per suite where mutmut takes hours, so it can run after any
# change, and each tool's figures stay apart. `make mutants-extra SUITES=rules EXTRA_JOBS=2`.
EXTRA_JOBS ?= 2
mutants-extra: $(VENV)/.mutation-extras system-deps
	$(BIN)/python bench/extra_mutants.py --jobs $(EXTRA_JOBS) $(SUITES)

# After a change to the dependencies in pyproject.toml: a new uv.lock, and the hashed
# requirements that the Docker image and `make deploy` install with pip alone.
lock: $(UV)
	$(UV) lock
	$(UV) export --frozen --no-dev --group build --no-emit-project --format requirements-txt \
	  -o deploy/requirements.txt

# relbot for the systemd unit: a virtualenv in $(PREFIX) with exactly the locked versions
# (hashes checked, by pip alone), then relbot built with the locked setuptools.
deploy:
	$(PYTHON) -m venv $(PREFIX)
	$(PREFIX)/bin/pip install --quiet --require-hashes --no-deps -r deploy/requirements.txt
	$(PREFIX)/bin/pip install --quiet --no-deps --no-build-isolation .
	$(PREFIX)/bin/relbot --version
