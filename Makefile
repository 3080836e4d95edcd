# The two commands of the README: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
MCODER := $(VENV)/bin/mcoder
DEMO ?= demo-out

.PHONY: demo test test-slow test-vllm lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

test: $(VENV)/.installed
	$(PY) -m pytest -q

test-slow: $(VENV)/.installed
	$(PY) -m pytest -q -m slow

demo: $(VENV)/.installed
	$(MCODER) dataset build examples/problems --out $(DEMO)/problems.jsonl --overwrite

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache
