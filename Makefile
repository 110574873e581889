# One-command entry points. Every target creates .venv (if missing) and installs fsnn into it first, with the exact
# versions of constraints.txt (pyproject.toml has the ranges a project depending on fsnn gets).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install train lint test test-slow test-cuda bench bench-cuda figures report fixtures docs docs-serve lock clean

# TORCH_INDEX=https://download.pytorch.org/whl/cpu installs torch's CPU build first (the wheel on PyPI is the CUDA
# build, about 6 GB with its GPU libraries); the constraints' version matches it (2.x.y matches 2.x.y+cpu)
TORCH_INDEX ?=

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install --quiet -c constraints.txt torch --index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet -c constraints.txt -e ".[all,test,docs]"
	$(PY) -m pip check
	touch $(STAMP)

install: $(STAMP)

train: $(STAMP)
	$(VENV)/bin/fsnn-train

# ruff over the whole tree, as configured in pyproject.toml: pyflakes, import order, complexity
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: $(STAMP)
	$(PY) -m pytest -n 2 tests

test-slow: $(STAMP)
	$(PY) -m pytest -n 2 -m slow tests

test-cuda: $(STAMP)
	$(PY) -m pytest tests/neurons/test_cuda.py

bench: $(STAMP)
	$(PY) scripts/bench_neurons.py

bench-cuda: $(STAMP)
	$(PY) scripts/bench_neurons.py --device cuda
	$(PY) scripts/bench_train.py --device cuda --batch 16 --neurons sj_lif sj_lif_torch snntorch_leaky flif_torch flif lif
	$(PY) scripts/bench_train.py --device cuda --batch 16 --T 256 --size 32 \
		--neurons sj_lif sj_lif_torch snntorch_leaky flif_torch flif lif --out results/bench/train_step_cuda_T256.json

figures: $(STAMP)
	$(VENV)/bin/fsnn-report figures
	$(PY) docs/examples/demo_neuron.py

# the reproduction report page, results/report/index.html, after what it shows: the paper tables (results/tables)
# and the figures (results/figures) rebuilt from the committed runs' metrics.json
report: $(STAMP)
	$(VENV)/bin/fsnn-report tables > /dev/null
	$(VENV)/bin/fsnn-report figures
	$(VENV)/bin/fsnn-report page

# the documentation site, site/index.html (--strict: a broken link or a missing docstring fails the build)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

# after a deliberate upgrade in .venv: write its exact versions to constraints.txt
lock: $(STAMP)
	{ sed -n '/^#/p' constraints.txt; $(PY) -m pip freeze --all --exclude-editable | grep -v '^pip==\|^fsnn\|^#'; } \
		> constraints.txt.new && mv constraints.txt.new constraints.txt

fixtures: $(STAMP)
	$(PY) -m fsnn.data.fakes.make_fixtures data/fixtures

clean:
	rm -rf $(VENV) .pytest_cache site
