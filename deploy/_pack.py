"""``mlflow-triton pack``: a Triton model repository whose model directories carry their own environment.

For each model URI: fetch its generated Triton model directory (the logged model is only read), refuse what
cannot work on the target before anything is built (pins without a release for the target's Python, in pip's
words; wheels that need a newer glibc than the target's), build or reuse the cached serving environment that
``check`` builds for the same requirements, constraints and Python (never changed), pack it into
``<model>/env.tar.gz`` with venv-pack2 and name it in ``config.pbtxt``::

    parameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }

The repository is assembled in a staging folder beside ``--out`` and moved there at the end: an error, Ctrl-C or
SIGTERM leaves no process and nothing in ``--out``. Copy ``--out``'s model directories into the server's model
repository; nothing else is needed there (see ``docs/deploy-containers.md``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

from mlflow_triton.command_line import as_progress, run_command
from mlflow_triton.local.errors import ModelSourceError, ServingEnvError
from mlflow_triton.local.installation import locate_bundled_server
from mlflow_triton.local.serving_env import cached_serving_env, check_requirements, ensure_serving_env, env_summary
from mlflow_triton.local.sources import ModelSource, resolve_model
from mlflow_triton.repository.config import ENV_PATH_PARAMETER
from mlflow_triton.repository.layout import CONFIG_FILE
from mlflow_triton.repository.paths import checked_out, lies_inside
from mlflow_triton.repository.staging import staged_directory

from ._archive import ARCHIVE_NAME, audit_archive, pack_environment, require_packer
from ._targets import DEFAULT_TARGET, TARGETS, PackPlan, Target, resolve_target
from ._wheels import environment_needs, report_needs, too_new
from .errors import PackError, PackOutputError, PackRequirementsError

__all__ = ["MANIFEST_NAME", "PackedModel", "pack_command", "pack_models"]

_MODEL_DIRECTORY = "$$TRITON_MODEL_DIRECTORY"
ENV_PATH_VALUE = f"{_MODEL_DIRECTORY}/{ARCHIVE_NAME}"
MANIFEST_NAME = "pack.json"
STUB_NAME = "triton_python_backend_stub"


@dataclasses.dataclass(frozen=True)
class PackedModel:
    """One packed model directory and what it cost."""

    model_uri: str
    name: str
    directory: Path
    archive_bytes: int
    environment_mib: int
    environment_seconds: float
    pack_seconds: float
    environment_reused: bool

    def line(self) -> str:
        env = "reused from the cache" if self.environment_reused else f"built in {self.environment_seconds:.0f}s"
        return (
            f"PACKED {self.name} ({self.model_uri}): {ARCHIVE_NAME} {self.archive_bytes / 2**20:.0f} MiB, packed "
            f"in {self.pack_seconds:.0f}s from a {self.environment_mib} MiB environment ({env})"
        )


def pack_models(
    model_uris: list[str],
    out: str | os.PathLike[str],
    *,
    target: str = DEFAULT_TARGET,
    python: str | None = None,
    progress=print,
    cache_dir: str | os.PathLike[str] | None = None,
) -> list[PackedModel]:
    """Write the packed repository ``out`` (created; must not exist or be empty); returns one entry per model.

    Raises a [PackError][] before anything is built when a model cannot
    work on ``target``, and [PackOutputError][] before anything else when
    ``out`` is a symbolic link or lies inside a local model directory it packs; nothing is left in ``out`` after any
    error or interruption.
    """
    say = as_progress(progress)
    out = _checked_out(out, model_uris)
    plan = resolve_target(target, python)
    require_packer()
    say.say(f"packing for {plan.describe()}")
    # The staging folder also holds the downloads and pip's reports: only its repository/ becomes --out.
    with staged_directory(out, prefix=f".{out.name}-packing-", product="repository") as staging:
        sources = _fetch(model_uris, staging / "download", say)
        for source in sources:
            _refuse_what_cannot_install(source, plan, staging, say, cache_dir)
        packed = [_pack_one(source, staging / "repository", plan, say, cache_dir) for source in sources]
        if out.exists():
            out.rmdir()  # checked empty above
    return [dataclasses.replace(entry, directory=out / entry.name) for entry in packed]


def _checked_out(out, model_uris) -> Path:
    """``--out`` checked by the rules of every ``--out`` (:func:`~mlflow_triton.repository.paths.checked_out`), and
    outside every local model it packs: the staging folder beside it would be copied into itself."""
    out = checked_out(out, kind="directory", error=PackOutputError)
    for uri in model_uris:
        for folder in _read_folders(str(uri)):
            if lies_inside(out, folder):
                raise PackOutputError(
                    f"--out {out}: lies inside {folder}, which pack only reads (for {uri}); give a directory outside it"
                )
    return out


def _read_folders(uri: str) -> list[Path]:
    """A local model directory and the MLflow model directory holding it (a Triton model directory inside a logged
    model); nothing for a model URI."""
    path = Path(uri).expanduser()
    if not path.is_dir():
        return []
    enclosing = [folder for folder in path.resolve().parents if (folder / "MLmodel").is_file()]
    return [path, *enclosing[:1]]


def _fetch(model_uris, download_dir: Path, say) -> list[ModelSource]:
    sources: list[ModelSource] = []
    names: dict[str, str] = {}
    for number, uri in enumerate(model_uris, start=1):
        say.say(f"[{uri}] fetching the model's Triton repository ...")
        source = resolve_model(str(uri), download_dir / str(number))
        if not source.generated or not source.requirements_file.is_file():
            raise ModelSourceError(
                f"{uri}: not a Triton directory generated by mlflow_triton's wrappers (no requirements.txt, "
                "mlflow_contract or 1/artifact/): log the model with mlflow_triton.sklearn|pytorch|transformers"
            )
        if ENV_PATH_PARAMETER in (source.repository / CONFIG_FILE).read_text(encoding="utf-8", errors="replace"):
            raise PackError(
                f"{uri}: the model directory already carries its environment ({ENV_PATH_PARAMETER}); "
                "pack the logged model (its model URI), not a packed directory"
            )
        if source.name in names:
            raise PackError(
                f"{uri} and {names[source.name]} are both Triton model {source.name!r}: one repository "
                "holds each name once; pack them into different --out directories"
            )
        names[source.name] = uri
        sources.append(source)
    return sources


def _refuse_what_cannot_install(source: ModelSource, plan: PackPlan, staging: Path, say, cache_dir) -> None:
    """Resolve the requirements for the target's Python (pip, dry run) and check the chosen wheels' glibc.

    When the environment is cached already (it installed, for this Python), only its wheels' glibc is checked.
    """
    cached = cached_serving_env(
        source.requirements_file, plan.constraints, cache_dir, python=str(plan.interpreter.executable)
    )
    if cached is not None:
        _refuse_newer_glibc(source.uri, environment_needs(cached), plan, f"the environment {cached} holds")
        return
    say.say(
        f"[{source.uri}] resolving requirements.txt + {list(plan.constraints)} for Python "
        f"{plan.python_version} (pip, dry run) ..."
    )
    report = staging / f"pip-report-{source.name}.json"
    try:
        check_requirements(
            source.requirements_file, plan.constraints, python=str(plan.interpreter.executable), report=report
        )
    except ServingEnvError as error:
        raise PackRequirementsError(
            f"{source.uri} cannot be packed for --target {plan.target.name} (Python {plan.python_version}): its "
            "requirements do not install there. pip said:\n"
            + "\n".join(f"  {line}" for line in error.pip_lines)
            + "\nA repository pins the versions of the environment it was logged in: log the model under Python "
            f"{plan.python_version} for this target, or choose a target of the Python it was logged with"
        ) from None
    _refuse_newer_glibc(source.uri, report_needs(report), plan, "pip would install")


def _refuse_newer_glibc(uri, needs, plan: PackPlan, where: str) -> None:
    bad = too_new(needs, plan.glibc)
    if bad:
        raise PackRequirementsError(
            f"{uri} cannot be packed for --target {plan.target.name}: {where} wheels that need a newer glibc than "
            f"the target's {plan.glibc}: "
            + "; ".join(need.describe() for need in bad)
            + ". Pin versions that publish manylinux wheels for that glibc, or choose a target with a newer one"
        )


def _pack_one(source: ModelSource, repository: Path, plan: PackPlan, say, cache_dir) -> PackedModel:
    for directory in source.served:  # a guarded batched model: its front and the batched model behind it
        shutil.copytree(directory, repository / directory.name, symlinks=True)
    model_dir = repository / source.files.name  # the directory of the model's files carries the environment
    started = time.monotonic()
    said = []

    def relay(line):
        said.append(line)
        say.say(line)

    env = ensure_serving_env(
        source.requirements_file, plan.constraints, cache_dir, relay, python=str(plan.interpreter.executable)
    )
    environment_seconds = time.monotonic() - started
    summary = env_summary(env)
    _refuse_newer_glibc(source.uri, environment_needs(env), plan, f"the environment {env} holds")
    archive = model_dir / ARCHIVE_NAME
    say.say(f"[{source.uri}] packing the {summary['size_mib']} MiB environment into {ARCHIVE_NAME} (venv-pack2) ...")
    pack_seconds = pack_environment(env, archive, plan, progress=say)
    links = {f"bin/python{plan.python_version}": plan.target_interpreter}
    facts = audit_archive(archive, links)
    say.say(
        f"[{source.uri}] {ARCHIVE_NAME}: {archive.stat().st_size / 2**20:.0f} MiB ({facts.members} members, "
        f"{facts.unpacked_bytes / 2**20:.0f} MiB unpacked) in {pack_seconds:.0f}s; follows Triton's archive rules"
    )
    for directory in source.served:
        if plan.target.ships_stub:
            _ship_stub(repository / directory.name, plan)
        # a front runs in the same environment: the batched model's archive (Triton unpacks it once per path)
        relative = "" if directory.name == model_dir.name else f"/../{model_dir.name}"
        _name_archive_in_config(
            repository / directory.name / CONFIG_FILE, f"{_MODEL_DIRECTORY}{relative}/{ARCHIVE_NAME}"
        )
    _write_manifest(model_dir, source, plan, summary, facts, archive)
    return PackedModel(
        model_uri=source.uri,
        name=source.name,
        directory=repository / source.name,
        archive_bytes=archive.stat().st_size,
        environment_mib=summary["size_mib"],
        environment_seconds=environment_seconds,
        pack_seconds=pack_seconds,
        environment_reused=any(line.startswith("reusing cached") for line in said),
    )


def _ship_stub(model_dir: Path, plan: PackPlan) -> None:
    """The wheel's Python-backend stub of the archive's Python, in the model directory (it overrides the default)."""
    stub = locate_bundled_server()[0] / "python_backend_stubs" / plan.python_version / STUB_NAME
    if not stub.is_file():
        raise PackError(f"the bundled Triton has no Python-backend stub for Python {plan.python_version} ({stub})")
    shutil.copy2(stub, model_dir / STUB_NAME)
    (model_dir / STUB_NAME).chmod(0o755)


def _name_archive_in_config(config_path: Path, value: str = ENV_PATH_VALUE) -> None:
    """Append the ``EXECUTION_ENV_PATH`` parameter (the rest of the file stays byte for byte)."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    text = config_path.read_text(encoding="utf-8")
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    if ENV_PATH_PARAMETER in config.parameters:
        raise PackError(
            f"{config_path} already names an environment ({ENV_PATH_PARAMETER}); pack the logged model, "
            "not a packed directory"
        )
    addition = f'parameters {{\n  key: "{ENV_PATH_PARAMETER}"\n  value {{\n    string_value: "{value}"\n  }}\n}}\n'
    config_path.write_text(text + ("" if text.endswith("\n") else "\n") + addition, encoding="utf-8")


