"""Generated signatures, models and inputs, end to end on one real Triton 2.51 (issue #12).

Each case (``tests/property/fidelity_strategies.py``) is logged with ``mlflow_triton.sklearn`` or
``mlflow_triton.pytorch.log_model`` to a local sqlite store, loaded into a Triton server shared by
the whole module (explicit model-control mode: loaded, checked, unloaded), and every answer --
the shipped request, then other inputs as JSON and with the binary tensor extension -- must equal
``pyfunc.predict`` of the same input on the logged model, or be the error the README promises
(see ``tests/support/fidelity/expectations.py``). Cases the package must refuse are asserted with
their messages.

Why ``@given`` running one case per example: each example is a real model on a real server (about 6 s,
nearly all of it Triton starting the model's Python stub), so Hypothesis drives the cases one by one
and, on a failure, shrinks to the smallest failing case and prints it -- a ``Case(...)`` to paste into
``@example`` -- plus a ``@reproduce_failure`` blob. ``@seed`` makes a run replayable: the seed is fresh
per run and printed at the start and end of the session (``FIDELITY_SEED=<seed>`` replays it).
``FIDELITY_CASES`` sets how many served cases (default 12), ``FIDELITY_REJECTIONS`` how
many rejections (default 12). About one served draw in seven has nested columns (Array / Object /
Array(Object), mapping version 5) and requests with a malformed nested row. The long campaign with a
report is ``make fidelity`` (``tests/support/fidelity/run.py``).
"""

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, reject, seed, settings

from mlflow_triton.repository.request_files import triton_json_double
from tests.property.fidelity_strategies import rejected_cases, served_cases
from tests.support.fidelity.campaign import Campaign
from tests.support.fidelity.cases import Case, Field, Input, Malformed, Output
from tests.support.fidelity.seed import SEED, SUMMARIES

pytestmark = [pytest.mark.triton, pytest.mark.filterwarnings("ignore")]

