"""`mlflow-triton pack` end to end: a packed repository served by the real Triton 2.51 from a bare start.

One archive serves three proofs: the packed sklearn example, loaded by a server started as ``env -i`` would
(``PATH=/usr/bin:/bin``, only the server's own libraries, no serving virtualenv, a system Python without numpy or
mlflow), answers its shipped request like ``pyfunc.predict`` (through ``mlflow-triton check DIR``); the same
model directory without ``EXECUTION_ENV_PATH`` fails to load with the missing-package error; and with a backend
directory whose default stub is of another Python it still loads, from the stub the bundled target ships. Then
the console script packs a model a user's own script logged, and Ctrl-C during packing leaves nothing. The
environment is the one ``check`` builds and caches for the same requirements (reused, never changed). Never
skipped in CI.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_triton.local import TritonInstallation, TritonServer, check_command, validate_repository
from mlflow_triton.local.errors import TritonStartError
from mlflow_triton.local.installation import stub_python_version
from tests.support.oracle import expected_example_tensors
from tests.support.processes import LineReader, processes_mentioning, stop_politely, triton_processes_under
from tests.support.tree_digest import changes, tree_digest

REPO_ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("mlflow-triton")
USER_SCRIPT = REPO_ROOT / "tests" / "support" / "user_script.py"
RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"
STUB = "triton_python_backend_stub"

pytestmark = pytest.mark.triton


def unpacked_environments():
    """``/tmp/python_env_*`` folders holding an unpacked environment (Triton unpacks archives there)."""
    return sorted(p for p in Path("/tmp").glob("python_env_*") if any(p.glob("*/pyvenv.cfg")))


@pytest.fixture(scope="module")
def packed_example(tmp_path_factory):
    """The sklearn example logged to a sqlite store and packed for the bundled target: (model URI, model dir,
    progress lines, changes pack made to the store)."""
    from examples.runner.cli import use_local_store
    from examples.sklearn_example import log_example
    from mlflow_triton.deploy import pack_models

    store = tmp_path_factory.mktemp("store")
    info = log_example(use_local_store(store), registered_model_name="packed-example")
    before = tree_digest(store / "artifacts")
    lines = []
    [packed] = pack_models([info.model_uri], tmp_path_factory.mktemp("packed") / "repository", progress=lines.append)
    return info.model_uri, packed.directory, lines, changes(before, tree_digest(store / "artifacts"))


def test_check_passes_from_a_bare_start_when_the_packed_sklearn_example_is_checked(packed_example, tmp_path):
    model_uri, model_dir, pack_lines, store_changes = packed_example
    bare_python = subprocess.run(
        ["/usr/bin/python3", "-c", "import numpy"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert "No module named 'numpy'" in bare_python.stderr  # the system Python cannot serve the model by itself
    printed, progress = [], []
    before = unpacked_environments()

    status = check_command([str(model_dir.parent)], work_dir=tmp_path, out=printed.append, progress=progress.append)

    assert status == 0, printed + progress[-20:]
    assert printed[0] == (
        f"PASS {model_dir}: Triton 2.51.0 answered the shipped json request like pyfunc.predict (output_0)"
    )
    [entry] = json.loads((tmp_path / "report.json").read_text())
    assert entry["serving_env"] == {
        "carried": "$$TRITON_MODEL_DIRECTORY/env.tar.gz",
        "bare_start": True,
        "archive_mib": round((model_dir / "env.tar.gz").stat().st_size / 2**20),
    }
    assert any("bare start, as env -i would (PATH=/usr/bin:/bin" in line for line in progress), progress
    assert any(
        re.search(r"tritonserver ready in \d+\.\ds \(unpacking its environment included\)", line) for line in progress
    ), progress
    assert unpacked_environments() == before  # the server's unpacked copy is removed when it stops
    assert triton_processes_under(tmp_path) == []
    # pack: progress on the long steps, figures in the summary, the logged model only read
    assert any(line.startswith("reusing cached serving environment") for line in pack_lines), pack_lines
    assert any(
        re.search(
            r"env\.tar\.gz: \d+ MiB \(\d+ members, \d+ MiB unpacked\) in \d+s; follows Triton's "
            r"archive rules",
            line,
        )
        for line in pack_lines
    ), pack_lines
    assert store_changes == []
    manifest = json.loads((model_dir / "pack.json").read_text())
    assert (manifest["target"], manifest["python"], manifest["ships_stub"]) == ("bundled", RUNNING, True)
    assert oct((model_dir / "env.tar.gz").stat().st_mode & 0o777) == "0o644"


def test_check_passes_from_a_bare_start_when_a_batched_model_is_packed_as_one_model_directory(tmp_path):
    """Since runtime 2.11 a batched repository is one model directory (no zero-row guard's front beside it): pack
    carries its environment in that directory, and check proves it from a bare start."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from mlflow_triton import sklearn
    from mlflow_triton.deploy import pack_models

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5, 0.1, 0.9, 0.3]})
    model = LogisticRegression().fit(frame, [0, 1, 0, 1])
    sklearn.save_model(model, tmp_path / "batched", input_example=frame.iloc[:3], max_batch_size=8)
    [packed] = pack_models([str(tmp_path / "batched")], tmp_path / "repository", progress=None)
    printed = []

    status = check_command([str(tmp_path / "repository")], work_dir=tmp_path / "check", out=printed.append)

    assert sorted(p.name for p in (tmp_path / "repository").iterdir()) == ["batched"]
    config = (packed.directory / "config.pbtxt").read_text()
    assert "max_batch_size: 8" in config
    assert 'string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz"' in config
    assert (packed.directory / STUB).is_file() and (packed.directory / "env.tar.gz").is_file()
    assert status == 0 and printed[0].startswith(f"PASS {packed.directory}: Triton 2.51.0 answered"), printed


