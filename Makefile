# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Each creates its own virtualenv (.venv) and installs the project with its dev extra.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test lint typecheck unit demo clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# pytest exits 5 when it collected no test: that is a failure here, said out loud.
unit: $(STAMP)
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

test: lint typecheck unit

demo: $(STAMP)
	$(VENV)/bin/airflow-vertex-dist demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
