"""The tests' own expected answer: ``pyfunc.predict``'s output as the tensors Triton must send back.

Built in numpy from the prediction and the tensor types declared in ``config.pbtxt``, by the fidelity
campaign's rules (:func:`tests.support.fidelity.expectations.expected_answer`), never by the runtime's
codecs: an encoder defect would otherwise look the same on both sides of the comparison. Every e2e
answer check builds its expectation here (``tests/unit/local_triton/test_independent_oracle.py`` asserts it).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from mlflow_triton.repository.config import declarations, read_config
from tests.support.fidelity.expectations import Answer, expected_answer

__all__ = ["ExpectedAnswers", "expected_example_tensors", "expected_tensors"]


def expected_tensors(model_dir: str | Path, prediction: object) -> dict[str, np.ndarray]:
    """``{output tensor: array}`` Triton must answer for ``prediction`` under ``model_dir/config.pbtxt``."""
    config, contract = read_config(Path(model_dir) / "config.pbtxt")
    _, outputs = declarations(config)
    answer = expected_answer(contract, outputs, prediction=prediction)
    if not isinstance(answer, Answer):
        raise AssertionError(
            f"pyfunc.predict's prediction does not fit the configured outputs of {model_dir}: {answer}"
        )
    return answer.outputs


def expected_example_tensors(model_uri: str | Path, model_dir: str | Path) -> dict[str, np.ndarray]:
    """:func:`expected_tensors` of ``pyfunc.predict`` on the input example saved under ``model_dir/1/artifact``
    (with the example's params, which the shipped request carries as its parameters, when it has some)."""
    value, params = _input_example(model_dir)
    return ExpectedAnswers(model_uri, model_dir).for_input(value, params=params)


class ExpectedAnswers:
    """One loaded ``pyfunc`` model; :meth:`for_input` is :func:`expected_tensors` of its prediction."""

    def __init__(self, model_uri: str | Path, model_dir: str | Path) -> None:
        import mlflow.pyfunc

        self.model = mlflow.pyfunc.load_model(str(model_uri))
        self.model_dir = Path(model_dir)

    def for_input(self, value: object, params: dict[str, object] | None = None) -> dict[str, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. unknown categories, which the soak's model encodes as zeros
            prediction = self.model.predict(value, params=params) if params else self.model.predict(value)
        return expected_tensors(self.model_dir, prediction)


def _input_example(model_dir):
    from mlflow.models import Model

    artifact = Path(model_dir) / "1" / "artifact"
    model = Model.load(str(artifact / "MLmodel"))
    return model.load_input_example(str(artifact)), model.load_input_example_params(str(artifact))
