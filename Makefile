# Two entry points do all set-up on a fresh machine:
#   make demo   log the sklearn example and validate its repository on a real local Triton server
#   make test   run the whole test suite (numpy 1.26 venv), then unit + property tests again under numpy 2
PYTHON ?= python3
VENV ?= .venv
VENV_NUMPY2 ?= .venv-numpy2
# torch is pinned: this version's CPU wheel is what the project is tested with (an unpinned torch pulls a CUDA build).
# .venv gets the `local` extra (the bundled Triton server, which needs numpy<2); .venv-numpy2 does without it, and its
# unit tests include the message `mlflow-triton check|serve` print when the extra is missing.
TORCH ?= torch==2.13.0
PIP_FLAGS ?= --disable-pip-version-check -q

.PHONY: demo test test-fast bench soak venv venv-numpy2 clean

demo: venv
	$(VENV)/bin/python -m examples.runner sklearn

test: venv venv-numpy2
	$(VENV)/bin/python -m pytest -p no:cacheprovider
	$(VENV_NUMPY2)/bin/python -m pytest -p no:cacheprovider tests/unit tests/property

bench: venv
	$(VENV)/bin/python -m benchmarks.run

# 10,000 valid and hostile requests on the real Triton; exits 1 on a wrong answer, a runtime-detected client
# error answered 5xx, an unexpected answer, a server not ready afterwards or stub RSS growth over 20 MiB.
soak: venv
	$(VENV)/bin/python -m benchmarks.soak --results benchmarks/soak-results.md

test-fast: venv
	$(VENV)/bin/python -m pytest -p no:cacheprovider tests/unit tests/property

venv: $(VENV)/.installed
venv-numpy2: $(VENV_NUMPY2)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(VENV)/bin/python -m pip install $(PIP_FLAGS) "$(TORCH)" "numpy<2" -e ".[tests,torch,transformers,onnx,local]"
	touch $@

$(VENV_NUMPY2)/.installed: pyproject.toml
	test -x $(VENV_NUMPY2)/bin/python || $(PYTHON) -m venv $(VENV_NUMPY2)
	$(VENV_NUMPY2)/bin/python -m pip install $(PIP_FLAGS) --upgrade pip
	$(VENV_NUMPY2)/bin/python -m pip install $(PIP_FLAGS) "$(TORCH)" "numpy>=2" -e ".[tests,torch,transformers,onnx]"
	touch $@

clean:
	rm -rf $(VENV) $(VENV_NUMPY2) .work
