# Everything a fresh machine needs goes through here: `make book` and `make test` bootstrap .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.stamp-requirements
JB     := $(VENV)/bin/jupyter-book
# jupyter-book's strict flags, from the one place that lists them (tools/book_build.py)
STRICT = $(shell $(PY) tools/book_build.py --strict-flags)

export PYTHONHASHSEED := 0

.PHONY: install system-deps assets arena arena-check book book-all book-instructor book-selfstudy book-pdf test test-unit lab hub bench lessons grade feedback export clean

install: $(STAMP)

# Reinstall only when the pinned list or the package metadata changes: a second bootstrap is a no-op.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

# MathJax, served from the book itself (see book/_ext/offline_assets.py).
# Without npm the book still builds and loads it from its CDN.
# Also the course's JupyterHub proxy, configurable-http-proxy (`make hub`).
node_modules/.stamp: package.json package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the book will load MathJax from its CDN"; fi

assets: node_modules/.stamp

# The rendered book, strict: warnings are errors, a failing cell fails the build.
book: $(STAMP) assets
	$(JB) build . $(STRICT)

# The same from a clean read of every page (a no-change rebuild hides warnings of unchanged pages).
book-all: $(STAMP) assets
	$(JB) build . $(STRICT) --all

# The instructor edition: the same book from solutions/ (solutions, hidden tests and rubrics shown),
# strict like book-all, in _build/instructor/_build/html (tools/instructor_book.py).
book-instructor: $(STAMP) assets
	$(PY) tools/instructor_book.py --out _build/instructor

# The self-study edition: the student book with a worked solution folded under each exercise (no hidden test, no
# rubric), its chapters staged into selfstudy/ from lessons/ and solutions/, strict like book-all, in
# _build/selfstudy/_build/html (tools/selfstudy_book.py).
book-selfstudy: $(STAMP) assets
	$(PY) tools/selfstudy_book.py --out _build/selfstudy

# The whole book as one PDF, _build/pdf/posenc-course.pdf: the book's pages in the order of _toc.yml, printed by
# Debian's Chromium (headless, no browser download) and joined (tools/book_pdf.py).
book-pdf: system-deps book
	$(PY) tools/book_pdf.py --html _build/html --out _build/pdf/posenc-course.pdf

system-deps:
	@bash tools/system_deps.sh

test: system-deps $(STAMP) assets
	$(PY) -m pytest -n 2 --dist loadgroup --durations=30  # the slowest tests named in the log: where the time budget goes

# The fast tier: every test not marked slow (no book build, browser, Jupyter server or graded class), under a minute.
test-unit: $(STAMP)
	$(PY) -m pytest -m "not slow" -n 2

# JupyterLab on the lessons: .venv's kernel (posenc importable), ipywidgets and nbgrader's extensions (assignment
# list, validate). Started from here so that nbgrader reads nbgrader_config.py, whose exchange folder is inside the
# course folder. LAB_DIR serves another folder of lessons; LAB_ARGS adds JupyterLab options (e.g. --no-browser).
LAB_DIR ?= lessons
lab: $(STAMP)
	@mkdir -p "$${POSENC_COURSE_DIR:-course}/exchange"
	env -u MPLBACKEND PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/jupyter lab --ServerApp.root_dir="$(LAB_DIR)" $(LAB_ARGS)

# The course's JupyterHub on this machine (hub/README.md): run as root, settings in the environment, e.g.
#   sudo POSENC_HUB_INSTRUCTOR=teacher POSENC_HUB_STUDENTS="ada bob" POSENC_HUB_PASSWORD=... \
#        POSENC_HUB_INSTRUCTOR_PASSWORD=... make hub
# then http://127.0.0.1:8000. It refuses to start, saying why, when students could read solutions/.
hub: $(STAMP) assets
	$(VENV)/bin/jupyterhub -f hub/jupyterhub_config.py

# The student notebooks: nbgrader generates them from the chapters' sources, then tools/lessons.py makes them the
# book's (readable text, the install cell first). CHAPTERS names some (default: all), e.g. CHAPTERS=02_sinusoidal.
lessons: $(STAMP)
	$(PY) -m autograder release $(CHAPTERS)
	$(PY) tools/lessons.py $(CHAPTERS)

# The extrapolation arena (arena/): trains one tiny model per positional scheme and seed, plus the base sweep and a
# RoPE ceiling, on two worker processes, and writes book/data/arena.json, which chapters 8 and 9 read. Each model
# is cached in _build/arena as it finishes: an interrupted run started again trains only the rest.
arena: $(STAMP)
	$(PY) -m arena

# The same experiment again, compared number by number with the committed book/data/arena.json (writes nothing).
arena-check: $(STAMP)
	$(PY) -m arena --check

# Grading (autograder/README.md, book/instructor.md): SUBMISSIONS is a folder <student>/<chapter>/<chapter>.ipynb,
# JOBS submissions are graded at the same time. GRADE_ARGS passes more options (e.g. --assignment 02_sinusoidal).
SUBMISSIONS ?= submissions
JOBS ?= 1
grade: $(STAMP)
	$(PY) -m autograder grade "$(SUBMISSIONS)" --jobs $(JOBS) $(GRADE_ARGS)

# nbgrader's HTML feedback for every autograded submission (course/feedback/).
feedback: $(STAMP)
	$(PY) -m autograder feedback

# The gradebook as CSV (nbgrader's exporter): course/grades.csv, or GRADES=file.
export: $(STAMP)
	$(PY) -m autograder export $(if $(GRADES),--to "$(GRADES)")

bench: $(STAMP) assets
	$(PY) tools/bench_posenc.py
	$(PY) tools/bench_book.py
	$(PY) tools/bench_grading.py

clean:
	rm -rf _build selfstudy solutions/*/*.ipynb
