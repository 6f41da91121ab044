# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Each creates its own virtualenv (.venv) and installs the project, the emulator with its hypertune extra, and
# the test, examples (torch, CPU build, for the DDP example), dev and celery dependency groups (pyproject's
# [dependency-groups]; uv >= 0.8 installs them; celery is the stack suite's Celery profile).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# The reliability and security tests record their figures here (tests/stack/figures.py); docs/reliability.md
# is generated from this file. A plain pytest run outside make records into a temporary file instead.
export AVD_FIGURES ?= $(CURDIR)/scripts/stack/figures.json

.PHONY: install test check lint typecheck unit emulator-test unit-all compat test-stack demo clean

# Test processes the unit suite runs in (pytest-xdist). Most tests wait on replica processes, servers
# and subprocesses rather than compute, so more workers than cores pays off on a 2-core machine: there
# the unit suite took 6m02s with 6 workers, alone, against 7m47s-8m59s with 4 beside lint and types.
XDIST ?= 6

# uv installs the project (seconds, not minutes); pip installs torch first, as the `examples` group pins
# it, because pip is what finds the CPU build a machine may hold (its configured find-links) while uv
# would fetch a CUDA build of several GB; uv then keeps the torch it finds installed.
$(STAMP): pyproject.toml emulator/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'uv>=0.8'
	$(PY) -m pip install --quiet "$$(grep -o -m1 'torch==[0-9.]*' pyproject.toml)"
	UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv pip install --quiet --python $(PY) -e . -e './emulator[hypertune]' --group test --group examples --group dev --group celery
	touch $(STAMP)

install: $(STAMP)

# The emulator's own suite (emulator/tests/) runs from the emulator's own install: a virtualenv of its own
# holding only `./emulator[hypertune,test]` (no Airflow, no provider), made by uv on an interpreter of this
# machine (never downloaded), from the package registry alone. EMU_XDIST test processes (pytest-xdist), as
# many as the provider's suite by default: `make test` and `make check` run the two suites one after the
# other, so the machine carries the load it carried when the emulator's tests were part of the unit suite.
EMU_VENV  ?= emulator/.venv
EMU_PY    := $(EMU_VENV)/bin/python
EMU_STAMP := $(EMU_VENV)/.installed
EMU_XDIST ?= $(XDIST)

$(EMU_STAMP): emulator/pyproject.toml | $(STAMP)
	test -x $(EMU_PY) || UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv venv --quiet --python $(PYTHON) $(EMU_VENV)
	UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv pip install --quiet --python $(EMU_PY) -e './emulator[hypertune,test]'
	touch $(EMU_STAMP)

# First that the venv holds neither Airflow nor the provider (run in isolated mode from emulator/, so the
# checkout's folders are not on the path), then the suite, with pytest's exit 5 (no test) a failure.
emulator-test: $(EMU_STAMP)
	@cd emulator && $(abspath $(EMU_PY)) -I -c 'import importlib.util as u, sys; \
	found = [m for m in ("airflow", "airflow_vertex_dist") if u.find_spec(m)]; \
	sys.exit(f"the emulator venv can import {found}" if found else 0)'
	@cd emulator && $(abspath $(EMU_PY)) -m pytest -n $(EMU_XDIST) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no emulator tests: failing" >&2; exit 1; fi; exit $$rc

# ruff, the layer contracts of .importlinter (the package's architecture, docs/architecture.md) and the
# complexity budget (scripts/complexity_budget.py: ruff's C901 with an allow-list that only shrinks), and
# the docstring style the API reference needs (scripts/docstring_roles.py: no Sphinx role)
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) scripts/complexity_budget.py
	$(PY) scripts/docstring_roles.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# pytest exits 5 when it collected no test: that is a failure here, said out loud.
# The reliability suite (marked `stack`) runs as the next stage, `make test-stack`.
unit: $(STAMP)
	@$(PY) -m pytest -m "not stack" -n $(XDIST) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

# The provider's unit suite, then the emulator's own (in its own venv), each run to its end; fails if
# either failed.
unit-all: $(STAMP) $(EMU_STAMP)
	@$(MAKE) --no-print-directory unit; a=$$?; $(MAKE) --no-print-directory emulator-test; b=$$?; \
	[ $$a -eq 0 ] || exit $$a; exit $$b

