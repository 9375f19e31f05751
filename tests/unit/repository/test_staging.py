"""The one staged-directory helper: a directory appears complete or not at all, and a failure leaves nothing."""

import ast
import os
import pathlib
import stat
import sys

import pytest

from mlflow_triton.repository import staging as staging_module
from mlflow_triton.repository.staging import staged_directory

STAGING_SOURCE = pathlib.Path(staging_module.__file__)


class Interrupted(BaseException):
    """Neither an Exception nor KeyboardInterrupt: what a SIGTERM handler raises to unwind."""


INTERRUPTIONS = [RuntimeError("disk full"), KeyboardInterrupt(), Interrupted()]


def _tree(directory):
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*"))


def test_staged_directory_renames_the_build_into_place_when_the_body_succeeds(tmp_path):
    destination = tmp_path / "model"

    with staged_directory(destination) as staging:
        assert staging.parent == tmp_path
        assert staging.name.startswith(".model.staging-")
        assert not destination.exists()
        (staging / "MLmodel").write_text("flavors: {}\n")

    assert _tree(tmp_path) == ["model", "model/MLmodel"]
    assert stat.S_IMODE(destination.stat().st_mode) == 0o755


def test_staged_directory_names_the_sibling_with_the_prefix_when_one_is_given(tmp_path):
    with staged_directory(tmp_path / "env", prefix=".abc123-") as staging:
        assert staging.name.startswith(".abc123-")
        assert staging.parent == tmp_path


def test_staged_directory_only_reserves_the_name_when_create_is_false(tmp_path):
    destination = tmp_path / "model"

    with staged_directory(destination, create=False) as staging:
        assert not staging.exists()
        (staging / "model").mkdir(parents=True)

    assert _tree(tmp_path) == ["model", "model/model"]


def test_staged_directory_renames_only_the_product_and_removes_the_rest_when_one_is_named(tmp_path):
    out = tmp_path / "out"

    with staged_directory(out, product="repository") as staging:
        assert stat.S_IMODE(staging.stat().st_mode) == 0o700
        (staging / "download").mkdir()
        (staging / "download" / "model.bin").write_text("weights")
        (staging / "repository" / "m" / "1").mkdir(parents=True)

    assert _tree(tmp_path) == ["out", "out/m", "out/m/1"]


def test_staged_directory_creates_the_missing_parents_when_the_destination_is_deep(tmp_path):
    with staged_directory(tmp_path / "a" / "b" / "model") as staging:
        (staging / "f").write_text("x")

    assert _tree(tmp_path) == ["a", "a/b", "a/b/model", "a/b/model/f"]


@pytest.mark.parametrize("error", INTERRUPTIONS, ids=lambda e: type(e).__name__)
def test_staged_directory_removes_the_build_and_created_parents_when_the_body_raises(tmp_path, error):
    (tmp_path / "kept").mkdir()

    with pytest.raises(type(error)):
        with staged_directory(tmp_path / "kept" / "a" / "b" / "model") as staging:
            (staging / "half-written").write_text("x")
            raise error

    assert _tree(tmp_path) == ["kept"]


@pytest.mark.parametrize("error", INTERRUPTIONS, ids=lambda e: type(e).__name__)
def test_staged_directory_removes_the_unreserved_name_when_the_body_raises_with_create_false(tmp_path, error):
    with pytest.raises(type(error)):
        with staged_directory(tmp_path / "model", create=False) as staging:
            (staging / "model").mkdir(parents=True)
            raise error

    assert _tree(tmp_path) == []


@pytest.mark.parametrize("error", INTERRUPTIONS, ids=lambda e: type(e).__name__)
def test_staged_directory_removes_the_work_folder_when_the_body_raises_with_a_product(tmp_path, error):
    with pytest.raises(type(error)):
        with staged_directory(tmp_path / "new" / "out", product="repository") as staging:
            (staging / "repository").mkdir()
            raise error

    assert _tree(tmp_path) == []


def test_staged_directory_keeps_created_parents_when_keep_parents_is_set(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with staged_directory(tmp_path / "cache" / "envs" / "key", keep_parents=True):
            raise KeyboardInterrupt

    assert _tree(tmp_path) == ["cache", "cache/envs"]


def test_staged_directory_keeps_a_created_parent_when_another_process_wrote_into_it(tmp_path):
    with pytest.raises(RuntimeError):
        with staged_directory(tmp_path / "a" / "b" / "model"):
            (tmp_path / "a" / "other").write_text("written by another process")
            raise RuntimeError

    assert _tree(tmp_path) == ["a", "a/other"]


def test_staged_directory_removes_created_parents_when_creating_a_deeper_one_fails(tmp_path, monkeypatch):
    real_mkdir = pathlib.Path.mkdir

    def mkdir(path, *args, **kwargs):
        if path.name == "c":
            raise PermissionError("no")
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(type(tmp_path), "mkdir", mkdir)

    with pytest.raises(PermissionError, match="no"):
        with staged_directory(tmp_path / "a" / "b" / "c" / "model"):
            pytest.fail("the body runs only once the staging directory exists")

    assert _tree(tmp_path) == []


def test_staged_directory_removes_the_build_and_leaves_the_destination_when_the_rename_fails(tmp_path, monkeypatch):
    def rename(source, target):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "rename", rename)

    with pytest.raises(OSError, match="rename failed"):
        with staged_directory(tmp_path / "new" / "model") as staging:
            (staging / "f").write_text("x")

    assert _tree(tmp_path) == []


