"""Nested-schema cases: custom pyfunc models whose signatures use MLflow's ``Array``, ``Object`` and ``Map`` types.

Each follows one of the nested-type tests of ``tests/pyfunc/test_pyfunc_schema_enforcement.py`` (and
``tests/models/test_model_input_examples.py``): the test's identity ``MyModel`` (``predict`` returns its input)
and the test's data, with the signature the test logs (``infer_signature(data)``, ``infer_signature(df)`` -- inputs
only -- or its explicit ``ModelSignature``). The ``tests/models/test_signature.py`` cases log a model answering
the test's ``model_output`` record per row (a list of dicts) under ``infer_signature(model_input, model_output)``.
As in :mod:`.cases_pyfunc`, the ``PythonModel`` classes are defined inside the builders, so cloudpickle stores
them by value and loading does not need ``tests/``.

MLflow's tests log these models with ``signature=`` only and then predict their ``data``: the cases give that
``data`` as the ``input_example`` too, so that ``mlflow-triton check`` has a request to send (each note says so).
The project maps nested columns as mapping version 5: one BYTES element of JSON text per row.
"""

from __future__ import annotations

from .case import INPUT_EXAMPLES, PYFUNC_SCHEMA_ENFORCEMENT, Built, case_table

case = case_table("pyfunc", PYFUNC_SCHEMA_ENFORCEMENT)
examples_case = case_table("pyfunc", INPUT_EXAMPLES)
#: MLflow's signature tests (not in .case: that file lists the files the other cases come from).
SIGNATURE = "tests/models/test_signature.py"
DATA_NOTE = "the test logs with signature= only and predicts its data: the data is the input_example too"


