# Two entry points do all set-up on a fresh machine:
#   make demo   log the sklearn example and validate its repository on a real local Triton server
#   make test   lint and type-check (make lint), build the documentation site (make docs: mkdocs build --strict),
#               run the whole test suite (numpy 1.26 venv), then unit + property tests again under numpy 2, the
#               sklearn example served from Python 3.10 and 3.12 environments (each with its stub), and the oldest
#               supported MLflow (3.14, pandas 2): unit + property tests and one real-server check
# and long campaigns on the real Triton:
#   make fidelity [N=1000] [FIDELITY_SEED=...]   N generated cases on one real Triton, report in .work/fidelity/
#   make corpus   MLflow's flavor-test cases logged and checked on the real Triton, docs/mlflow-corpus.md rewritten
#                 (in .venv-corpus: .venv's packages plus the corpus' heavy flavors, never CI's environments)
#   make test-heavy-flavors   the e2e tests of flavors CI does not install (pmdarima), installing them into .venv
# and, outside CI, mutation testing of the comparator, the codecs and the contract (docs/test-oracles.md):
#   make mutation [MUTATION_MODULES="compare conversions codecs contract"]
PYTHON ?= python3
VENV ?= .venv
VENV_NUMPY2 ?= .venv-numpy2
# tests/e2e/test_serving_pythons.py serves the sklearn example from Python 3.12 (logged in .venv, checked with
# --python 3.12) and from Python 3.10, the Python of the Triton 24.x containers: scikit-learn >= 1.8 needs
# Python >= 3.11, so a repository for a 3.10 Triton is logged under 3.10, in .venv-py310. Its interpreter is found
# as `--python 3.10` finds it (PATH, then pyenv); `make PYTHON310=/path/to/python3.10` names another.
PYTHON310 ?= $(shell .ci/find-python 3.10)
VENV_PY310 ?= .venv-py310
# The floor of pyproject's mlflow>=3.14,<4, with the pandas 2 it brings.
MLFLOW_FLOOR ?= mlflow==3.14.*
VENV_MLFLOW_FLOOR ?= .venv-mlflow314
# make corpus: .venv's extras plus Keras 3, spaCy, Prophet and pmdarima (tests/support/mlflow_corpus/requirements.txt),
# installed with torch and numpy<2 held by a constraints file: pip may not move them to satisfy a flavor.
VENV_CORPUS ?= .venv-corpus
CORPUS_REQUIREMENTS ?= tests/support/mlflow_corpus/requirements.txt
# torch is pinned: this version's CPU wheel is what the project is tested with (an unpinned torch pulls a CUDA build).
# .venv gets the `local` extra (the bundled Triton server, which needs numpy<2); .venv-numpy2 does without it, and its
# unit tests include the message `mlflow-triton check|serve` print when the extra is missing.
TORCH ?= torch==2.13.0
PIP_FLAGS ?= --disable-pip-version-check -q
# Unit and property tests are CPU-bound and independent: pytest-xdist spreads them over the cores (`make XDIST=` runs
# them in one process). The e2e tests share a server within a module: two workers take a file each at a time, the
# longest files first (tests/e2e/conftest.py; `make XDIST_E2E=` runs them in one process). Servers bind free ports;
# serving environments build atomically.
XDIST ?= -n 2
XDIST_E2E ?= -n 2 --dist loadfile --no-loadscope-reorder
# make fidelity: served cases (rejections: N / 10), and how many are in flight at once
N ?= 1000
FIDELITY_WORKERS ?= 2

# make mutation: cosmic-ray sessions (tests/mutation/<module>.toml), run one after the other, each resumable
MUTATION_MODULES ?= compare conversions codecs contract

.PHONY: demo docs test test-fast test-heavy-flavors test-mlflow-floor lint bench soak fidelity corpus mutation venv \
	venv-numpy2 venv-py310 venv-mlflow-floor venv-corpus soak-batched clean

demo: venv
	$(VENV)/bin/python -m examples.runner sklearn

# The four environments install side by side (3.5 min on the 2-core machine from an empty pip cache, about what
# .venv alone takes), each one's output in one piece; then the legs run one after the other.
test:
	$(MAKE) -j4 --output-sync=target venv venv-numpy2 venv-py310 venv-mlflow-floor
	$(MAKE) lint
	$(MAKE) docs
	$(VENV)/bin/python -m pytest -p no:cacheprovider $(XDIST) tests/unit tests/property
	$(VENV)/bin/python -m pytest -p no:cacheprovider $(XDIST_E2E) --durations=15 -m "not heavy_flavors" tests/e2e
	$(VENV_NUMPY2)/bin/python -m pytest -p no:cacheprovider $(XDIST) tests/unit tests/property
	$(MAKE) test-mlflow-floor

# The e2e tests of flavors CI's environment does not install (pmdarima: marked heavy_flavors, left out of make test),
# with that flavor installed into .venv beside the pinned torch and numpy.
test-heavy-flavors: venv
	$(VENV)/bin/python -m pip freeze | grep -E '^(torch|numpy)==' > $(VENV)/heavy-flavors-constraints.txt
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) -c $(VENV)/heavy-flavors-constraints.txt pmdarima
	$(VENV)/bin/python -m pytest -p no:cacheprovider --durations=15 -m heavy_flavors tests/e2e

# The oldest supported MLflow with pandas 2: unit + property tests, and the sklearn example logged under it and
# proven on the real server (its requirements.txt names mlflow-skinny==3.14.x).
test-mlflow-floor: venv-mlflow-floor
	$(VENV_MLFLOW_FLOOR)/bin/python -m pytest -p no:cacheprovider $(XDIST) tests/unit tests/property
	$(VENV_MLFLOW_FLOOR)/bin/python -m pytest -p no:cacheprovider \
		"tests/e2e/test_runner.py::test_runner_passes_when_example_is_logged_and_served_by_real_triton[sklearn]"

# The documentation site (mkdocs.yml, docs/) into site/: a broken link or anchor, or a page missing from the
# navigation, or a stale reference in the API reference generated from the docstrings (docs/api/, mkdocstrings), fails
# the build (not with --quiet: mkdocs then stops counting warnings). The `docs` extra is in .venv.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/python -m mkdocs build --strict

# ruff's rules and mypy's strictness (strict on the public modules) live in pyproject.toml; .ci/typecheck lays the
# folders out as the import package mlflow_triton for mypy (see docs/contributing.md).
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/python .ci/typecheck

bench: venv
	$(VENV)/bin/python -m benchmarks.run
	$(VENV)/bin/python -m benchmarks.batching
	$(VENV)/bin/python -m benchmarks.streaming

# 10,000 valid and hostile requests on the real Triton; exits 1 on a wrong answer, a runtime-detected client
# error answered 5xx, an unexpected answer, a server not ready afterwards or stub RSS growth over 20 MiB.
soak: venv
	$(VENV)/bin/python -m benchmarks.soak --results benchmarks/soak-results.md

# The same soak against the example logged with max_batch_size=64 (docs/batching.md): batched shapes, 0-row requests
# over each transport (Triton refuses them, 400), shapes claiming 0 rows over a row's bytes and decimal parameters (the
# runtime's 400), rank-one columns (Triton's 400); executions < requests.
soak-batched: venv
	$(VENV)/bin/python -m benchmarks.soak --batched --work-dir .work/soak-batched \
		--results benchmarks/soak-results-batched.md

fidelity: venv
	$(VENV)/bin/python -m tests.support.fidelity.run --cases $(N) --workers $(FIDELITY_WORKERS)

# MLflow's flavor tests as the yardstick: each case logged with the wrapper and proven with `mlflow-triton check`,
# refusals tried with MLflow's scoring server; rewrites docs/mlflow-corpus.md (report in .work/corpus/<UTC time>/).
# Its own environment: the heavy flavors' cases are *not built* where their package is missing (CI's sample needs none).
corpus: venv-corpus
	$(VENV_CORPUS)/bin/python -m tests.support.mlflow_corpus.run --page docs/mlflow-corpus.md

mutation: venv
	test -x $(VENV)/bin/cosmic-ray || $(VENV)/bin/python -m pip install $(PIP_FLAGS) "cosmic-ray>=8.7,<9"
	for module in $(MUTATION_MODULES); do tests/mutation/run.sh $$module $(VENV) || exit 1; done

test-fast: venv
	$(VENV)/bin/python -m pytest -p no:cacheprovider $(XDIST) tests/unit tests/property

venv: $(VENV)/.installed
venv-numpy2: $(VENV_NUMPY2)/.installed
venv-py310: $(VENV_PY310)/.installed
venv-mlflow-floor: $(VENV_MLFLOW_FLOOR)/.installed
venv-corpus: $(VENV_CORPUS)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) "$(TORCH)" "numpy<2" \
		-e ".[tests,torch,transformers,onnx,local,docs,lint]"
	# KServe's SDK models validate the generated InferenceService; kserve pins pandas<3, so without its dependencies
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --no-deps "kserve==0.21.0"
	touch $@

$(VENV_NUMPY2)/.installed: pyproject.toml
	test -x $(VENV_NUMPY2)/bin/python || $(PYTHON) -m venv $(VENV_NUMPY2)
	$(VENV_NUMPY2)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(VENV_NUMPY2)/bin/python -m pip install $(PIP_FLAGS) "$(TORCH)" "numpy>=2" -e ".[tests,torch,transformers,onnx]"
	touch $@

$(VENV_PY310)/.installed: pyproject.toml
	@test -n "$(PYTHON310)" || { echo "make: no Python 3.10 interpreter found (PATH, pyenv); install one or pass PYTHON310=/path/to/python3.10" >&2; exit 1; }
	test -x $(VENV_PY310)/bin/python || $(PYTHON310) -m venv $(VENV_PY310)
	$(VENV_PY310)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(VENV_PY310)/bin/python -m pip install $(PIP_FLAGS) "numpy<2" -e ".[sklearn,local]" skops pytest
	touch $@

$(VENV_MLFLOW_FLOOR)/.installed: pyproject.toml
	test -x $(VENV_MLFLOW_FLOOR)/bin/python || $(PYTHON) -m venv $(VENV_MLFLOW_FLOOR)
	$(VENV_MLFLOW_FLOOR)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(VENV_MLFLOW_FLOOR)/bin/python -m pip install $(PIP_FLAGS) "$(MLFLOW_FLOOR)" "pandas<3" "$(TORCH)" "numpy<2" \
		-e ".[tests,torch,transformers,onnx,local]"
	touch $@

$(VENV_CORPUS)/.installed: pyproject.toml $(CORPUS_REQUIREMENTS)
	test -x $(VENV_CORPUS)/bin/python || $(PYTHON) -m venv $(VENV_CORPUS)
	$(VENV_CORPUS)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	printf '%s\nnumpy<2\n' "$(TORCH)" > $(VENV_CORPUS)/constraints.txt
	$(VENV_CORPUS)/bin/python -m pip install $(PIP_FLAGS) -c $(VENV_CORPUS)/constraints.txt "$(TORCH)" "numpy<2" \
		-e ".[tests,torch,transformers,onnx,local]" -r $(CORPUS_REQUIREMENTS)
	touch $@

clean:
	rm -rf $(VENV) $(VENV_NUMPY2) $(VENV_PY310) $(VENV_MLFLOW_FLOOR) $(VENV_CORPUS) .work site
