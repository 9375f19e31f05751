"""ONNX cases: the graphs MLflow's ONNX tests log (``tests/onnx/test_onnx_model_export.py``), rebuilt here.

Logged with plain ``mlflow.onnx.log_model`` and brought in with ``mlflow_triton.add_repository``. The test's
``onnx_model`` fixture (a small torch ``Sequential`` trained 5 epochs on iris, exported with ``torch.onnx.export``
and a dynamic batch axis) and ``multi_tensor_onnx_model`` are exported as the test exports them; its resource files
(``tf_model_multiple_inputs_float64.onnx``, ``..._float32.onnx``: ``first_input:0 * second_input:0``;
``sklearn_model.onnx``: a scikit-learn classifier converted by skl2onnx, ZipMap and all) are rebuilt with
``onnx.helper`` and skl2onnx. The tests log without an ``input_example``: each case gives the test's inference
data (3 rows), and says so.
"""

from __future__ import annotations

from .case import ONNX_EXPORT, Built, case_table

case = case_table("onnx", ONNX_EXPORT)
EXAMPLE_NOTE = "the test logs without input_example: 3 rows of its inference data are the example"


def _iris_frame():
    """The ``data`` fixture: iris as a frame (float64) and its target."""
    import numpy as np
    import pandas as pd
    from sklearn import datasets

    iris = datasets.load_iris()
    data = pd.DataFrame(data=np.c_[iris["data"], iris["target"]], columns=iris["feature_names"] + ["target"])
    return data.drop("target", axis=1), data["target"]


def _trained(module, features, target, split=False):
    """Five epochs of SGD on the iris rows as float32, as the ``model`` fixtures train."""
    import torch

    inputs = torch.tensor(features.values, dtype=torch.float32)
    labels = torch.tensor(target.values, dtype=torch.float32)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01)
    torch.manual_seed(0)
    module.train()
    for _ in range(5):
        for start in range(0, len(inputs), 16):
            batch = inputs[start : start + 16]
            optimizer.zero_grad()
            predicted = module(*torch.split(batch, 2, 1)) if split else module(batch)
            torch.nn.functional.mse_loss(predicted.squeeze(dim=1), labels[start : start + 16]).backward()
            optimizer.step()
    return module.eval()


def _exported(module, sample, **export_kwargs):
    import tempfile

    import onnx
    import torch

    path = tempfile.mkdtemp(prefix="corpus-onnx-") + "/model.onnx"
    torch.onnx.export(module, sample, path, dynamo=False, **export_kwargs)
    return onnx.load(path)


def _onnx_model():
    """The ``onnx_model`` fixture: Linear(4, 3), ReLU, Linear(3, 1), exported with input ``input``, batch dynamic."""
    import torch

    features, target = _iris_frame()
    module = _trained(
        torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)), features, target
    )
    sample = torch.tensor(features.values[:5], dtype=torch.float32)
    return _exported(module, sample, dynamic_axes={"input": {0: "batch"}}, input_names=["input"]), features, target


@case("torch-log-evaluate", "test_model_log_evaluate_pyfunc_format", note=EXAMPLE_NOTE, route="add-repository")
def torch_log_evaluate() -> Built:
    model, features, _ = _onnx_model()
    return Built(model, {"input_example": features.head(3)})


@case(
    "torch-signature-xy-example",
    "test_signature_and_examples_are_saved_correctly",
    note="signature infer_signature(x, y) (its output column `target` is not the graph's output name), "
    "example x.head(3)",
    route="add-repository",
)
def torch_signature_xy_example() -> Built:
    from mlflow.models import infer_signature

    model, features, target = _onnx_model()
    return Built(model, {"signature": infer_signature(features, target), "input_example": features.head(3)})


@case(
    "torch-example-no-signature",
    "test_signature_and_examples_are_saved_correctly",
    note="example x.head(3), no signature (MLflow infers one from the example)",
    route="add-repository",
)
def torch_example_no_signature() -> Built:
    model, features, _ = _onnx_model()
    return Built(model, {"input_example": features.head(3)})


@case(
    "torch-external-data",
    "test_model_log_load[True]",
    note="save_as_external_data=True; " + EXAMPLE_NOTE,
    route="add-repository",
)
def torch_external_data() -> Built:
    model, features, _ = _onnx_model()
    return Built(model, {"save_as_external_data": True, "input_example": features.head(3)})


@case(
    "torch-session-options",
    "test_model_save_load_pyfunc_format_with_session_options",
    note="onnx_session_options (sequential, level 99, 19 intra-op threads); " + EXAMPLE_NOTE,
    route="add-repository",
)
def torch_session_options() -> Built:
    model, features, _ = _onnx_model()
    options = {"execution_mode": "sequential", "graph_optimization_level": 99, "intra_op_num_threads": 19}
    return Built(model, {"onnx_session_options": options, "input_example": features.head(3)})