def _identity(with_context: bool = False):
    """The tests' ``MyModel``: ``predict(self, context, model_input, params=None)`` returns ``model_input``.

    ``with_context``: the variant of ``test_pyfunc_model_schema_enforcement_with_objects_and_arrays``, whose
    ``load_context`` sets ``self.pipeline`` and whose ``predict`` asserts it.
    """
    import mlflow

    class MyModel(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    class MyModelWithContext(mlflow.pyfunc.PythonModel):
        def load_context(self, context):
            self.pipeline = "pipeline"

        def predict(self, context, model_input, params=None):
            assert self.pipeline == "pipeline"
            return model_input

    return MyModelWithContext() if with_context else MyModel()


def _inferred(data, with_context: bool = False, example=None):
    """``log_model(python_model=MyModel(), signature=infer_signature(data))``, with ``data`` as the example."""
    from mlflow.models import infer_signature

    return Built(
        _identity(with_context),
        {"signature": infer_signature(data), "input_example": data if example is None else example},
    )


# --- test_pyfunc_model_schema_enforcement_with_objects_and_arrays: infer_signature(data), inputs only ---------

OBJECTS_AND_ARRAYS = "test_pyfunc_model_schema_enforcement_with_objects_and_arrays"


@case("nested-array-of-strings-add", OBJECTS_AND_ARRAYS, note=DATA_NOTE, route="add-repository")
def array_of_strings() -> Built:
    """``{"query": ["sentence_1", "sentence_2"]}``: one row, ``query: Array(string)``."""
    return _inferred({"query": ["sentence_1", "sentence_2"]}, with_context=True)


@case("nested-object-wrapper", OBJECTS_AND_ARRAYS, note=DATA_NOTE)
def object_column() -> Built:
    """``{"query": {"a": "a", "b": 1}}``: one row, ``query: Object(a: string, b: long)``."""
    return _inferred({"query": {"a": "a", "b": 1}}, with_context=True)


@case("nested-array-and-string-wrapper", OBJECTS_AND_ARRAYS, note=DATA_NOTE)
def array_and_string() -> Built:
    """``{"query": [...], "table": "some_table"}``: ``query: Array(string)``, ``table: string``."""
    return _inferred({"query": ["sentence_1", "sentence_2"], "table": "some_table"}, with_context=True)


@case("nested-array-of-objects-optional-add", OBJECTS_AND_ARRAYS, note=DATA_NOTE, route="add-repository")
def array_of_objects_optional() -> Built:
    """``query: Array(Object(name: string, age: long optional))``, ``table: Array(string)``."""
    data = {"query": [{"name": "value", "age": 10}, {"name": "value"}], "table": ["some_table"]}
    return _inferred(data, with_context=True)


@case("nested-records-optional-column-wrapper", OBJECTS_AND_ARRAYS, note=DATA_NOTE)
def records_optional_column() -> Built:
    """Two records, the second without ``table``: ``query: Array(string)``, ``table: string (optional)``."""
    data = [{"query": ["sentence_1", "sentence_2"], "table": "some_table"}, {"query": ["sentence_1", "sentence_2"]}]
    return _inferred(data, with_context=True)


# --- test_pyfunc_model_scoring_with_objects_and_arrays: records with optional object properties -------------


@case(
    "nested-scoring-records-array-of-objects-add",
    "test_pyfunc_model_scoring_with_objects_and_arrays",
    note=DATA_NOTE,
    route="add-repository",
)
def scoring_records_array_of_objects() -> Built:
    """Two records of ``query: Array(Object(name, age optional))`` and ``table: Array(string)``."""
    data = [
        {"query": [{"name": "value"}, {"name": "value"}], "table": ["some_table"]},
        {"query": [{"name": "value", "age": 10}, {"name": "value"}], "table": ["some_table"]},
    ]
    return _inferred(data)


# --- test_pyfunc_model_schema_enforcement_nested_array: infer_signature(df), df from records ----------------


def _from_records(data):
    import pandas as pd

    frame = pd.DataFrame.from_records(data)
    return _inferred(frame)


@case("nested-array-of-arrays-wrapper", "test_pyfunc_model_schema_enforcement_nested_array", note=DATA_NOTE)
def array_of_arrays() -> Built:
    """``netsed_list`` (sic, the test's name): ``Array(Array(string))``, two rows of ragged lists."""
    return _from_records({"netsed_list": [[["a", "b"], ["c", "d"]], [["e", "f"], ["g"]]]})


@case(
    "nested-numpy-2d-array-add",
    "test_pyfunc_model_schema_enforcement_nested_array",
    note=DATA_NOTE + "; the cell is a 2-D int32 ndarray: Array(Array(integer))",
    route="add-repository",
)
def numpy_2d_array() -> Built:
    import numpy as np

    return _from_records({"numpy_2d_array": [np.array([[np.int32(1), np.int32(2)], [np.int32(3), np.int32(4)]])]})


@case("nested-list-of-np-array-wrapper", "test_pyfunc_model_schema_enforcement_nested_array", note=DATA_NOTE)
def list_of_np_array() -> Built:
    """``list_of_np_array``: each cell a list holding one string ndarray: ``Array(Array(string))``."""
    import numpy as np

    return _from_records({"list_of_np_array": [[np.array(["a", "b"])], [np.array(["c", "d"])]]})


# --- test_pyfunc_model_schema_enforcement_map_type: ModelSignature(inputs=schema, outputs=schema) ------------

MAP_TYPE = "test_pyfunc_model_schema_enforcement_map_type"


def _map_case(data, schema) -> Built:
    import pandas as pd
    from mlflow.models import ModelSignature

    frame = pd.DataFrame.from_records(data)
    return Built(_identity(), {"signature": ModelSignature(inputs=schema, outputs=schema), "input_example": frame})


@case("nested-map-long-add", MAP_TYPE, note=DATA_NOTE + "; one row is an empty map", route="add-repository")
def simple_map() -> Built:
    from mlflow.types.schema import ColSpec, DataType, Map, Schema

    data = {"simple_map": [{"a": 3, "b": 4}, {}, {"c": 5}]}
    return _map_case(data, Schema([ColSpec(Map(value_type=DataType.long), name="simple_map")]))


@case("nested-map-of-maps-wrapper", MAP_TYPE, note=DATA_NOTE)
def nested_map() -> Built:
    from mlflow.types.schema import ColSpec, DataType, Map, Schema

    data = {"nested_map": [{"a": {"a1": 3, "a2": 4}, "b": {"b1": 5}}, {}, {"c": {}}]}
    return _map_case(data, Schema([ColSpec(Map(value_type=Map(value_type=DataType.long)), name="nested_map")]))


@case("nested-array-in-map-add", MAP_TYPE, note=DATA_NOTE, route="add-repository")
def array_in_map() -> Built:
    from mlflow.types.schema import Array, ColSpec, DataType, Map, Schema

    data = {"array_in_map": [{"a": [1, 2, 3], "b": [4, 5]}, {}, {"c": []}]}
    return _map_case(data, Schema([ColSpec(Map(value_type=Array(dtype=DataType.long)), name="array_in_map")]))


@case("nested-object-in-map-wrapper", MAP_TYPE, note=DATA_NOTE)
def object_in_map() -> Built:
    from mlflow.types.schema import ColSpec, DataType, Map, Object, Property, Schema

    data = {"object_in_map": [{"a": {"key1": "a1", "key2": 1}, "b": {"key1": "b1"}}, {}, {"c": {"key1": "c1"}}]}
    value = Object([Property("key1", DataType.string), Property("key2", DataType.long, required=False)])
    return _map_case(data, Schema([ColSpec(Map(value_type=value), name="object_in_map")]))


@case("nested-map-in-array-add", MAP_TYPE, note=DATA_NOTE + "; one row is an empty list", route="add-repository")
def map_in_array() -> Built:
    from mlflow.types.schema import Array, ColSpec, DataType, Map, Schema

    data = {"map_in_array": [[{"a": 3, "b": 4}, {"c": 5}], [], [{"d": 6}]]}
    return _map_case(data, Schema([ColSpec(Array(dtype=Map(value_type=DataType.long)), name="map_in_array")]))


@case("nested-map-in-object-wrapper", MAP_TYPE, note=DATA_NOTE)
def map_in_object() -> Built:
    from mlflow.types.schema import ColSpec, DataType, Map, Object, Property, Schema

    data = {"map_in_object": [{"key1": {"a": 3, "b": 4}, "key2": {"c": 5}}, {"key1": {"d": 6}}]}
    value = Object(
        [
            Property("key1", Map(value_type=DataType.long)),
            Property("key2", Map(value_type=DataType.long), required=False),
        ]
    )
    return _map_case(data, Schema([ColSpec(value, name="map_in_object")]))


# --- test_pyfunc_model_schema_enforcement_complex -----------------------------------------------------------


@case("nested-complex-add", "test_pyfunc_model_schema_enforcement_complex", note=DATA_NOTE, route="add-repository")
def complex_records() -> Built:
    """An Object column with an optional property, a string column and an ``Array(Object)`` column."""
    import pandas as pd

    data = [
        {
            "object_column": {"query": ["sentence_1", "sentence_2"], "table": "some_table"},
            "string_column": "some_string",
            "array_column": [{"name": "value"}, {"name": "value"}],
        },
        {
            "object_column": {"query": ["sentence_1", "sentence_2"]},
            "string_column": "some_string",
            "array_column": [{"name": "value"}],
        },
    ]
    return _inferred(pd.DataFrame.from_records(data))


# --- test_input_example_validation_during_logging: the signature inferred from the example ------------------

VALIDATION = "test_input_example_validation_during_logging"


def _validating(example, expected_records):
    """The test's ``MyModel``: asserts it received ``expected_input`` (here ``pd.DataFrame(expected_records)``),
    returns ``{"output": "some prediction"}``.

    The frame is built inside ``predict``: a pickled DataFrame (pandas 3 string columns) would need pyarrow to
    load, and MLflow does not capture it (its requirement inference runs ``predict`` on the raw example, where
    the assertion fails).
    """
    import mlflow

    class MyModel(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            import pandas as pd

            pd.testing.assert_frame_equal(model_input, pd.DataFrame(expected_records))
            return {"output": "some prediction"}

    return Built(MyModel(), {"input_example": example})


@case(
    "nested-validation-arrays-of-strings-wrapper",
    VALIDATION,
    note="a records example with two Array(string) columns, a dict output",
)
def validation_arrays_of_strings() -> Built:
    example = [{"a": ["sentence1", "sentence2"], "b": ["answer1", "answer2"]}]
    return _validating(example, [dict(record) for record in example])


@case(
    "nested-validation-messages-add",
    VALIDATION,
    note="{'messages': [{'role', 'content'}]}: one Array(Object) row, a dict output",
    route="add-repository",
)
def validation_messages() -> Built:
    example = {"messages": [{"role": "user", "content": "some question"}]}
    return _validating(example, [{"messages": [{"role": "user", "content": "some question"}]}])


# --- test_pyfunc_model_input_example_with_params: a dict-of-lists example with params -----------------------


def _sample_params_basic():
    from .cases_pyfunc import _sample_params_basic as params

    return params()


@case(
    "nested-params-dict-of-lists-wrapper",
    "test_pyfunc_model_input_example_with_params",
    note="example ({'a': ['a', 'b', 'c'], 'b': 'b'}, sample_params_basic): one row, a: Array(string); "
    "the output signature is the same nested schema",
)
def params_dict_of_lists() -> Built:
    return Built(_identity(), {"input_example": ({"a": ["a", "b", "c"], "b": "b"}, _sample_params_basic())})


# --- tests/models/test_model_input_examples.py ---------------------------------------------------------------


@examples_case(
    "nested-signature-disabled-add",
    "test_infer_signature_from_example_can_be_disabled",
    note="the test's signature=False on a pyfunc identity model with a nested example (the test logs an "
    "sklearn model and np.array([[1]]))",
    route="add-repository",
)
def signature_disabled() -> Built:
    return Built(_identity(), {"input_example": {"query": ["sentence_1", "sentence_2"]}, "signature": False})


# --- tests/models/test_signature.py: signatures inferred from (model_input, model_output) -------------------

signature_case = case_table("pyfunc", SIGNATURE)


def _answering(model_input, model_output, signature=None, example=None):
    """A ``PythonModel`` answering, per input row, the test's one output record (a list of dicts per row), logged
    with ``infer_signature(model_input, model_output)`` (or ``signature``) and ``model_input`` (or ``example``)
    as the example."""
    import copy

    import mlflow
    from mlflow.models import infer_signature

    answer = copy.deepcopy(model_output[0])

    class Answering(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return [copy.deepcopy(answer) for _ in range(len(model_input))]

    signature = signature or infer_signature(model_input=model_input, model_output=model_output)
    return Built(Answering(), {"signature": signature, "input_example": model_input if example is None else example})


@signature_case(
    "nested-signature-nested-array-strings-wrapper",
    "test_infer_signature_on_nested_array",
    note="queries: Array(Array(string)) with an empty list -> answers: Array(Array(string)); the model answers "
    "the test's model_output per row; model_input is the example",
)
def signature_nested_array_strings() -> Built:
    return _answering([{"queries": [["a", "b", "c"], ["d", "e"], []]}], [{"answers": [["f", "g"], ["h"]]}])


@signature_case(
    "nested-signature-nested-array-ndarrays-add",
    "test_infer_signature_on_nested_array",
    note="inputs: Array(Array(Array(string))) from 2-D string ndarrays -> outputs: Array(integer) from "
    "np.int32; the model answers the test's model_output per row; the example is model_input with the "
    "ndarrays as nested lists (MLflow refuses ndarrays inside a list example: TensorsNotSupportedException)",
    route="add-repository",
)
def signature_nested_array_ndarrays() -> Built:
    import numpy as np

    arrays = [np.array([["a", "b"], ["c", "d"]]), np.array([["e", "f"], ["g", "h"]])]
    example = [{"inputs": [array.tolist() for array in arrays]}]
    return _answering([{"inputs": arrays}], [{"outputs": [np.int32(5), np.int32(6)]}], example=example)


@signature_case(
    "nested-signature-list-of-dictionaries-add",
    "test_infer_signature_on_list_of_dictionaries",
    note="query: string -> output: string, candidate_ids / candidate_sources: Array(string); the model answers "
    "the test's model_output per row; model_input is the example",
    route="add-repository",
)
def signature_list_of_dictionaries() -> Built:
    model_output = [
        {
            "output": "Output from the LLM",
            "candidate_ids": ["412", "1233"],
            "candidate_sources": ["file1.md", "file201.md"],
        }
    ]
    return _answering([{"query": "test query"}], model_output)


@signature_case(
    "nested-signature-rag-wrapper",
    "test_signature_for_rag",
    note="ModelSignature(rag_signatures.ChatCompletionRequest(), ChatCompletionResponse()): messages: "
    "Array(Object(content, role)) -> choices: Array(Object(finish_reason, index: long, message: Object)), "
    "object: string; the test only builds the signature: a model answering one chat.completion per row, a "
    "one-message example",
)
def signature_rag() -> Built:
    from mlflow.models import ModelSignature, rag_signatures

    signature = ModelSignature(
        inputs=rag_signatures.ChatCompletionRequest(), outputs=rag_signatures.ChatCompletionResponse()
    )
    choice = {"index": 0, "message": {"role": "assistant", "content": "an answer"}, "finish_reason": "stop"}
    return _answering(
        [{"messages": [{"role": "user", "content": "a question"}]}],
        [{"choices": [choice], "object": "chat.completion"}],
        signature,
    )


CASES = (*case.cases, *examples_case.cases, *signature_case.cases)  # type: ignore[attr-defined]