def test_bare_start_fails_with_the_missing_package_when_execution_env_path_is_removed(packed_example, tmp_path):
    _, model_dir, _, _ = packed_example
    control = tmp_path / "repository" / model_dir.name
    shutil.copytree(model_dir, control, ignore=shutil.ignore_patterns("env.tar.gz"))
    config = (control / "config.pbtxt").read_text()
    stripped = re.sub(r'parameters \{\n  key: "EXECUTION_ENV_PATH"\n.*?\n\}\n', "", config, flags=re.S)
    assert stripped != config
    (control / "config.pbtxt").write_text(stripped)
    installation = TritonInstallation.bundled(progress=None)

    with pytest.raises(TritonStartError, match="No module named 'numpy'"):
        with TritonServer(
            tmp_path / "repository",
            control.name,
            installation=installation,
            bare=True,
            log_path=tmp_path / "tritonserver.log",
            startup_timeout=120,
        ):
            pass


def test_validate_repository_passes_when_the_backend_default_stub_is_of_another_python(packed_example, tmp_path):
    model_uri, model_dir, _, _ = packed_example
    other = "3.12" if RUNNING != "3.12" else "3.10"
    installation = TritonInstallation.bundled(python=other, progress=None)

    report = validate_repository(
        model_dir, expected_example_tensors(model_uri, model_dir), tmp_path, installation, progress=None
    )

    assert report.passed, (report.reason, report.triton_log_tail)
    assert stub_python_version(installation.backend_directory / "python" / STUB) == other
    assert stub_python_version(model_dir / STUB) == RUNNING
    assert report.serving_env["bare_start"] is True


@pytest.fixture(scope="module")
def user_store(tmp_path_factory):
    """A user's own script (not an example) logs its scikit-learn Pipeline to a new sqlite store."""
    directory = tmp_path_factory.mktemp("user-store")
    tracking_uri = f"sqlite:///{directory / 'mlflow.db'}"
    completed = subprocess.run(
        [sys.executable, str(USER_SCRIPT), tracking_uri, (directory / "artifacts").as_uri(), "user-classifier"],
        cwd=directory,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return tracking_uri, directory


def user_environment():
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") or k == "MLFLOW_TRITON_CACHE"}


def test_pack_writes_a_packed_repository_when_a_user_scripts_model_is_packed_from_the_console(user_store, tmp_path):
    tracking_uri, directory = user_store
    before = tree_digest(directory / "artifacts")

    completed = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "pack",
            "models:/user-classifier/1",
            "--out",
            str(tmp_path / "out"),
            "--tracking-uri",
            tracking_uri,
        ],
        cwd=directory,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr[-4000:]
    assert re.match(
        r"PACKED classifier \(models:/user-classifier/1\): env\.tar\.gz \d+ MiB, packed in \d+s from a "
        r"\d+ MiB environment \((reused from the cache|built in \d+s)\)\n",
        completed.stdout,
    )
    assert f"repository: {tmp_path / 'out'} (1 model(s)" in completed.stdout
    assert "packing for bundled (Triton 2.51.0 of nvidia-pytriton 0.7.0, on this machine" in completed.stderr
    model_dir = tmp_path / "out" / "classifier"
    assert sorted(p.name for p in model_dir.iterdir()) == [
        "1",
        "config.pbtxt",
        "env.tar.gz",
        "pack.json",
        "request.json",
        "requirements.txt",
        STUB,
        "validation.json",
    ]
    assert 'key: "EXECUTION_ENV_PATH"' in (model_dir / "config.pbtxt").read_text()
    assert changes(before, tree_digest(directory / "artifacts")) == []


def test_pack_stops_and_leaves_nothing_when_interrupted_while_packing(user_store, tmp_path):
    tracking_uri, directory = user_store
    command = [
        str(CONSOLE_SCRIPT),
        "pack",
        "models:/user-classifier/1",
        "--out",
        str(tmp_path / "out"),
        "--tracking-uri",
        tracking_uri,
    ]
    # a terminal's Ctrl-C; SIGINT restored in case this test runs in a background job (which ignores it)
    process = subprocess.Popen(
        command,
        cwd=directory,
        env=user_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    stderr = LineReader(process.stderr)
    try:
        stderr.wait_for("into env.tar.gz (venv-pack2)", timeout=600)  # the packer is being started
        process.send_signal(signal.SIGINT)
        status = process.wait(60)
    finally:
        stop_politely(process)

    assert status == 130, stderr.text()
    assert "interrupted (Ctrl-C); every process it started is stopped and nothing was written" in stderr.text()
    assert list(tmp_path.iterdir()) == []
    assert processes_mentioning("mlflow_triton.deploy._venv_pack_child") == []
