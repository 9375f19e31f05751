"""The `mlflow-triton` command line: its parser, its help, and what it says when the bundled server is missing."""

import importlib
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_triton import cli
from mlflow_triton.local import TritonInstallation, check_command, serve_command
from mlflow_triton.local import installation as installation_module
from mlflow_triton.local.errors import BundledTritonUnavailableError, TritonInstallError
from mlflow_triton.local.installation import choose_installation
from tests.support.fake_triton import fake_triton

CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], ["check", "serve", "export-onnx"]),
        (
            ["check", "--help"],
            [
                "MODEL_URI",
                "--device",
                "--input",
                "--report",
                "--work-dir",
                "--tritonserver",
                "--backend-directory",
                "--serving-constraint",
                "--tracking-uri",
            ],
        ),
        (
            ["serve", "--help"],
            [
                "MODEL_URI",
                "--host",
                "--http-port",
                "--grpc-port",
                "--metrics-port",
                "--work-dir",
                "--tritonserver",
                "--backend-directory",
                "--serving-constraint",
            ],
        ),
        (
            ["export-onnx", "--help"],
            [
                "MODEL_URI",
                "--out",
                "--max-batch-size",
                "--backend",
                "onnxruntime",
                "python",
                "--tracking-uri",
                "pip install 'mlflow-triton[onnx]'",
            ],
        ),
    ],
)
def test_console_script_prints_help_when_asked_for_every_command(argv, expected):
    completed = subprocess.run([str(CONSOLE_SCRIPT), *argv], capture_output=True, text=True, timeout=60)

    assert completed.returncode == 0, completed.stderr
    assert [word for word in expected if word not in completed.stdout] == []


def help_of(command):
    return " ".join(cli.build_parser()._subparsers._group_actions[0].choices[command].format_help().split())


def test_check_help_lists_every_exit_status_when_printed():
    assert "Exit status: 0 when every model passed, 1 otherwise, 130 after Ctrl-C, 143 after SIGTERM." in help_of(
        "check"
    )


def test_serve_help_says_its_work_dir_holds_no_report_when_printed():
    text = help_of("serve")

    assert "--work-dir DIR where model copies and the Triton log go" in text
    assert "report" not in text


def test_python_m_mlflow_triton_runs_the_same_command_line_when_started_as_a_module():
    completed = subprocess.run(
        [sys.executable, "-m", "mlflow_triton", "serve", "--help"], capture_output=True, text=True, timeout=60
    )

    assert completed.returncode == 0 and completed.stdout.startswith("usage: mlflow-triton serve")


