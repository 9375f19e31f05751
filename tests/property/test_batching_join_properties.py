"""Joined requests make exactly the model input that their own inputs joined by ``pd.concat`` make (runtime 2.9.0).

The batched runtime joins the decoded columns of its requests and builds one DataFrame (``join_fields``), or,
where that could differ, joins each request's own frame as before (``join_inputs``). For frames with optional
columns (missing values), datetimes, text, binary, bools and numbers, cut into requests of one or more rows: what
``join_fields`` joins is, dtype for dtype and value for value, the requests' own frames concatenated.
"""

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from mlflow_triton.runtime.batching import join_fields
from tests.property.strategies import adapted_column_frames
from tests.property.test_codec_properties import codec_for


@st.composite
def frames_cut_into_requests(draw):
    """``(schema, [frame of each request])``: an adapted frame of at least two rows cut at 1 to 3 places."""
    schema, frame = draw(adapted_column_frames().filter(lambda schema_frame: len(schema_frame[1]) >= 2))
    cuts = draw(st.lists(st.integers(1, len(frame) - 1), min_size=1, max_size=3, unique=True))
    edges = [0, *sorted(cuts), len(frame)]
    return schema, [frame.iloc[start:end].reset_index(drop=True) for start, end in zip(edges, edges[1:])]


@given(frames_cut_into_requests())
def test_joined_fields_make_the_frame_the_requests_own_frames_make_when_concatenated(schema_parts):
    schema, parts = schema_parts
    codec = codec_for(schema, "input", integer_dims=True)
    decoded = [codec.decode_fields(codec.to_tensors(part)) for part in parts]
    expected = pd.concat([codec.value_of(fields) for fields in decoded], ignore_index=True)

    joined = join_fields(decoded, lambda spec, arrays: spec.typed_alike(arrays))  # as the runtime checks columns

    if joined is not None:  # else the runtime joins the requests' own frames: `expected` itself
        actual = codec.value_of(joined)
        pd.testing.assert_frame_equal(actual, expected, check_exact=True)
        for column in expected.columns:  # None stays None, NaN stays NaN, bytes stay bytes
            assert [type(v) for v in actual[column]] == [type(v) for v in expected[column]]
            assert all(a is b or a == b or (a != a and b != b) for a, b in zip(actual[column], expected[column]))
