# Two commands do all set-up on a fresh machine:
#   make run    create .venv if missing, install, start the dashboard on the WordNet default
#   make test   same set-up, then the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8501
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test setup browser-deps bench walk walk-browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, pinned to the CPU wheel on this machine's disk, then the project.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[test,irds]"
	touch $(STAMP)

setup: $(STAMP)

# Debian's chromium for the real-browser tests (Playwright never downloads a browser here), and fonts
# for the CJK text and emoji in PNG exports (kaleido renders with that chromium: boxes without them).
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
	      || echo "note: could not install Debian chromium; browser tests will skip"; \
	  else echo "note: /usr/bin/chromium missing and not root; browser tests will skip"; fi; \
	fi
	@if ! fc-list :lang=zh 2>/dev/null | grep -q .; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    (apt-get update -qq && apt-get install -y -qq fonts-noto-cjk fonts-noto-color-emoji >/dev/null) \
	      || echo "note: could not install Debian's CJK and emoji fonts; PNG exports show such text as boxes"; \
	  else echo "note: no CJK font and not root; PNG exports show CJK text and emoji as boxes"; fi; \
	fi

# The sidebar offers the collections under EQI_DATA_ROOTS; unset, the ../shared/data beside a checkout.
SHARED_DATA := $(abspath $(wildcard ../shared/data))

run: setup
	@$(BIN)/python -c "from eqi_core.dashboard import network_url as u; a = u($(PORT)); print(f'  From another machine: {a}') if a else None"
	EQI_DATA_ROOTS="$${EQI_DATA_ROOTS-$(SHARED_DATA)}" OPENBLAS_THREAD_TIMEOUT=4 \
	  $(BIN)/streamlit run app.py --server.port $(PORT)

test: setup browser-deps
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

# Random walks through every page's widgets and links (tests/walk.py): not part of the suite, a few
# minutes a page; exit 1 when a page showed an exception.
walk: setup
	$(BIN)/python -m tests.walk $(WALK)

# The same in a real browser (tests/browser_walk.py: chart points, downloads, Back, drop-downs), on a
# dashboard of its own with a fresh store: seconds a step.
walk-browser: setup browser-deps
	$(BIN)/python -m tests.browser_walk $(WALK)

bench: setup
	$(BIN)/eqi bench encode
	$(BIN)/eqi bench dense

clean:
	rm -rf $(VENV) .pytest_cache