# The inner loop: lint, types and the fast tests (those not marked slow or stack), all three at once
# (make jobs, each one's output printed whole when it ends; mypy works on one core while the tests
# mostly wait on servers and subprocesses). The fast tests are the provider's, then the emulator's, these
# from the dev venv, which holds the emulator too: no second venv to make on a fresh checkout, and the
# same tests as `make emulator-test` (which `make test` runs, in the emulator's own venv, with the slow ones).
# The inner loop records its figures in a temporary file (AVD_FIGURES set empty: tests/stack/figures.py's
# default), not in the committed one: a check's timings are not measurements to publish.
check: $(STAMP)
	@AVD_FIGURES= $(MAKE) --no-print-directory -k -j3 --output-sync=target lint typecheck check-tests-all

.PHONY: check-tests-all
check-tests-all: $(STAMP)
	@$(MAKE) --no-print-directory check-tests; a=$$?; $(MAKE) --no-print-directory check-emulator-tests; b=$$?; \
	[ $$a -eq 0 ] || exit $$a; exit $$b

.PHONY: check-tests check-emulator-tests
check-tests: $(STAMP)
	@$(PY) -m pytest -m "not slow and not stack" -n $(XDIST) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

check-emulator-tests: $(STAMP)
	@cd emulator && $(abspath $(PY)) -m pytest -m "not slow" -n $(EMU_XDIST) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no emulator tests: failing" >&2; exit 1; fi; exit $$rc

# The support matrix's other cells (tests/compat/matrix.py, README): one nox session each, in a uv
# virtualenv on an interpreter of this machine (never downloaded), running the compat suite.
# COMPAT_JOBS cells run at once (scripts/compat_cells.py: each cell's log printed whole when it ends);
# COMPAT_CELLS picks cells, e.g. COMPAT_CELLS=airflow-3.1,lowest.
# COMPAT_PHASE=install makes the cells' virtualenvs only; COMPAT_PHASE=test then runs the suite in them.
COMPAT_JOBS ?= 2
COMPAT_CELLS ?=
COMPAT_PHASE ?= all
compat: $(STAMP)
	$(PY) scripts/compat_cells.py --phase $(COMPAT_PHASE) --jobs $(COMPAT_JOBS) --cells "$(COMPAT_CELLS)"

# The declared floors resolved with each Airflow release of the matrix, as the index stood on its date
# (scripts/check_floors.py); it needs the package index, as the cells' installs do, so it is a build step
# beside them, not a test.
.PHONY: floors
floors: $(STAMP)
	$(PY) scripts/check_floors.py

.PHONY: compat-install
compat-install: $(STAMP)
	$(PY) scripts/compat_cells.py --phase install --jobs $(COMPAT_JOBS) --cells "$(COMPAT_CELLS)"

# Lint, types and the tests (the unit/integration/e2e suite, then the emulator's own in its own venv), all
# three at once, and meanwhile the compat cells' virtualenvs and the floors' resolution with each Airflow release (they wait on downloads
# and disk while the tests use the cores); then, at once, the
# compat suite in those cells (two at a time), the reliability suite on two real Airflow stacks (its files
# split in two halves of about equal length, each half on a stack of its own), the same guarantees on its
# Celery profile and the job view in a browser on a stack of its own; then docs/reliability.md from their
# figures. These mostly wait on servers, replica processes and schedulers rather than compute, so they
# share a 2-core machine: make runs them as parallel jobs and prints each one's output whole when it ends
# (--output-sync), so their lines never interleave. Every job of a stage runs to its end (-k) and make
# test fails if any failed; a failure in the first stage skips the second.
test: $(STAMP)
	@$(MAKE) --no-print-directory -k -j5 --output-sync=target lint typecheck unit-all compat-install floors
	@$(MAKE) --no-print-directory -k -j5 --output-sync=target COMPAT_JOBS=2 COMPAT_PHASE=test compat $(STACK_JOBS); rc=$$?; \
	$(PY) scripts/stack/write_reliability.py || exit 1; exit $$rc