CASES = int(os.environ.get("FIDELITY_CASES", "12"))
REJECTIONS = int(os.environ.get("FIDELITY_REJECTIONS", "12"))
CAMPAIGN_SETTINGS = dict(
    deadline=None,
    database=None,
    print_blob=True,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    work_dir = tmp_path_factory.mktemp("fidelity")
    with Campaign.open(work_dir, progress=print) as opened:
        yield opened
        report = opened.report(SEED)
        (work_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
        SUMMARIES.append(report)


@seed(SEED)
@settings(max_examples=CASES, **CAMPAIGN_SETTINGS)
@given(case=served_cases())
@example(
    case=Case(  # integer column labels in and out, text with NUL bytes, binary with trailing zeros
        "sklearn-recipe",
        "columns",
        (Field(0, "int64"), Field("a b", "text"), Field("a_b", "binary")),
        (Output(3, 0, "flip"), Output("t", 1, "text"), Output(0, 2, "binary")),
        "frame",
        False,
        (
            Input(((2,), (2,), (2,)), ((1, -(2**63)), ("ü\x00", ""), (b"ab\x00\x00", b""))),
            Input(((3,), (3,), (3,)), ((2**63 - 1, 0, -1), ("名前", "\n", "a\x00"), (b"\xff\x00", b"\x00", b"x"))),
            Input(((0,), (0,), (0,)), ((), (), ())),
        ),
        (("serialization", "cloudpickle"),),
    )
)
@example(
    case=Case(  # FP16 in and out, -1 on inner axes, NaN and infinities
        "pytorch-recipe",
        "tensor",
        (Field("x", "float16", (-1, 2, -1)),),
        (Output(None, 0, "flip"),),
        "array",
        True,
        (
            Input(((1, 2, 1),), ((0.5, -1.0),)),
            Input(((2, 2, 3),), ((float("nan"), float("inf"), -0.0, 65504.0, 6e-08, -1.0) * 2,)),
        ),
    )
)
@example(
    case=Case(  # a prediction that does not fit the declared INT8 output: 500 naming the tensor
        "sklearn-recipe",
        "tensor",
        (Field(None, "int64", (-1,)),),
        (Output(None, 0, "echo", "int8"),),
        "array",
        True,
        (Input(((2,),), ((1, -5),)), Input(((2,),), ((127, 128),)), Input(((1,),), ((-128,),))),
        (("serialization", "skops"),),
    )
)
@example(
    case=Case(  # found by the campaign: Triton reads -1.8585403758418125e-246 from JSON as ...23e-246
        "sklearn-recipe",
        "tensor",
        (Field(" ", "float64", (-1,)),),
        (Output("__", 0, "echo"), Output(".", 0, "text")),
        "dict",
        True,
        (
            Input(((3,),), ((0.0, -1.8585403758418125e-246, 123456789012345.67),)),
            Input(((1,),), ((0.1,),)),
            Input(((2,),), ((-1.8585403758418125e-246, 5e-324),)),
        ),
        (("serialization", "cloudpickle"), ("fixed_width", False)),
    )
)
@example(
    case=Case(  # an object array of bytes is a text output: answered while UTF-8, else 500 naming it
        "sklearn-recipe",
        "columns",
        (Field("t", "text"),),
        (Output("raw", 0, "binary"),),
        "dict",
        False,
        (Input(((2,),), (("ü", ""),)), Input(((1,),), (("a\x00",),)), Input(((0,),), ((),))),
        (("serialization", "skops"), ("fixed_width", False)),
    )
)
@example(
    case=Case(  # found by the campaign: a binary output in a JSON answer is not JSON (shipped request.json)
        "sklearn-recipe",
        "tensor",
        (Field(None, "float32", (-1, 2)),),
        (Output(None, 0, "binary"),),
        "array",
        False,
        (Input(((1, 2),), ((2.5, -2.0),)), Input(((2, 2),), ((0.5, 1.0, -2.0, 3.0),))),
        (("serialization", "cloudpickle"), ("fixed_width", True)),
    )
)
@example(
    case=Case(  # outputs without elements: Triton 2.51 leaves "data" out of such a JSON output (F3)
        "sklearn-recipe",
        "tensor",
        (Field(None, "int64", (-1, -1)),),
        (Output("same", 0, "echo"), Output("words", 0, "text")),
        "dict",
        True,
        (Input(((1, 2),), ((3, -4),)), Input(((2, 0),), ((),)), Input(((0, 2),), ((),))),
        (("serialization", "cloudpickle"), ("fixed_width", False)),
    )
)
@example(
    case=Case(  # dynamic batching: inputs sent at once are joined; NaN fails its own request
        "sklearn-pipeline",
        "columns",
        (Field("x", "float64"), Field("t", "text")),
        (Output(None, 0, "predict"),),
        "array",
        False,
        (
            Input(((3,), (3,)), ((0.5, -1.0, 2.5), ("a", "b", "a"))),  # the proof needs 3 distinct rows
            Input(((1,), (1,)), ((3.0,), ("ü",))),
            Input(((3,), (3,)), ((float("nan"), 1.0, 2.0), ("a", "", "名前"))),
            Input(((4,), (4,)), ((1.0, 2.0, 3.0, 4.0), ("a", "b", "a", "b"))),
        ),
        (("estimator", "logistic-proba"), ("serialization", "cloudpickle"), ("seed", 1), ("max_batch_size", 8)),
    )
)
@example(
    case=Case(  # NaN in an input column maps (#22.6), and so does the echoed optional output column (masks, #33.5)
        "sklearn-recipe",
        "columns",
        (Field("x", "float64"), Field("n", "int64")),
        (Output("out", 0, "echo"),),
        "frame",
        False,
        (Input(((2,), (2,)), ((float("nan"), 1.0), (1, 2))),),
        (("serialization", "cloudpickle"),),
    )
)
@example(
    case=Case(  # nested columns (JSON text per row): Array(float) with NaN, an Object, Array(Object); malformed rows
        "sklearn-recipe",
        "columns",
        (
            Field("vec", 'json:{"items":{"type":"float"},"type":"array"}'),
            Field(
                "rec",
                'json:{"properties":{"id":{"required":true,"type":"long"},"\\u540d \\"k\\"":{"items":{"type":"string"},'
                '"required":true,"type":"array"}},"type":"object"}',
            ),
            Field(
                3,
                'json:{"items":{"properties":{"label":{"required":true,"type":"string"},"n":{"required":true,'
                '"type":"integer"},"score":{"required":true,"type":"double"}},"type":"object"},"type":"array"}',
            ),
            Field("x", "float64"),
        ),
        (Output("same", 0, "echo"), Output("size", 1, "length"), Output(7, 2, "wrap"), Output("back", 2, "reverse")),
        "frame",
        False,
        (
            Input(
                ((2,), (2,), (2,), (2,)),
                (
                    ([0.5, float("nan"), -2.0], [3.4028234663852886e38]),
                    ({"id": 2**63 - 1, '名 "k"': ["ü", ""]}, {"id": -1, '名 "k"': ["\x00"]}),
                    ([{"label": "a", "score": 0.1, "n": 2**31 - 1}], [{"label": "🎉", "score": -0.0, "n": -(2**31)}]),
                    (1.5, -2.0),
                ),
            ),
            Input(
                ((3,), (3,), (3,), (3,)),
                (
                    ([], [float("inf"), 1.401298464324817e-45], [float("nan")]),
                    ({"id": 0, '名 "k"': []}, {"id": 1, '名 "k"': ["名前"]}, {"id": -(2**63), '名 "k"': ["e\u0301"]}),
                    ([], [{"label": "", "score": 5e-324, "n": 0}], [{"label": "x", "score": float("nan"), "n": 1}]),
                    (0.0, 1.0, 2.0),
                ),
            ),
            Input(((0,), (0,), (0,), (0,)), ((), (), (), ())),
        ),
        (("serialization", "cloudpickle"), ("json_style", "ascii")),
        (
            Malformed(1, 0, 2, "[0.5, 1.5", "bad-json"),
            Malformed(1, 0, 1, "[0.1]", "narrow"),
            Malformed(0, 2, 0, '[{"label": "a", "score": 0.5, "n": 2147483648}]', "narrow"),
            Malformed(0, 0, 1, '["x"]', "wrong-type"),
            Malformed(1, 1, 0, '{"id": 5}', "missing-property"),
            Malformed(1, 2, 2, '[{"label": "a", "n": 1}]', "missing-property"),
        ),
    )
)
def test_real_triton_answers_like_pyfunc_when_a_generated_case_is_served(campaign, case):
    rejection = campaign.expected_rejection(case)
    if rejection is not None:  # drawn now and then (a prediction of the example that does not fit its output)
        campaign.reject(case, rejection)
        reject()  # checked, but not one of the served cases counted towards FIDELITY_CASES

    campaign.serve(case)


@seed(SEED)
@settings(max_examples=REJECTIONS, **CAMPAIGN_SETTINGS)
@given(case=rejected_cases())
@example(
    case=Case(  # a fixed-width str input: the message says `fixed-width str` (F4)
        "sklearn-recipe",
        "tensor",
        (Field("s", "fixed-text"),),
        (Output(None, 0, "echo"),),
        "array",
        True,
        (Input(((2,),), (("ab", "c"),)),),
        (("serialization", "cloudpickle"),),
    )
)
@example(
    case=Case(  # a fixed-width bytes input: the message says `fixed-width bytes` (F4)
        "sklearn-recipe",
        "tensor",
        (Field(None, "fixed-binary"),),
        (Output(None, 0, "echo"),),
        "array",
        False,
        (Input(((2,),), ((b"ab", b"c"),)),),
        (("serialization", "cloudpickle"),),
    )
)
@example(
    case=Case(  # a timezone-aware datetime column: MLflow's enforcement refuses it, so does logging (#22.6)
        "sklearn-recipe",
        "columns",
        (Field("when", "datetime-utc"), Field("n", "int64")),
        (Output("out", 1, "echo"),),
        "frame",
        False,
        (Input(((2,), (2,)), ((0, 86400), (1, 2))),),
        (("serialization", "cloudpickle"),),
    )
)
def test_log_model_refuses_naming_the_field_when_a_generated_case_cannot_be_served(campaign, case):
    rejection = campaign.expected_rejection(case)
    assert rejection is not None, case.describe()

    campaign.reject(case, rejection)


def test_triton_json_double_predicts_what_real_triton_reads_when_float64_values_travel_as_json(campaign):
    """The request writer's model of Triton's JSON number parsing, checked on the real server."""
    generator = np.random.default_rng(SEED)
    values = np.concatenate(
        [
            generator.normal(0.0, 10.0, 300),
            generator.integers(0, 2**63, 300, dtype=np.int64).view(np.float64),
            [-1.8585403758418125e-246, 123456789012345.67, 0.1, 5e-324, -0.0],
        ]
    )
    values = values[np.isfinite(values)]
    case = Case(
        "sklearn-recipe",
        "tensor",
        (Field(None, "float64", (-1,)),),
        (Output(None, 0, "text"),),
        "array",
        False,
        (Input(((1,),), ((0.5,),)),),
        (("serialization", "cloudpickle"),),
    )
    with campaign.loaded(case) as model:
        model.wait()
        [output] = [name for name, _ in model.output_types]
        answers = {encoding: model.infer({model.input_tensors[0]: values}, encoding) for encoding in ("json", "binary")}

    seen = {encoding: [float(text) for text in outputs[output]] for encoding, (_, outputs) in answers.items()}
    assert [status for status, _ in answers.values()] == [200, 200]
    assert seen["json"] == [triton_json_double(repr(value)) for value in values.tolist()]
    assert seen["binary"] == values.tolist()
    assert sum(a != b for a, b in zip(seen["json"], seen["binary"])) > 0  # JSON does change some values


# Found by the campaign (FIDELITY_SEED=11, ``python -m tests.support.fidelity.run --nested --cases 6``): Triton
# carries a model's error as a C string, so a NUL byte in a column name cut the message right after ``(field `` --
# the row of a malformed nested value (and the rest of the reason) never reached the client. The runtime writes a
# U+0000 of a message as ``\x00``.
NUL_NAMED_NESTED_COLUMN = Case(
    "sklearn-recipe",
    "columns",
    (Field("\x00", 'json:{"items":{"type":"double"},"type":"array"}'),),
    (Output("out", 0, "echo"),),
    "frame",
    False,
    (Input(((2,),), (([0.5], [1.5, -2.0]),)), Input(((1,),), (([],),)), Input(((2,),), (([5e-324], [0.25]),))),
    (("serialization", "cloudpickle"), ("json_style", "compact")),
    (Malformed(0, 0, 1, "[5e-324", "bad-json"),),
)


def test_a_malformed_nested_row_is_named_when_its_column_name_holds_a_nul_byte(campaign):
    campaign.serve(NUL_NAMED_NESTED_COLUMN)
