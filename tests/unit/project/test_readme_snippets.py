"""Every ```python block of README.md and of the docs/ pages runs as written.

The blocks run in reading order (README.md, then the docs/ pages in the navigation
order of mkdocs.yml, then pages not yet in it: ``tests.support.docs_pages``), in one
namespace, in a fresh working directory (so ``sqlite:///mlruns.db`` and relative
paths land there), after a prelude that provides what the pages assume the reader
already has:

* ``fitted_pipeline`` / ``frame``: a fitted scikit-learn Pipeline and its input DataFrame;
* ``net`` / ``batch``: an eval-mode module whose class lives in ``./inference_architecture/``
  (the package the PyTorch snippet names in ``code_paths``) and a float32 batch;
* ``text_pipeline``: a tiny GPT-2 text-generation pipeline (no model hub);
* ``model-repository/iris_classifier``: an existing Triton model directory;
* ``np``: numpy, as the signature snippet uses it.

A block that only builds a ``signature`` is followed by a check that logs a
model with it and the kind of example it describes: that is what the mapping
page shows it for. A block that cannot run is never skipped: it fails its own test
with the traceback. ``ILLUSTRATIVE`` lists the blocks that are not meant to run,
each with the reason (keep it tiny).
"""

import contextlib
import dataclasses
import os
import sys
import traceback

import mlflow
import mlflow.tracking.fluent
import numpy as np
import pytest
from mlflow.tracking._model_registry import utils as registry_utils
from mlflow.tracking._tracking_service import utils as tracking_utils

from tests.support import docs_pages, tiny_models
from tests.support.environment import preserved_environment
from tests.support.mlflow_server import write_triton_repository

ILLUSTRATIVE = {}  # a distinctive line of the block -> why it is not executed

NETWORK_PACKAGE = "inference_architecture"
NETWORK_SOURCE = '''"""The inference-only architecture of the PyTorch example in docs/logging.md."""

import torch


class Network(torch.nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 3))

    def forward(self, x):
        return self.layers(x)
'''


BLOCKS = docs_pages.all_blocks("python")


@dataclasses.dataclass
class Outcome:
    error: "str | None" = None


def _illustrative_reason(block):
    return next((reason for marker, reason in ILLUSTRATIVE.items() if marker in block.code), None)


# --- the prelude --------------------------------------------------------------------------------


def _text_generation_pipeline():
    """A tiny GPT-2 pipeline with room for a prompt plus the 32 new tokens of docs/logging.md."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, pipeline

    tokenizer = tiny_models.shared_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=64,
        n_layer=1,
        n_head=2,
        n_embd=16,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config).eval()
    finally:
        torch.random.set_rng_state(state)
    return pipeline("text-generation", model=model, tokenizer=tokenizer)


@contextlib.contextmanager
def _network_package(directory):
    """Write and import ``inference_architecture`` from ``directory``; forget it afterwards."""
    package = directory / NETWORK_PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text(NETWORK_SOURCE)
    sys.path.insert(0, str(directory))
    try:
        import importlib

        yield importlib.import_module(NETWORK_PACKAGE)
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop(NETWORK_PACKAGE, None)


def _prelude(directory, network, fitted_pipeline, training_frame):
    import torch

    write_triton_repository(directory / "model-repository", "iris_classifier")
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        net = network.Network(hidden=32)
    finally:
        torch.random.set_rng_state(state)
    return {
        "__name__": "readme_snippets",
        "np": np,
        "fitted_pipeline": fitted_pipeline,
        "frame": training_frame,
        "net": net,
        "batch": np.linspace(-1.0, 1.0, 8 * 4, dtype=np.float32).reshape(8, 4),
        "text_pipeline": _text_generation_pipeline(),
    }


@contextlib.contextmanager
def _isolated_mlflow():
    """No tracking URI, registry URI or active experiment leaks in or out of the pages' own set-up."""
    saved = (tracking_utils._tracking_uri, registry_utils._registry_uri, mlflow.tracking.fluent._active_experiment_id)
    with preserved_environment():
        for variable in (
            "MLFLOW_TRACKING_URI",
            "MLFLOW_REGISTRY_URI",
            "MLFLOW_EXPERIMENT_ID",
            "MLFLOW_EXPERIMENT_NAME",
        ):
            os.environ.pop(variable, None)
        tracking_utils._tracking_uri, registry_utils._registry_uri = None, None
        mlflow.tracking.fluent._active_experiment_id = None
        try:
            yield
        finally:
            while mlflow.active_run() is not None:
                mlflow.end_run()
            (
                tracking_utils._tracking_uri,
                registry_utils._registry_uri,
                mlflow.tracking.fluent._active_experiment_id,
            ) = saved


# --- follow-ups: use what a block only builds ----------------------------------------------------


def _log_with_signature(namespace):
    """Log a model with the block's ``signature`` and an example of the kind it declares.

    The mapping page shows an int64 ``(-1, -1)`` input and a float32 ``(-1, -1, n)``
    output: an embedding over token ids, logged with a numpy example.
    """
    import torch

    from mlflow_triton import pytorch, triton

    signature = namespace["signature"]
    [tensor_input], [tensor_output] = signature.inputs.inputs, signature.outputs.inputs
    assert (tensor_input.type, len(tensor_input.shape)) == (np.dtype("int64"), 2), "update this follow-up"
    assert (tensor_output.type, len(tensor_output.shape)) == (np.dtype("float32"), 3), "update this follow-up"
    embedding = torch.nn.Embedding(16, tensor_output.shape[-1]).eval()
    token_ids = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)

    info = pytorch.log_model(embedding, input_example=token_ids, signature=signature, name="embedding")

    outputs = tiny_models.serve_request(triton.load_model(info.model_uri, dst_path="signature-check"))
    np.testing.assert_array_equal(
        list(outputs.values())[0], mlflow.pyfunc.load_model(info.model_uri).predict(token_ids)
    )


def _follow_up(block):
    if "ModelSignature(" in block.code and "log_model(" not in block.code:
        return _log_with_signature
    return None


# --- running the pages ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, fitted_pipeline, training_frame):
    """Run every block once, in order; ``{block.id: Outcome}`` (the error text when it failed)."""
    directory = tmp_path_factory.mktemp("docs")
    results = {}
    with pytest.MonkeyPatch.context() as patch, _isolated_mlflow(), _network_package(directory) as network:
        patch.chdir(directory)
        namespace = _prelude(directory, network, fitted_pipeline, training_frame)
        for block in BLOCKS:
            if _illustrative_reason(block):
                continue
            try:
                exec(compile(block.code, block.where, "exec"), namespace)
                follow_up = _follow_up(block)
                if follow_up is not None:
                    follow_up(namespace)
            except Exception:
                results[block.id] = Outcome(traceback.format_exc(limit=-6))
            else:
                results[block.id] = Outcome()
    return results


def test_readme_blocks_are_found_in_the_readme_and_the_docs_and_every_illustrative_entry_names_one():
    assert {block.page.name for block in BLOCKS} >= {"README.md", "logging.md", "repository.md", "export-onnx.md"}
    assert all(any(marker in block.code for block in BLOCKS) for marker in ILLUSTRATIVE)


RUNNABLE = [block for block in BLOCKS if _illustrative_reason(block) is None]


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.id for block in RUNNABLE])
def test_readme_python_block_runs_as_written(outcomes, block):
    outcome = outcomes[block.id]

    if outcome.error is not None:
        pytest.fail(f"{block.where}: the block failed:\n{outcome.error}", pytrace=False)
