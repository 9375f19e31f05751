"""`mlflow-triton locate|kserve` and `check|serve --from-store`: parsed here, run by `mlflow_triton.deploy`."""

import subprocess
import sys

import pytest

from mlflow_triton import cli


def test_parser_reads_locate_options_when_every_option_is_given():
    args = cli.build_parser().parse_args(
        [
            "locate",
            "models:/churn@champion",
            "--artifacts-destination",
            "s3://bucket/mlartifacts",
            "--tracking-uri",
            "http://mlflow:5000",
            "--no-access-check",
        ]
    )

    assert (args.subcommand.name, args.model_uri, args.artifacts_destination, args.tracking_uri, args.check_access) == (
        "locate",
        "models:/churn@champion",
        "s3://bucket/mlartifacts",
        "http://mlflow:5000",
        False,
    )


def test_parser_uses_kserve_defaults_when_only_the_uri_is_given():
    args = cli.build_parser().parse_args(["kserve", "models:/churn/3"])

    assert (args.name, args.triton_version, args.gpus, args.service_account, args.out) == (None, "24.10", 0, None, None)


@pytest.mark.parametrize(
    "argv",
    [["kserve", "m", "--gpus", "-1"], ["kserve", "m", "--gpus", "two"], ["locate"], ["kserve"], ["locate", "a", "b"]],
)
def test_main_exits_2_when_store_command_arguments_are_invalid(argv):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)

    assert exited.value.code == 2


@pytest.mark.parametrize(
    ("command", "function"), [("check", "check_from_store_command"), ("serve", "serve_from_store_command")]
)
def test_main_calls_the_deploy_part_when_from_store_is_given(monkeypatch, command, function):
    import mlflow_triton.deploy

    calls = []
    monkeypatch.setattr(mlflow_triton.deploy, function, lambda *args, **kwargs: calls.append((args, kwargs)) or 5)

    status = cli.main([command, "models:/a/1", "--from-store", "--artifacts-destination", "s3://b/p"])

    assert status == 5
    ((args, kwargs),) = calls
    assert (args, kwargs["artifacts_destination"], kwargs["tracking_uri"]) == ((["models:/a/1"],), "s3://b/p", None)


def test_main_calls_kserve_command_with_the_parsed_arguments_when_kserve_runs(monkeypatch, tmp_path):
    import mlflow_triton.deploy

    calls = []
    monkeypatch.setattr(
        mlflow_triton.deploy, "kserve_command", lambda *args, **kwargs: calls.append((args, kwargs)) or 0
    )

    status = cli.main(["kserve", "models:/a/1", "--name", "churn", "--gpus", "2", "--out", str(tmp_path / "i.yaml")])

    assert status == 0
    assert calls == [
        (
            ("models:/a/1",),
            {
                "name": "churn",
                "triton_version": "24.10",
                "gpus": 2,
                "service_account": None,
                "artifacts_destination": None,
                "tracking_uri": None,
                "out_file": tmp_path / "i.yaml",
                "overwrite": False,
            },
        )
    ]


@pytest.mark.parametrize("command", ["locate", "kserve"])
def test_help_imports_neither_mlflow_nor_the_deploy_part_when_printed(command):
    probe = (
        "import sys; from mlflow_triton import cli\n"
        f"try:\n    cli.main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m == 'mlflow' or m.startswith('mlflow_triton.deploy')))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)

    assert completed.stdout.splitlines()[-1] == "[]"