@case(
    "torch-cpu-provider",
    "test_inference_session_always_receives_providers[providers1]",
    note="onnx_execution_providers=['CPUExecutionProvider']; " + EXAMPLE_NOTE,
    route="add-repository",
)
def torch_cpu_provider() -> Built:
    model, features, _ = _onnx_model()
    return Built(model, {"onnx_execution_providers": ["CPUExecutionProvider"], "input_example": features.head(3)})


@case(
    "torch-metadata-registered",
    "test_log_model_calls_register_model",
    note="registered as AdsModel1, metadata as test_model_log_with_metadata; " + EXAMPLE_NOTE,
    route="add-repository",
)
def torch_metadata_registered() -> Built:
    model, features, _ = _onnx_model()
    return Built(
        model,
        {
            "registered_model_name": "AdsModel1",
            "metadata": {"metadata_key": "metadata_value"},
            "input_example": features.head(3),
        },
    )


@case(
    "multi-tensor",
    "test_model_save_evaluate_pyfunc_format_multi_tensor",
    note="inputs sepal_features and petal_features (float32), output target; the test predicts a dict of "
    "arrays: 3 rows of it are the example",
    route="add-repository",
)
def multi_tensor() -> Built:
    import numpy as np
    import torch

    class MyModel(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.linear = torch.nn.Linear(n, 1)

        def forward(self, sepal_features, petal_features):
            return self.linear(torch.cat((sepal_features, petal_features), dim=-1))

    features, target = _iris_frame()
    module = _trained(MyModel(4), features, target, split=True)
    sample = torch.split(torch.tensor(features.values[:5], dtype=torch.float32), 2, 1)
    model = _exported(
        module,
        sample,
        dynamic_axes={"sepal_features": [0], "petal_features": [0]},
        do_constant_folding=True,
        input_names=["sepal_features", "petal_features"],
        output_names=["target"],
    )
    values = features.values.astype(np.float32)
    return Built(model, {"input_example": {"sepal_features": values[:3, :2], "petal_features": values[:3, 2:4]}})


def _product_graph(elem_type):
    """``tf_model_multiple_inputs_float64/32.onnx``: ``first_input:0 * second_input:0``, each of shape (-1,)."""
    import onnx
    from onnx import helper

    inputs = [helper.make_tensor_value_info(name, elem_type, [None]) for name in ("first_input:0", "second_input:0")]
    output = helper.make_tensor_value_info("Identity:0", elem_type, [None])
    node = helper.make_node("Mul", ["first_input:0", "second_input:0"], ["Identity:0"])
    graph = helper.make_graph([node], "multiple_inputs", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _multiple_inputs_frame():
    """The ``data_multiple_inputs`` fixture (seeded): two random float64 columns."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    return pd.DataFrame({"first_input:0": rng.random(10), "second_input:0": rng.random(10)})


@case(
    "multiple-inputs-float64",
    "test_model_save_load_evaluate_pyfunc_format_multiple_inputs[False]",
    note="the resource tf_model_multiple_inputs_float64.onnx rebuilt with onnx.helper; " + EXAMPLE_NOTE,
    route="add-repository",
)
def multiple_inputs_float64() -> Built:
    from onnx import TensorProto

    return Built(_product_graph(TensorProto.DOUBLE), {"input_example": _multiple_inputs_frame().head(3)})


@case(
    "multiple-inputs-float32",
    "test_pyfunc_representation_of_float32_model_casts_and_evaluates_float64_inputs",
    note="the resource tf_model_multiple_inputs_float32.onnx rebuilt with onnx.helper (float32 inputs, MLflow "
    "casts float64); " + EXAMPLE_NOTE,
    route="add-repository",
)
def multiple_inputs_float32() -> Built:
    from onnx import TensorProto

    return Built(_product_graph(TensorProto.FLOAT), {"input_example": _multiple_inputs_frame().head(3)})


@case(
    "sklearn-zipmap",
    "test_pyfunc_predict_supports_models_with_list_outputs",
    note="the resource sklearn_model.onnx rebuilt: LogisticRegression on iris converted by skl2onnx (outputs "
    "a label and a ZipMap, a dict of probabilities per row); " + EXAMPLE_NOTE,
    route="add-repository",
)
def sklearn_zipmap() -> Built:
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    features, target = _iris_frame()
    classifier = LogisticRegression(max_iter=500).fit(features.values.astype("float32"), target.astype(int))
    model = to_onnx(classifier, features.values[:1].astype("float32"), target_opset=17)
    return Built(model, {"input_example": features.head(3)})


CASES = tuple(case.cases)  # type: ignore[attr-defined]
