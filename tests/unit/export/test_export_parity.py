"""The parity check's pieces: tolerances, infinities, generated integer ranges; the writer's clean-up."""

import numpy as np
import pytest

from mlflow_triton.export import _parity, _tensors, _writer
from mlflow_triton.export._errors import ParityError


def _output(data_type, computed_as=None):
    return _tensors.ExportedTensor("y", None, None, data_type, (-1,), (1,), computed_as=computed_as)


@pytest.mark.parametrize(
    ("data_type", "computed_as", "expected"),
    [
        ("TYPE_FP64", None, (1e-6, 1e-9)),  # as `mlflow-triton check` compares FP64
        ("TYPE_FP64", "TYPE_FP32", (1e-4, 1e-5)),  # a Cast widened an FP32 computation
        ("TYPE_FP32", None, (1e-4, 1e-5)),
        ("TYPE_INT64", None, None),
    ],
)
def test_tolerance_uses_the_datatype_the_graph_computes_in_when_an_output_is_widened(data_type, computed_as, expected):
    assert _parity.tolerance(_output(data_type, computed_as)) == expected


class _Source:
    class layout:
        class contract:
            class inputs:
                fields = ()


def _comparison():
    comparison = _parity._Comparison.__new__(_parity._Comparison)
    comparison.source, comparison.largest = _Source(), {"y": 0.0}
    return comparison


def test_parity_check_accepts_equal_infinities_recording_no_difference_when_both_sides_answer_inf():
    both = np.array([np.inf, -np.inf, 1.0])
    comparison = _comparison()

    comparison._check(_output("TYPE_FP64"), both, both.copy(), "here", [{"x": np.zeros(3)}], 0)

    assert comparison.largest == {"y": 0.0}


def test_parity_check_raises_when_only_one_side_answers_inf():
    with pytest.raises(ParityError, match=r"element \[0\], is 1\.0 from onnxruntime but inf from pyfunc"):
        _comparison()._check(_output("TYPE_FP64"), np.array([np.inf]), np.array([1.0]), "here", [{"x": np.zeros(1)}], 0)


def test_integer_range_widens_the_example_when_it_holds_one_value():
    assert _parity._integer_range(np.array([7]), np.dtype(np.int64)) == (-3, 17)
    assert _parity._integer_range(np.array([2, 40]), np.dtype(np.uint8)) == (0, 78)


def test_write_directory_removes_the_parents_it_created_when_creating_a_deeper_one_fails(tmp_path, monkeypatch):
    real_mkdir = type(tmp_path).mkdir

    def mkdir(path, *args, **kwargs):
        if path.name == "c":
            raise PermissionError("no")
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(type(tmp_path), "mkdir", mkdir)

    with pytest.raises(PermissionError, match="no"):
        _writer.write_directory(tmp_path / "a" / "b" / "c", "m_onnx", lambda staging: None)
    assert list(tmp_path.iterdir()) == []