def test_staged_directory_refuses_and_leaves_the_destination_when_it_is_not_empty(tmp_path):
    destination = tmp_path / "model"
    destination.mkdir()
    (destination / "theirs").write_text("kept")

    with pytest.raises(OSError):
        with staged_directory(destination) as staging:
            (staging / "ours").write_text("discarded")

    assert _tree(tmp_path) == ["model", "model/theirs"]


def test_staged_directory_leaves_the_destination_when_the_body_refuses_it_at_the_end(tmp_path):
    destination = tmp_path / "model"

    with pytest.raises(FileExistsError):
        with staged_directory(destination) as staging:
            (staging / "ours").write_text("discarded")
            destination.mkdir()  # another process wrote it meanwhile
            if destination.exists():
                raise FileExistsError(destination)

    assert _tree(tmp_path) == ["model"]


def test_staged_directory_replaces_an_empty_destination_when_the_body_allows_it(tmp_path):
    destination = tmp_path / "out"
    destination.mkdir()

    with staged_directory(destination, product="repository") as staging:
        (staging / "repository" / "m").mkdir(parents=True)
        destination.rmdir()

    assert _tree(tmp_path) == ["out", "out/m"]


def test_staged_directory_discards_its_build_when_an_equal_one_finished_first(tmp_path):
    destination = tmp_path / "envs" / "key"

    with staged_directory(destination, equal_build_marker="env.json") as ours:
        (ours / "env.json").write_text("ours")
        with staged_directory(destination, equal_build_marker="env.json") as theirs:
            (theirs / "env.json").write_text("theirs")

    assert _tree(tmp_path) == ["envs", "envs/key", "envs/key/env.json"]
    assert (destination / "env.json").read_text() == "theirs"


def test_staged_directory_finds_the_marker_below_the_destination_when_it_is_a_relative_path(tmp_path):
    destination = tmp_path / "backends-py3.12"
    marker = "python/triton_python_backend_stub"

    with staged_directory(destination, equal_build_marker=marker) as ours:
        (ours / "python").mkdir()
        (ours / marker).write_text("ours")
        (destination / "python").mkdir(parents=True)
        (destination / marker).write_text("theirs")

    assert _tree(tmp_path) == ["backends-py3.12", "backends-py3.12/python", f"backends-py3.12/{marker}"]
    assert (destination / marker).read_text() == "theirs"


def test_staged_directory_raises_when_the_destination_appeared_without_the_marker(tmp_path):
    destination = tmp_path / "key"

    with pytest.raises(OSError):
        with staged_directory(destination, equal_build_marker="env.json") as ours:
            (ours / "env.json").write_text("ours")
            destination.mkdir()
            (destination / "partial").write_text("not a complete build")

    assert _tree(tmp_path) == ["key", "key/partial"]


def test_staged_directory_raises_when_an_equal_build_finished_first_without_the_option(tmp_path):
    destination = tmp_path / "key"

    with pytest.raises(OSError):
        with staged_directory(destination) as ours:
            (ours / "env.json").write_text("ours")
            with staged_directory(destination) as theirs:
                (theirs / "env.json").write_text("theirs")

    assert _tree(tmp_path) == ["key", "key/env.json"]
    assert (destination / "env.json").read_text() == "theirs"


def test_staged_directory_neither_reuses_nor_removes_a_stale_sibling_when_one_is_there(tmp_path):
    stale = tmp_path / ".model.staging-left-by-a-killed-process"
    stale.mkdir()
    (stale / "half-written").write_text("x")

    with staged_directory(tmp_path / "model") as staging:
        assert staging != stale
        (staging / "f").write_text("x")

    assert _tree(tmp_path) == [stale.name, f"{stale.name}/half-written", "model", "model/f"]


def test_staging_module_imports_only_the_standard_library_and_shared_contract_when_parsed():
    outside = []
    for node in ast.walk(ast.parse(STAGING_SOURCE.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # relative to mlflow_triton.repository: "..shared_contract" is mlflow_triton.shared_contract
            base = ["", "mlflow_triton.repository", "mlflow_triton"][node.level] if node.level < 3 else "?"
            names = [".".join(part for part in (base, node.module) if part)]
        else:
            continue
        outside += [
            name
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names
            and not name.startswith("mlflow_triton.shared_contract")
        ]

    assert outside == []
