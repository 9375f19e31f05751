"""A pytest launcher for mutation runs: heavy libraries imported once, each test run in a fresh fork.

cosmic-ray writes one mutant to disk, runs its ``test-command`` and reads the exit status. Started
plainly, that command spends seconds importing MLflow, pandas and protobuf for every mutant. Here a
server (``serve``) imports them once; ``run -- <pytest args>`` asks it to fork a child that drops every
``mlflow_triton`` and ``tests`` module (so the mutant on disk is what gets imported), runs
``pytest.main`` and hands back its exit status. Without a server, ``run`` runs pytest as a child
process, with the same result, only slower.

``serve --source-root DIR`` imports the package from a copy of the tree in ``DIR`` instead of the
worktree the editable install points at, so mutants written there never reach other processes (an
e2e test running meanwhile imports the untouched worktree). Start the server from ``DIR``.

    python -m tests.mutation.forkserver serve SOCKET --source-root . &
    python -m tests.mutation.forkserver run SOCKET -- -x -q tests/unit/local_triton/test_local_compare.py
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import socket
import subprocess
import sys

# Imported once by the server: the project's heavy dependencies, never the project itself.
PRELOADED = (
    "numpy",
    "pandas",
    "mlflow",
    "mlflow.pyfunc",
    "mlflow.models",
    "mlflow.types",
    "mlflow.sklearn",
    "google.protobuf.json_format",
    "google.protobuf.text_format",
    "tritonclient.grpc.model_config_pb2",
    "sklearn.pipeline",
    "sklearn.linear_model",
    "sklearn.compose",
    "sklearn.preprocessing",
    "hypothesis",
    "pytest",
)
CHILD_TIMEOUT_S = 300
OWN_MODULES = ("mlflow_triton", "tests")


def serve(path: str, source_root: str | None = None) -> None:
    """Listen on the unix socket ``path``; one forked pytest run per connection, one at a time."""
    sys.dont_write_bytecode = True  # a mutant's bytecode must never be cached for the next one
    for name in PRELOADED:
        importlib.import_module(name)
    if source_root is not None:
        _import_package_from(os.path.abspath(source_root))
    if os.path.exists(path):
        os.unlink(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        while True:
            connection, _ = server.accept()
            with connection:
                request = json.loads(_read_line(connection))
                status = _forked_pytest(request["args"], request["cwd"])
                connection.sendall(f"{status}\n".encode())


def run(path: str, args: list[str]) -> int:
    """pytest's exit status for ``args``, from the server at ``path`` when one listens there."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)
            client.sendall((json.dumps({"args": args, "cwd": os.getcwd()}) + "\n").encode())
            return int(_read_line(client))
    except (FileNotFoundError, ConnectionRefusedError):
        return subprocess.call([sys.executable, "-m", "pytest", *args])


def _import_package_from(root: str) -> None:
    """Point the editable install's finder at the same folders under ``root``."""
    importlib.import_module("mlflow_triton")  # installs nothing new: makes sure the finder module is loaded
    finders = [
        module
        for name, module in sys.modules.items()
        if name.startswith("__editable___mlflow_triton") and hasattr(module, "MAPPING")
    ]
    if not finders:
        raise SystemExit("forkserver: no editable install of mlflow_triton to redirect (pip install -e .)")
    for finder in finders:
        finder.MAPPING.update(
            {package: os.path.join(root, os.path.basename(folder)) for package, folder in finder.MAPPING.items()}
        )
    for name in [name for name in sys.modules if name.split(".")[0] in OWN_MODULES]:
        del sys.modules[name]


def _forked_pytest(args: list[str], cwd: str) -> int:
    child = os.fork()
    if child == 0:
        status = 1
        try:
            signal.alarm(CHILD_TIMEOUT_S)
            for name in [name for name in sys.modules if name.split(".")[0] in OWN_MODULES]:
                del sys.modules[name]
            os.chdir(cwd)
            import pytest

            status = int(pytest.main(args))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    _, waited = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(waited) if os.WIFEXITED(waited) else 1


def _read_line(connection: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation.forkserver")
    parser.add_argument("mode", choices=["serve", "run"])
    parser.add_argument("socket")
    parser.add_argument("--source-root", help="serve: import mlflow_triton from this copy of the tree")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.mode == "serve":
        serve(options.socket, options.source_root)
        return 0
    args = options.pytest_args[1:] if options.pytest_args[:1] == ["--"] else options.pytest_args
    return run(options.socket, args)


if __name__ == "__main__":
    sys.exit(main())
