"""`python -m examples.runner` refuses, before logging anything, an example that cannot target the device."""

import pytest

from examples.runner.cli import parse_args


@pytest.mark.parametrize("examples", [["sklearn"], ["all"], ["pytorch", "sklearn"]])
def test_runner_refuses_gpu_with_a_clear_message_when_an_example_is_cpu_only(examples, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args([*examples, "--device", "gpu"])

    assert exited.value.code == 2
    assert (
        "--device gpu: the sklearn example cannot target a GPU (mlflow_triton.sklearn logs KIND_CPU repositories "
        "only); run pytorch transformers with --device gpu"
    ) in capsys.readouterr().err


@pytest.mark.parametrize(
    ("examples", "expected"),
    [(["pytorch", "transformers"], ["pytorch", "transformers"]), (["transformers"], ["transformers"])],
)
def test_runner_accepts_gpu_when_every_example_supports_it(examples, expected):
    assert parse_args([*examples, "--device", "gpu"]).examples == expected


def test_runner_expands_all_to_every_example_when_device_is_cpu():
    assert parse_args(["all"]).examples == ["sklearn", "pytorch", "transformers"]
