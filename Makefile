# Everything a fresh machine needs goes through here: `make book` and `make test` bootstrap .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.stamp-requirements
JB     := $(VENV)/bin/jupyter-book

export PYTHONHASHSEED := 0

.PHONY: install assets arena book book-all test lab bench lessons clean

install: $(STAMP)

# Reinstall only when the pinned list or the package metadata changes: a second bootstrap is a no-op.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# MathJax, RequireJS and the widget manager, served from the book itself (see book/_ext/offline_assets.py).
# Without npm the book still builds and loads them from CDNs.
node_modules/.stamp: package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the book will load MathJax and the widget manager from CDNs"; fi

assets: node_modules/.stamp

# The rendered book, strict: warnings are errors, a failing cell fails the build.
book: $(STAMP) assets
	$(JB) build . --warningiserror --nitpick --keep-going

# The same from a clean read of every page (a no-change rebuild hides warnings of unchanged pages).
book-all: $(STAMP) assets
	$(JB) build . --warningiserror --nitpick --keep-going --all

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup

lab: $(STAMP)
	$(VENV)/bin/jupyter lab lessons

# The student notebooks, generated from the source notebooks by nbgrader.
lessons: $(STAMP)
	$(PY) -m autograder release

# The extrapolation arena: trains one tiny model per positional scheme (about 15 minutes on 2 cores)
# and writes book/data/arena.json, which the book reads.
arena: $(STAMP)
	$(PY) -m posenc.arena

bench: $(STAMP)
	$(PY) -m posenc.bench

clean:
	rm -rf _build
