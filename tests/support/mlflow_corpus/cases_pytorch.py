"""PyTorch cases: the modules MLflow's ``tests/pytorch/test_pytorch_model_export.py`` logs, on iris features.

MLflow 3.17's ``mlflow.pytorch.log_model`` saves ``serialization_format="pt2"`` by default (outside Databricks);
the wrapper's default is ``"pickle"`` (a module class it can package). Cases logged as MLflow's test logs them get
the wrapper's default; the ``-pt2`` cases ask for MLflow's default explicitly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..tiny_models import seeded
from .case import PYTORCH_EXPORT, Built, case_table

case = case_table("pytorch", PYTORCH_EXPORT)
EXAMPLE_NOTE = "the test logs without input_example: 3 rows of its data are the example"


def _iris_float32():
    from sklearn import datasets

    return datasets.load_iris().data.astype(np.float32)


def _sequential():
    import torch

    return seeded(lambda: torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)))


def _subclassed():
    import torch

    class SubclassedModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)

        def forward(self, x):
            return self.linear(x)

    return seeded(SubclassedModel)


@case("sequential-log", "test_log_model", note=EXAMPLE_NOTE)
def sequential_log() -> Built:
    return Built(_sequential(), {"input_example": _iris_float32()[:3]})


@case("sequential-pt2", "test_log_model", note="serialization_format='pt2', MLflow 3.17's default")
def sequential_pt2() -> Built:
    return Built(_sequential(), {"input_example": _iris_float32()[:3], "serialization_format": "pt2"})


@case("sequential-scripted", "test_save_and_load_model[True]", note="torch.jit.script(Sequential)")
def sequential_scripted() -> Built:
    import torch

    return Built(torch.jit.script(_sequential()), {"input_example": _iris_float32()[:3]})


@case("sequential-signature-and-example", "test_signature_and_examples_are_saved_correctly")
def sequential_signature_and_example() -> Built:
    from mlflow.models import infer_signature

    data = _iris_float32()
    return Built(_sequential(), {"input_example": data[:3], "signature": infer_signature(data)})


@case("sequential-np-input", "test_pyfunc_model_works_with_np_input_type")
def sequential_np_input() -> Built:
    return Built(_sequential(), {"input_example": _iris_float32()[:5]})


@case("sequential-frame-serve-and-score", "test_pyfunc_serve_and_score", note="a float32 DataFrame example")
def sequential_frame_serve_and_score() -> Built:
    frame = pd.DataFrame(_iris_float32()[:3], columns=["a", "b", "c", "d"])
    return Built(_sequential(), {"input_example": frame})


@case(
    "main-scope-subclass-pickle-module",
    "test_pyfunc_model_serving_with_main_scoped_subclassed_model_and_custom_pickle_module",
    note="pickle_module=mlflow.pytorch.pickle_module",
)
def main_scope_subclass_pickle_module() -> Built:
    import mlflow.pytorch

    return Built(_subclassed(), {"input_example": _iris_float32()[:3], "pickle_module": mlflow.pytorch.pickle_module})


@case(
    "main-scope-subclass",
    "test_pyfunc_model_serving_with_main_scoped_subclassed_model_and_custom_pickle_module",
    note="pickle_module not passed (MLflow's default: the mlflow.pytorch.pickle_module the test passes)",
)
def main_scope_subclass() -> Built:
    return Built(_subclassed(), {"input_example": _iris_float32()[:3]})


@case(
    "main-scope-subclass-pt2",
    "test_pyfunc_model_serving_with_main_scoped_subclassed_model_and_custom_pickle_module",
    note="serialization_format='pt2' instead of the test's pickle_module",
)
def main_scope_subclass_pt2() -> Built:
    return Built(_subclassed(), {"input_example": _iris_float32()[:3], "serialization_format": "pt2"})


@case(
    "module-scope-subclass-code-paths",
    "test_load_model_succeeds_with_dependencies_specified_via_code_paths",
    note="custom_net.TinyMLP from a package of its own, code_paths=[its folder]",
)
def module_scope_subclass_code_paths() -> Built:
    from tests.support.tiny_models import CUSTOM_NET_DIR, fresh_tiny_mlp, mlp_example

    return Built(fresh_tiny_mlp(), {"input_example": mlp_example(3), "code_paths": [str(CUSTOM_NET_DIR)]})


@case(
    "module-scope-subclass",
    "test_pyfunc_model_serving_with_module_scoped_subclassed_model_and_default_conda_env",
    note="custom_net.TinyMLP, a module-scope class of a package of its own, code_paths=[its folder]",
)
def module_scope_subclass() -> Built:
    from tests.support.tiny_models import CUSTOM_NET_DIR, fresh_tiny_mlp, mlp_example

    return Built(fresh_tiny_mlp(), {"input_example": mlp_example(5), "code_paths": [str(CUSTOM_NET_DIR)]})


@case("bert-subclass", "test_pyfunc_serve_and_score_transformers", note="MyBertModel(BertModel) defined in the test")
def bert_subclass() -> Built:
    from transformers import BertConfig, BertModel

    from tests.support.tiny_models import token_ids_example

    class MyBertModel(BertModel):
        def forward(self, *args, **kwargs):
            return super().forward(*args, **kwargs).last_hidden_state

    config = BertConfig(vocab_size=16, hidden_size=2, num_hidden_layers=2, num_attention_heads=2, intermediate_size=2)
    return Built(seeded(lambda: MyBertModel(config)), {"input_example": token_ids_example() % 16})


@case(
    "bert-subclass-code-paths",
    "test_pyfunc_serve_and_score_transformers",
    note="MyBertModel from a package of its own (custom_net.bert), code_paths=[its folder]",
)
def bert_subclass_code_paths() -> Built:
    from tests.support.tiny_models import CUSTOM_NET_DIR, tiny_bert_subclass, token_ids_example

    return Built(tiny_bert_subclass(), {"input_example": token_ids_example(), "code_paths": [str(CUSTOM_NET_DIR)]})


@case("sequential-metadata", "test_model_log_with_metadata", note=EXAMPLE_NOTE)
def sequential_metadata() -> Built:
    return Built(_sequential(), {"input_example": _iris_float32()[:3], "metadata": {"metadata_key": "metadata_value"}})


@case("sequential-signature-inference", "test_model_log_with_signature_inference")
def sequential_signature_inference() -> Built:
    return Built(_sequential(), {"input_example": _iris_float32()[:2]})


@case("sequential-training-mode", "test_log_model", note="the module left in training mode (.train())")
def sequential_training_mode() -> Built:
    return Built(_sequential().train(), {"input_example": _iris_float32()[:3]})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