@pytest.mark.parametrize("command", ["check", "export-onnx", "add-repository"])
def test_help_imports_neither_mlflow_nor_the_local_part_nor_the_export_when_printed(command):
    probe = (
        "import sys; from mlflow_triton import cli\n"
        f"try:\n    cli.main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m == 'mlflow' or m.startswith(('mlflow_triton.local', "
        "'mlflow_triton.export'))))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)

    assert completed.stdout.splitlines()[-1] == "[]"


# The program as the console script runs it, with a real SIGINT sent to itself when the command's runner first
# imports MLflow (seconds of start-up on a real machine), before the command's frame takes over, or, for check and
# serve, when they first look for the bundled Triton (without one, as in the numpy 2 leg, they import no MLflow).
CTRL_C_WHILE_STARTING = """
import os, signal, sys

class CtrlCOnImport:  # SIGINT when MLflow is imported, or when check/serve look for the bundled Triton
    def find_spec(self, name, path=None, target=None):
        if name == "mlflow":
            self.ctrl_c()
        return None

    def find_distributions(self, context=None):
        if getattr(context, "name", None) == "nvidia-pytriton":
            self.ctrl_c()
        return []

    def ctrl_c(self):
        sys.meta_path.remove(self)
        os.kill(os.getpid(), signal.SIGINT)

sys.meta_path.insert(0, CtrlCOnImport())
from mlflow_triton.cli import console
sys.exit(console())
"""
#: The same, as the ``mlflow-triton`` program starts (its entry point), with Ctrl-C landing while ``{module}`` is
#: imported: the command line itself, or numpy's extension, which numpy turns into an ``ImportError`` from the
#: ``KeyboardInterrupt`` (``_multiarray_umath failed to import``).
CTRL_C_WHILE_IMPORTING = """
import os, signal, sys

class CtrlCOnImport:
    def find_spec(self, name, path=None, target=None):
        if name in {modules!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlCOnImport())
from mlflow_triton._console import console
sys.exit(console())
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "models:/churn/1"],
        ["serve", "models:/churn/1"],
        ["export-onnx", "models:/churn/1", "--out", "exports"],
        ["pack", "models:/churn/1", "--target", "bundled", "--out", "packed"],
        ["locate", "models:/churn/1"],
        ["kserve", "models:/churn/1", "--out", "isvc.yaml"],
        ["add-repository", "models:/churn/1"],
    ],
    ids=lambda argv: argv[0],
)
def test_command_says_one_line_and_exits_130_when_ctrl_c_lands_while_it_starts(argv, tmp_path):
    """export-onnx and add-repository import MLflow before their frame: ``interrupted (Ctrl-C) while starting``,
    alone; the others import it inside their frame and say their own stop line after their progress lines. Never a
    traceback; nothing left but the work directory check and serve announce (it holds their report and log)."""
    (work := tmp_path / "cwd").mkdir()
    (temporary := tmp_path / "tmp").mkdir()
    completed = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_STARTING, *argv],
        cwd=work,
        env={**os.environ, "TMPDIR": str(temporary)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    lines = completed.stderr.splitlines()
    assert completed.returncode == 130
    assert "Traceback" not in completed.stderr
    assert lines[-1].startswith(f"mlflow-triton {argv[0]}: interrupted (Ctrl-C)")
    if argv[0] in ("export-onnx", "add-repository"):
        assert lines == [f"mlflow-triton {argv[0]}: interrupted (Ctrl-C) while starting; nothing was done"]
    announced = [line.removeprefix("work directory: ") for line in lines if line.startswith("work directory: ")]
    assert list(work.iterdir()) == []
    assert [str(path) for path in temporary.iterdir()] == announced


@pytest.mark.parametrize(
    "modules",
    [("mlflow_triton.cli",), ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath")],
    ids=["the-command-line", "numpy"],
)
@pytest.mark.parametrize("argv", [["locate", "models:/churn/1"], ["check", "models:/churn/1"]], ids=lambda a: a[0])
def test_program_says_one_line_and_exits_130_when_ctrl_c_lands_while_a_module_is_imported(argv, modules, tmp_path):
    """Ctrl-C while the program imports its command line, or while numpy's extension is imported (numpy fails the
    import with an ImportError raised from the KeyboardInterrupt), before or inside a command's frame: the stop's
    line and 130, never a traceback."""
    (temporary := tmp_path / "tmp").mkdir()
    completed = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_IMPORTING.format(modules=modules), *argv],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temporary)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert (completed.returncode, "Traceback" in completed.stderr) == (130, False), completed.stderr
    assert "interrupted (Ctrl-C)" in completed.stderr.splitlines()[-1]


# A real SIGINT once the command has returned and said its outcome: in the last atexit callback, while the
# interpreter shuts down (seconds once MLflow is loaded; Python restores the default handler part-way through it).
CTRL_C_AFTER_THE_END = """
import atexit, os, signal, sys, time

atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.5)))
from mlflow_triton.cli import console
sys.exit(console())
"""


def test_console_keeps_the_commands_exit_status_and_last_line_when_ctrl_c_lands_after_the_command_ended(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-c", CTRL_C_AFTER_THE_END, "export-onnx", "./no-such-model", "--out", "exports"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr and "KeyboardInterrupt" not in completed.stderr
    assert completed.stderr.rstrip().endswith("nothing was written")


def test_parser_maps_each_subcommand_to_its_runner_when_arguments_are_parsed():
    parser = cli.build_parser()

    check = parser.parse_args(
        [
            "check",
            "models:/a/1",
            "runs:/r/m",
            "--device",
            "gpu",
            "--serving-constraint",
            "numpy<2",
            "--serving-constraint",
            "protobuf<5",
        ]
    )
    serve = parser.parse_args(["serve", "models:/a/1", "--host", "0.0.0.0", "--http-port", "9000"])

    assert (check.subcommand.name, check.model_uris, check.device, check.serving_constraint) == (
        "check",
        ["models:/a/1", "runs:/r/m"],
        "gpu",
        ["numpy<2", "protobuf<5"],
    )
    assert (serve.subcommand.name, serve.host, serve.http_port, serve.grpc_port, serve.metrics_port) == (
        "serve",
        "0.0.0.0",
        9000,
        8001,
        8002,
    )
    assert [s.name for s in cli.SUBCOMMANDS] == [
        "check",
        "serve",
        "export-onnx",
        "pack",
        "locate",
        "kserve",
        "add-repository",
    ]


def test_parser_reads_add_repository_options_when_every_option_is_given():
    args = cli.build_parser().parse_args(
        [
            "add-repository",
            "models:/churn@champion",
            "--input",
            "rows.json",
            "--registered-model-name",
            "churn-triton",
            "--name",
            "churn",
            "--triton-model-name",
            "churn_model",
            "--tracking-uri",
            "sqlite:///m.db",
        ]
    )

    assert (
        args.subcommand.name,
        args.model_uri,
        args.input,
        args.registered_model_name,
        args.name,
        args.triton_model_name,
        args.tracking_uri,
    ) == (
        "add-repository",
        "models:/churn@champion",
        Path("rows.json"),
        "churn-triton",
        "churn",
        "churn_model",
        "sqlite:///m.db",
    )


def test_parser_reads_export_onnx_options_when_every_option_is_given():
    args = cli.build_parser().parse_args(
        [
            "export-onnx",
            "runs:/r/m",
            "--out",
            "exports",
            "--max-batch-size",
            "8",
            "--backend",
            "python",
            "--tracking-uri",
            "sqlite:///m.db",
        ]
    )

    assert (args.subcommand.name, args.model_uri, args.out, args.max_batch_size, args.backend, args.tracking_uri) == (
        "export-onnx",
        "runs:/r/m",
        Path("exports"),
        8,
        "python",
        "sqlite:///m.db",
    )


def test_parser_uses_export_onnx_defaults_when_only_the_uri_and_out_are_given():
    args = cli.build_parser().parse_args(["export-onnx", "models:/a/1", "--out", "exports"])

    assert (args.max_batch_size, args.backend, args.tracking_uri) == (64, "onnxruntime", None)


@pytest.mark.parametrize(
    "argv, module, function",
    [
        (["export-onnx", "models:/a/1", "--out", "exports"], "mlflow_triton.export", "export_command"),
        (["pack", "models:/a/1", "--out", "packed"], "mlflow_triton.deploy", "pack_command"),
        (["locate", "models:/a/1"], "mlflow_triton.deploy", "locate_command"),
        (["kserve", "models:/a/1", "--out", "isvc.yaml"], "mlflow_triton.deploy", "kserve_command"),
    ],
)
def test_every_argument_of_a_command_is_a_parameter_of_its_function_when_the_parser_calls_it_by_name(
    monkeypatch, argv, module, function
):
    target = importlib.import_module(module)
    signature = inspect.signature(getattr(target, function))
    bound = []
    monkeypatch.setattr(target, function, lambda *args, **kwargs: bound.append(signature.bind(*args, **kwargs)) or 0)

    assert cli.main(argv) == 0
    assert len(bound) == 1
    parsed = set(vars(cli.build_parser().parse_args(argv))) - {"command", "subcommand"}
    assert len(bound[0].arguments) == len(parsed)  # each one bound (an unknown keyword fails bind), none dropped


def test_main_calls_export_command_with_the_parsed_arguments_when_export_onnx_runs(monkeypatch, tmp_path):
    import mlflow_triton.export

    calls = []
    monkeypatch.setattr(
        mlflow_triton.export, "export_command", lambda *args, **kwargs: calls.append((args, kwargs)) or 7
    )

    status = cli.main(["export-onnx", "models:/a/1", "--out", str(tmp_path), "--backend", "python"])

    assert status == 7
    assert calls == [
        (
            ("models:/a/1", tmp_path),
            {"max_batch_size": 64, "backend": "python", "zero_row_guard": True, "tracking_uri": None},
        )
    ]


def test_main_passes_zero_row_guard_false_to_export_command_when_no_zero_row_guard_is_given(monkeypatch, tmp_path):
    import mlflow_triton.export

    calls = []
    monkeypatch.setattr(mlflow_triton.export, "export_command", lambda *args, **kwargs: calls.append(kwargs) or 0)

    cli.main(["export-onnx", "models:/a/1", "--out", str(tmp_path), "--backend", "python", "--no-zero-row-guard"])

    assert calls[0]["zero_row_guard"] is False


@pytest.mark.parametrize("argv", [["check", "m", "--tritonserver", "/x"], ["serve", "m", "--backend-directory", "/y"]])
def test_main_exits_2_when_only_one_of_tritonserver_and_backend_directory_is_given(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)

    assert exited.value.code == 2
    assert "--tritonserver and --backend-directory go together" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["serve"],
        ["check", "m", "--device", "tpu"],
        ["frobnicate"],
        ["export-onnx", "m"],
        ["export-onnx", "--out", "d"],
        ["export-onnx", "m", "--out", "d", "--backend", "tensorrt"],
        ["export-onnx", "m", "a", "--out", "d"],
    ],
)
def test_main_exits_2_when_arguments_are_invalid(argv):
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)

    assert exited.value.code == 2


@pytest.mark.parametrize("value", ["0", "-3", "eight", "2.5"])
def test_main_exits_2_naming_the_rule_when_max_batch_size_is_not_a_positive_integer(value, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["export-onnx", "m", "--out", "d", "--max-batch-size", value])

    assert exited.value.code == 2
    assert f"argument --max-batch-size: must be an integer >= 1, got {value!r}" in capsys.readouterr().err


@pytest.fixture
def without_nvidia_pytriton(monkeypatch):
    """As if `pip install mlflow-triton` had been run without the `local` extra."""
    real = importlib.metadata.distribution

    def distribution(name):
        if name == "nvidia-pytriton":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)


@pytest.mark.parametrize("command", [check_command, serve_command])
def test_command_names_the_extra_to_install_when_the_bundled_server_is_missing(
    command, without_nvidia_pytriton, tmp_path, capsys
):
    status = command(["models:/any/1"], work_dir=tmp_path / "work", progress=None)

    error = capsys.readouterr().err
    assert status == 1
    assert (
        "the bundled Triton server is not installed: pip install 'mlflow-triton[local]' (or use another Triton "
        "installation: --tritonserver /opt/tritonserver/bin/tritonserver --backend-directory "
        "/opt/tritonserver/backends)" in error
    )


def test_bundled_suggests_tritonserver_when_the_platform_has_no_wheel(monkeypatch):
    monkeypatch.setattr(installation_module.platform, "machine", lambda: "aarch64")

    with pytest.raises(
        BundledTritonUnavailableError,
        match=re.escape(
            "exists only for Linux x86_64, not for linux aarch64: pass --tritonserver PATH --backend-directory DIR"
        ),
    ):
        TritonInstallation.bundled()


def test_bundled_names_the_extra_when_another_nvidia_pytriton_version_is_installed(monkeypatch):
    class Other:
        version = "0.5.5"

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Other())

    with pytest.raises(
        BundledTritonUnavailableError,
        match=re.escape(
            "nvidia-pytriton 0.5.5 is installed; mlflow-triton runs the Triton 2.51.0 of nvidia-pytriton 0.7.0: "
            "pip install 'mlflow-triton[local]'"
        ),
    ):
        TritonInstallation.bundled()


def test_custom_installation_names_the_option_when_the_binary_is_missing(tmp_path):
    with pytest.raises(TritonInstallError, match=r"--tritonserver: no tritonserver binary at .*/nowhere"):
        TritonInstallation.custom(tmp_path / "nowhere", tmp_path)


@pytest.mark.parametrize("option", ["--http-port", "--grpc-port", "--metrics-port"])
@pytest.mark.parametrize("value", ["0", "70000", "-1", "http"])
def test_main_exits_2_naming_the_range_when_a_port_is_not_a_port_number(option, value, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "models:/a/1", option, value])

    assert exited.value.code == 2
    assert f"argument {option}: must be a port number from 1 to 65535, got {value!r}" in capsys.readouterr().err


def test_custom_installation_names_the_option_when_the_binary_is_not_executable(tmp_path):
    binary = tmp_path / "tritonserver"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o644)

    with pytest.raises(TritonInstallError, match=re.escape(f"--tritonserver: {binary} is not executable")):
        TritonInstallation.custom(binary, tmp_path)


@pytest.fixture
def fake_triton_options(tmp_path):
    binary, backends = fake_triton(tmp_path)
    return {"tritonserver": binary, "backend_directory": backends}


def test_check_command_refuses_before_checking_when_the_report_path_is_a_directory(
    fake_triton_options, tmp_path, capsys
):
    status = check_command(
        ["models:/never-fetched/1"],
        report=tmp_path,
        work_dir=tmp_path / "work",
        progress=lambda text: None,
        **fake_triton_options,
    )

    assert (status, capsys.readouterr().err) == (
        1,
        f"mlflow-triton check: error: --report {tmp_path}: a directory; give the path of the JSON file to write\n",
    )


def test_check_command_prints_one_error_line_when_the_report_cannot_be_written(fake_triton_options, tmp_path, capsys):
    (tmp_path / "a-file").write_text("")

    status = check_command(
        [],
        report=tmp_path / "a-file" / "report.json",
        work_dir=tmp_path / "work",
        progress=lambda text: None,
        out=lambda line: None,
        **fake_triton_options,
    )

    assert (status, capsys.readouterr().err) == (1, f"mlflow-triton check: error: File exists: {tmp_path / 'a-file'}\n")


@pytest.fixture
def bundled_without_building(monkeypatch, tmp_path):
    """``TritonInstallation.bundled`` as it returns, without locating the wheel or assembling a backend."""
    bundled = TritonInstallation(
        tmp_path / "tritonserver",
        tmp_path / "backends",
        version="2.51.0",
        serving_constraints=installation_module.BUNDLED_SERVING_CONSTRAINTS,
    )
    monkeypatch.setattr(TritonInstallation, "bundled", classmethod(lambda cls, **kwargs: bundled))


@pytest.mark.parametrize(
    "given, constraints",
    [
        (None, ("numpy<2",)),
        ([], ("numpy<2",)),
        (["protobuf<5"], ("numpy<2", "protobuf<5")),
        (["protobuf<5", "numpy<2", "protobuf<5"], ("numpy<2", "protobuf<5")),
    ],
)
def test_choose_installation_adds_serving_constraints_to_the_bundled_numpy_pin_when_some_are_given(
    given, constraints, bundled_without_building
):
    installation = choose_installation(serving_constraints=given, progress=None)

    assert installation.serving_constraints == constraints


def test_choose_installation_uses_only_the_given_constraints_when_the_installation_is_another_one(tmp_path):
    binary = tmp_path / "bin" / "tritonserver"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (tmp_path / "backends" / "python").mkdir(parents=True)

    installation = choose_installation(binary, tmp_path / "backends", ["protobuf<5"], progress=None)

    assert installation.serving_constraints == ("protobuf<5",)
