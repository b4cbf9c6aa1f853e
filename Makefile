# `make run`: the bot on the built-in local default (console, local folders, SQLite); it
# installs only what running needs.
# `make test`: adds what the tests need (test extras, openssh-server, systemd, chromium), then
# lints, type-checks and runs the tests.

VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: run test install system-deps lint bench mutants

$(BIN)/relbot: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The test tools (pytest, mypy, ruff, hypothesis, hadolint) on top of what running needs.
$(VENV)/.test-extras: $(BIN)/relbot
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.test-extras

run: $(BIN)/relbot
	$(BIN)/relbot run

# The SFTP tests start a real sshd on 127.0.0.1; the deploy tests verify the systemd unit;
# the release board's tests drive Debian's chromium through its chromedriver.
system-deps:
	@missing=""; \
	test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
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
	$(BIN)/mypy --strict bot adapters

test: install system-deps lint
	$(BIN)/pytest

bench: install system-deps
	$(BIN)/python bench/promotion_bench.py

# The mutation score of the rules (not part of `make test`: tens of minutes on 2 cores; mutmut
# keeps its results in mutants/ and a second run re-tests only what changed).
$(VENV)/.mutation-extras: $(VENV)/.test-extras
	$(BIN)/python -m pip install --quiet -e '.[test,mutation]'
	touch $@

mutants: $(VENV)/.mutation-extras system-deps
	$(BIN)/python bench/mutation_score.py
