"""A corpus case: one model from one of MLflow's flavor tests, and how that test logs it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

#: The MLflow test files the cases come from (paths in MLflow's repository).
SKLEARN_EXPORT = "tests/sklearn/test_sklearn_model_export.py"
SKLEARN_AUTOLOG = "tests/sklearn/test_sklearn_autolog.py"
INPUT_EXAMPLES = "tests/models/test_model_input_examples.py"
PYTORCH_EXPORT = "tests/pytorch/test_pytorch_model_export.py"
TRANSFORMERS_EXPORT = "tests/transformers/test_transformers_model_export.py"
XGBOOST_EXPORT = "tests/xgboost/test_xgboost_model_export.py"
LIGHTGBM_EXPORT = "tests/lightgbm/test_lightgbm_model_export.py"
STATSMODELS_EXPORT = "tests/statsmodels/test_statsmodels_model_export.py"
PYFUNC_CLASS_ARTIFACTS = "tests/pyfunc/test_model_export_with_class_and_artifacts.py"
PYFUNC_LOADER_MODULE = "tests/pyfunc/test_model_export_with_loader_module_and_data_path.py"
PYFUNC_SCHEMA_ENFORCEMENT = "tests/pyfunc/test_pyfunc_schema_enforcement.py"
CATBOOST_EXPORT = "tests/catboost/test_catboost_model_export.py"
SENTENCE_TRANSFORMERS_EXPORT = "tests/sentence_transformers/test_sentence_transformers_model_export.py"
ONNX_EXPORT = "tests/onnx/test_onnx_model_export.py"
KERAS_SAVE = "tests/keras/test_save.py"
KERAS_INPUT_TYPES = "tests/keras/test_pyfunc_model_works_with_all_input_types.py"
SPACY_EXPORT = "tests/spacy/test_spacy_model_export.py"
PMDARIMA_EXPORT = "tests/pmdarima/test_pmdarima_model_export.py"
PROPHET_EXPORT = "tests/prophet/test_prophet_model_export.py"
PYFUNC_CHAT_MODEL = "tests/pyfunc/test_chat_model.py"
PYFUNC_CHAT_AGENT = "tests/pyfunc/test_chat_agent.py"
PYFUNC_RESPONSES_AGENT = "tests/pyfunc/test_responses_agent.py"
PYFUNC_TYPE_HINTS = "tests/pyfunc/test_pyfunc_model_with_type_hints.py"

#: The flavors, named as MLflow names them (``mlflow.<flavor>`` logs a case brought in with add_repository).
FLAVORS = (
    "sklearn",
    "pytorch",
    "transformers",
    "xgboost",
    "lightgbm",
    "catboost",
    "statsmodels",
    "sentence_transformers",
    "onnx",
    "keras",
    "spacy",
    "pmdarima",
    "prophet",
    "pyfunc",
)
#: The flavors issue 41 added that only ``make corpus`` runs, not CI's sample: Keras, spaCy, Prophet and pmdarima live
#: in the corpus' own environment (``.venv-corpus``, Makefile), and ONNX's serving environment would be one more
#: build in CI's budget.
CORPUS_ONLY_FLAVORS = ("onnx", "keras", "spacy", "pmdarima", "prophet")
#: How a case reaches Triton: its wrapper's log_model, or plain ``mlflow.<flavor>.log_model`` + add_repository.
ROUTES = ("wrapper", "add-repository")


@dataclasses.dataclass(frozen=True)
class Built:
    """A case's model and the keyword arguments of ``log_model`` (``input_example``, ``signature``, ...); for a case
    brought in with ``add_repository``, those of ``add_repository`` too (``input_example`` where MLflow's flavor
    cannot save one: a user's ``mlflow-triton add-repository URI --input FILE``)."""

    model: Any
    log_kwargs: dict[str, Any]
    add_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Case:
    """``id`` (unique, ``<flavor>-...``), the MLflow test (``<file>::<test>``), what differs from it, the builder."""

    id: str
    flavor: str
    mlflow_test: str
    build: Callable[[], Built]
    note: str = ""
    route: str = "wrapper"

    def __post_init__(self) -> None:
        if self.flavor not in FLAVORS:
            raise ValueError(f"case {self.id}: flavor {self.flavor!r} is not one of {FLAVORS}")
        if self.route not in ROUTES:
            raise ValueError(f"case {self.id}: route {self.route!r} is not one of {ROUTES}")
        if "::" not in self.mlflow_test:
            raise ValueError(f"case {self.id}: mlflow_test {self.mlflow_test!r} must read <file>::<test>")


def case_table(
    flavor: str, file: str, adapt: Callable[[Built], Built] | None = None
) -> Callable[..., Callable[[Callable[[], Built]], Callable[[], Built]]]:
    """A decorator factory registering builders as cases of ``flavor`` from MLflow's ``file`` (see ``CASES``).

    ``@case("id", "test_name", note="...")`` above a builder adds ``Case(f"{flavor}-{id}", flavor,
    f"{file}::test_name", builder, note)`` to the list the factory returns as ``case.cases``. With ``adapt``, the
    case builds ``adapt(builder())`` unless it is registered with ``raw=True``.
    """
    registered: list[Case] = []

    def case(
        case_id: str, test: str, *, note: str = "", raw: bool = False, route: str = "wrapper"
    ) -> Callable[[Callable[[], Built]], Callable[[], Built]]:
        def register(builder: Callable[[], Built]) -> Callable[[], Built]:
            build = builder if adapt is None or raw else (lambda: adapt(builder()))
            registered.append(Case(f"{flavor}-{case_id}", flavor, f"{file}::{test}", build, note, route))
            return builder

        return register

    case.cases = registered  # type: ignore[attr-defined]
    return case
