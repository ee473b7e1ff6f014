# Everything a fresh machine needs goes through here: `make book` and `make test` bootstrap .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.stamp-requirements
JB     := $(VENV)/bin/jupyter-book

export PYTHONHASHSEED := 0
export MPLBACKEND := Agg

.PHONY: install book book-all test lab bench lessons clean

install: $(STAMP)

# Reinstall only when the pinned list or the package metadata changes: a second bootstrap is a no-op.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# The rendered book, strict: warnings are errors, a failing cell fails the build.
book: $(STAMP)
	$(JB) build . --warningiserror --nitpick --keep-going

# The same from a clean read of every page (a no-change rebuild hides warnings of unchanged pages).
book-all: $(STAMP)
	$(JB) build . --warningiserror --nitpick --keep-going --all

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup

lab: $(STAMP)
	$(VENV)/bin/jupyter lab lessons

# The student notebooks, generated from the source notebooks by nbgrader.
lessons: $(STAMP)
	$(PY) -m autograder release

bench: $(STAMP)
	$(PY) -m posenc.bench

clean:
	rm -rf _build
