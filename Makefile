# Two commands do all the set-up on a fresh machine:
#   make app   — create .venv, install, build the demo store's quick phase if missing, run the app
#                (which builds the rest of the evidence in the background)
#   make test  — create .venv, install (with test tools), run the tests
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STORE  := data_cache/demo.duckdb
MODEL  := data_cache/models/demo-densenet121.pt

# Tests on one worker process more than the cores (at most 5): a part of the time a worker waits on
# Chromium, a Streamlit server, Ray's processes or a subprocess (2 cores: 84 % busy with 3 workers,
# 64-78 % with 2). Each test file on one worker (its module fixtures built once; the Ray cluster and
# engine tests share one file), the longest files first (the order tests/conftest.py gives them);
# PYTEST_PARALLEL= runs them serially. Bytecode is written (a machine may set PYTHONDONTWRITEBYTECODE):
# every Python process the run starts would compile the package and the tests again.
PYTEST_PARALLEL ?= -n $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN) + 1 ))) --maxprocesses 5 --dist loadfile --no-loadscope-reorder

.PHONY: app test test-quick demo demo-evidence train train-extra train-shortcut bench install install-test clean-demo

app: $(STORE)
	$(BIN)/streamlit run app.py

test: $(VENV)/.test-installed
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest $(PYTEST_PARALLEL) --durations=15; status=$$?; if [ $$status -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$status

# The inner loop (about 330 s of CPU, docs/testing.md): the unit and contract tests, without the tests
# marked as driving Chromium, starting Ray or a server, recomputing evidence, or slow (pyproject's markers).
QUICK := not slow and not browser and not ray and not evidence and not server
test-quick: $(VENV)/.test-installed
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "$(QUICK)" --durations=15

demo: $(VENV)/.installed
	$(BIN)/python -m cxrxai demo

train: $(VENV)/.installed
	$(BIN)/python -m cxrxai demo --train

# The second DenseNet-121 (repeatability) and a second architecture (reproducibility), Arun et al.;
# each is trained only when its weights are missing (both ship; delete one to retrain it). Then `make demo`.
train-extra: data_cache/models/demo-densenet121-seed1.pt data_cache/models/demo-resnet18.pt

data_cache/models/demo-densenet121-seed1.pt: | $(VENV)/.installed
	$(BIN)/python -m cxrxai train --seed 1 --name demo-densenet121-seed1

data_cache/models/demo-resnet18.pt: | $(VENV)/.installed
	$(BIN)/python -m cxrxai train --arch resnet18 --name demo-resnet18

# The planted shortcut's model: the ResNet-18 fine-tuned where a marker goes with Nodule. Its weights
# ship (the evidence snapshot's shortcut rows are recomputed with them); delete them to retrain
# (about 4 min on 2 CPU cores; the evidence phase does it by itself when they are missing).
train-shortcut: $(VENV)/.installed
	$(BIN)/python -m cxrxai train-shortcut

bench: $(VENV)/.installed
	$(BIN)/python -m benchmarks.explainers
	$(BIN)/python -m benchmarks.reports
	$(BIN)/python -m benchmarks.app_latency

install: $(VENV)/.installed
install-test: $(VENV)/.test-installed

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.test-installed: requirements.txt requirements-test.txt requirements-ray.txt | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -r requirements-test.txt
	touch $(VENV)/.installed $@

# The quick phase (under a minute: no phantom is rendered, the shipped snapshot holds its numbers): the
# app opens on it and builds the evidence, the phantom films first, in the background.
$(STORE): | $(VENV)/.installed $(MODEL)
	$(BIN)/python -m cxrxai demo --phase quick

# The shipped evidence snapshot (data_cache/evidence: the result tables as Parquet, the maps only
# at their explainer's grid — CAMs, occlusion windows — with their provenance), rebuilt from scratch
# the way the app builds it: the quick phase, then the background build's rounds over every demo
# model (about 2 h 25 min on 2 CPU cores), then the export. A new demo store starts from it;
# tests/pipeline/test_evidence.py recomputes a sample of its rows.
EVIDENCE_STORE := data_cache/evidence-build.duckdb
demo-evidence: $(VENV)/.installed | $(MODEL)
	rm -f $(EVIDENCE_STORE) $(EVIDENCE_STORE).build.json
	$(BIN)/python -m cxrxai demo --phase quick --no-snapshot --store $(EVIDENCE_STORE)
	$(BIN)/python -m cxrxai demo --phase evidence --no-snapshot --store $(EVIDENCE_STORE) \
		--status $(EVIDENCE_STORE).build.json --export-snapshot data_cache/evidence

$(MODEL): | $(VENV)/.installed
	$(BIN)/python -m cxrxai train

clean-demo:
	rm -rf data_cache/demo data_cache/demo.duckdb*