def _write_manifest(model_dir: Path, source: ModelSource, plan: PackPlan, summary: dict, facts, archive: Path) -> None:
    manifest = {
        "model_uri": source.uri,
        "target": plan.target.name,
        "server": plan.target.server,
        "python": plan.python_version,
        "glibc": plan.glibc,
        "constraints": list(plan.constraints),
        "interpreter": plan.target_interpreter,
        "ships_stub": plan.target.ships_stub,
        "archive": {
            "name": ARCHIVE_NAME,
            "bytes": archive.stat().st_size,
            "members": facts.members,
            "unpacked_bytes": facts.unpacked_bytes,
        },
        "environment": {
            "python": summary["python"],
            "size_mib": summary["size_mib"],
            "requirements": summary["requirements"],
        },
    }
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def closing_hint(target: Target, root: Path) -> str:
    """How to prove the packed repository ``root``: a bare start here for a server on this machine, the target's
    own container otherwise (its interpreter is not here, so ``check`` cannot load it)."""
    if target.run_image is None:
        return (
            f"prove it with a bare start: mlflow-triton check {root}; deploy: copy its model directories into the "
            "server's model repository"
        )
    return (
        f"prove and serve it on {target.name}'s server (its Python is not on this machine, so a bare start here, "
        f"mlflow-triton check, proves --target bundled packs only): docker run --rm -p 8000:8000 -v {root}:/models "
        f"{target.run_image} tritonserver --model-repository=/models"
    )


def pack_command(
    model_uris: list[str],
    out: str | os.PathLike[str],
    *,
    target: str = DEFAULT_TARGET,
    python: str | None = None,
    tracking_uri: str | None = None,
    out_lines=print,
    progress=None,
) -> int:
    """``mlflow-triton pack``: one ``PACKED`` line per model and where the repository is; returns the exit status.

    0 packed; 1 an error (printed as ``mlflow-triton pack: error: ...``, nothing written); 130 after Ctrl-C and
    143 after SIGTERM (every process it started stopped, nothing written).
    """

    def pack(say) -> int:
        started = time.monotonic()
        if tracking_uri is not None:
            import mlflow

            mlflow.set_tracking_uri(tracking_uri)
        packed = pack_models(model_uris, out, target=target, python=python, progress=say)
        for entry in packed:
            out_lines(entry.line())
        root = Path(out).expanduser().absolute()
        out_lines(
            f"repository: {root} ({len(packed)} model(s), {time.monotonic() - started:.0f}s in all); "
            f"{closing_hint(TARGETS[target], root)}"
        )
        return 0

    return run_command(
        "pack",
        pack,
        progress=progress,
        stopped=f"every process it started is stopped and nothing was written to {out}",
    )