# The reliability suite (tests marked `stack`), four pytest processes at the same time, each with its
# own stack (its own ports, state and process marker): a real Airflow stack on PostgreSQL with crash
# scenarios and the fault matrix (stack-local); another with the triggerer kills, the backfills
# under crashes and on a capacity ladder and the training logs (stack-local-2); the same guarantees on the
# Celery profile (two workers, two schedulers, two triggerers, Redis), then `airflow standalone` as
# docs/how-to/real-airflow.md runs it (stack-celery); the job view in
# Chromium (Debian's package, installed when missing) on a stack whose users log in, then the canary on a
# stack of its own, after adoption and the backfill on a persistent resource on a third (stack-ui). Then
# docs/reliability.md. The jobs are balanced by the files' run times (measured from a fresh clone: 10, 8, 5 and 4 minutes before adoption, about 2.5
# minutes with its stack's start, moved from the first to the last).
STACK_TESTS  := tests/stack/test_fault_matrix.py tests/stack/test_crashes.py
STACK_TESTS_2 := tests/stack/test_triggerers.py tests/stack/test_backfill.py \
	tests/stack/test_training_logs.py tests/stack/test_capacity.py
CELERY_TESTS := tests/stack/test_celery.py tests/test_real_airflow_page.py
UI_TESTS     := tests/stack/test_adoption.py tests/stack/test_persistent.py tests/ui/test_browser.py \
	tests/stack/test_canary.py
STACK_JOBS   := stack-local stack-local-2 stack-celery stack-ui

.PHONY: $(STACK_JOBS)
test-stack: $(STAMP)
	@$(MAKE) --no-print-directory -k -j4 --output-sync=target $(STACK_JOBS); rc=$$?; \
	$(PY) scripts/stack/write_reliability.py || exit 1; exit $$rc

stack-local: $(STAMP)
	@$(PY) -m pytest -m stack --timeout 1800 $(STACK_TESTS) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no stack tests: failing" >&2; exit 1; fi; exit $$rc

stack-local-2: $(STAMP)
	@$(PY) -m pytest -m stack --timeout 1800 $(STACK_TESTS_2) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no stack tests: failing" >&2; exit 1; fi; exit $$rc

stack-celery: $(STAMP)
	@$(PY) -m pytest -m stack --timeout 1800 $(CELERY_TESTS) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no Celery stack tests: failing" >&2; exit 1; fi; exit $$rc

stack-ui: $(STAMP)
	@$(PY) -m pytest -m stack --timeout 1800 $(UI_TESTS) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no browser tests: failing" >&2; exit 1; fi; exit $$rc

# the job view's screenshots in docs/ui.md (docs/images/ui-*.png): the browser tests write them on each run;
# this runs those tests alone, on a stack of their own (a few minutes)
.PHONY: ui-screenshots
ui-screenshots: $(STAMP)
	@$(PY) -m pytest -m stack --timeout 1800 tests/ui/test_browser.py $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no browser tests: failing" >&2; exit 1; fi; exit $$rc

# the demo lives in the checkout (scripts/demo.py), not in the package: it runs the checkout's dags/
demo: $(STAMP)
	$(PY) scripts/demo.py

clean:
	rm -rf $(VENV) $(EMU_VENV) .nox .pytest_cache .mypy_cache .ruff_cache site emulator/.pytest_cache

# Benchmarks (docs/benchmarks.md), side by side with apache-airflow-providers-google, which lives in the
# benchmark's own virtualenv (never a project dependency), with the project venv's Airflow version.
# The first `make bench` builds that venv (large: several minutes). Timing never fails a run.
ANCHOR_VENV  ?= benchmarks/.venv-anchor
ANCHOR_PY    := $(ANCHOR_VENV)/bin/python
ANCHOR_STAMP := $(ANCHOR_VENV)/.installed

.PHONY: bench bench-quick bench-logs

$(ANCHOR_STAMP): | $(STAMP)
	test -x $(ANCHOR_PY) || $(PYTHON) -m venv $(ANCHOR_VENV)
	$(ANCHOR_PY) -m pip install --quiet --upgrade pip
	$(ANCHOR_PY) -m pip install --quiet \
		"apache-airflow==$$($(PY) -c 'from importlib.metadata import version; print(version("apache-airflow"))')" \
		apache-airflow-providers-google
	touch $(ANCHOR_STAMP)

bench: $(STAMP) $(ANCHOR_STAMP)
	$(PY) -m benchmarks --anchor-python $(ANCHOR_PY) --out docs/benchmarks.md

# Section 5 alone (replica logs streamed into task logs: Logging reads per interval with 10/100/1,000
# jobs, print -> task log delay), replaced in docs/benchmarks.md; it needs no anchor venv.
bench-logs: $(STAMP)
	$(PY) -m benchmarks --only logs --no-anchor --replace-sections --out docs/benchmarks.md

# Tiny counts, only to keep the benchmarks working (uses the anchor venv when it exists).
bench-quick: $(STAMP)
	$(PY) -m benchmarks --quick
