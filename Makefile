# Everything runs from a project-local virtual environment with pinned dependencies.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 9119
LOCOMO ?= ../shared/bench/locomo

.PHONY: run test bench docs lint conformance screenshots clean

$(STAMP): pyproject.toml requirements.lock requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/sidecar seed-demo ./demo-memory
	@echo "sidecar on http://127.0.0.1:$(PORT); in another shell, for sidecar doctor and the" \
		"other client commands: export SIDECAR_URL=http://127.0.0.1:$(PORT)"
	$(BIN)/sidecar serve --agent-dir ./demo-memory/agent --crew-dir ./demo-memory/crew \
		--role lead --port $(PORT)

test: $(STAMP)
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m bench --locomo $(LOCOMO)

# The generated parts of the documentation (API reference, settings tables, the
# performance page); BENCH=bench-results/latest.json takes a new run's figures first.
docs: $(STAMP)
	$(BIN)/python docs/generate.py $(if $(BENCH),--bench $(BENCH))

# The official MCP conformance suite (Node, through npx) against a live daemon on temp
# folders; prints a line and succeeds without running anything when npx is missing.
conformance: $(STAMP)
	$(BIN)/python -m tests.conformance

# The memory inspector's screenshots in docs/ui/, taken by its browser tests (needs Debian's
# chromium: apt-get install -y chromium).
screenshots: $(STAMP)
	SIDECAR_UI_SCREENSHOTS=docs/ui $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_ui_browser.py tests/test_ui_history.py

lint: $(STAMP)
	$(BIN)/ruff check sidecar tests bench
	$(BIN)/ruff format --check sidecar tests bench
	$(BIN)/lint-imports --no-cache

clean:
	rm -rf $(VENV) demo-memory bench-results
