"""One front door for errors: ``mlflow_triton.errors`` holds every exception and warning class of the package, its
docstring and docs/errors.md draw the same tree as the classes, and one helper raises the missing-extra error."""

import ast
import inspect
import subprocess
import sys
import textwrap

import pytest

import mlflow_triton.errors as errors
from mlflow_triton.deploy import _archive, _store
from mlflow_triton.errors import MissingExtraError, MlflowTritonError, require_extra
from tests.support import docs_pages
from tests.support.parts import PARTS, ROOT, module_name, part_files

# Copied verbatim into an exported repository, where Triton runs them without mlflow-triton (the docstring says so).
OUTSIDE_THE_FAMILY = {
    ("export/_python_backend_model.py", "RequestError"),
    ("export/_text_pipeline.py", "TextRequestError"),
}


def _exported_classes():
    return {name: value for name in errors.__all__ if inspect.isclass(value := getattr(errors, name))}


def _actual_tree():
    """``{class name: (family parent or None, other bases)}`` of the classes ``mlflow_triton.errors`` exports."""
    family = set(_exported_classes().values())
    tree = {}
    for name, cls in _exported_classes().items():
        first, *others = cls.__bases__
        if first in family:
            tree[name] = (first.__name__, tuple(base.__name__ for base in others))
        else:
            tree[name] = (None, tuple(base.__name__ for base in cls.__bases__))
    return tree


def _drawn_tree(text):
    """The tree as drawn: two spaces a level, ``Name [Other, Bases]``; repeated names are kept to fail the test."""
    drawn, parents = [], []
    for line in text.strip("\n").splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name, _, others = line.strip().partition(" ")
        parents[depth:] = [name]
        parent = parents[depth - 1] if depth else None
        drawn.append((name, (parent, tuple(base.strip() for base in others.strip("[]").split(",") if base.strip()))))
    return drawn


def _docstring_tree():
    return textwrap.dedent(errors.__doc__.split("::\n\n", 1)[1].split("\n\n", 1)[0])


def _subclasses(root):
    for cls in root.__subclasses__():
        yield cls
        yield from _subclasses(cls)


def test_the_docstring_draws_the_tree_of_the_classes():
    drawn = _drawn_tree(_docstring_tree())

    assert len(drawn) == len(dict(drawn))
    assert dict(drawn) == _actual_tree()


def test_the_docs_page_draws_the_tree_of_the_classes():
    [block] = [block for block in docs_pages.blocks(ROOT / "docs" / "errors.md", "text") if block.heading == "The tree"]

    assert block.code.strip("\n") == _docstring_tree()
    assert dict(_drawn_tree(block.code)) == _actual_tree()


def test_every_exception_and_warning_class_of_the_package_is_named_by_the_errors_module_when_parsed():
    unreachable = []
    for folder in PARTS:
        for path in part_files(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef) or not node.name.endswith(("Error", "Warning", "Exception")):
                    continue
                where = (f"{folder}/{path.name}", node.name)
                if where in OUTSIDE_THE_FAMILY:
                    continue
                named = getattr(errors, node.name, None)
                defined_at = getattr(sys.modules.get(module_name(path)), node.name, None) if named else None
                if named is None or (defined_at is not None and defined_at is not named):
                    unreachable.append(where)

    assert unreachable == []
    assert all(f"``{name}`` of ``{file}``" in errors.__doc__ for file, name in OUTSIDE_THE_FAMILY)


def test_every_subclass_of_the_root_is_exported_by_the_errors_module_when_the_parts_are_imported():
    import mlflow_triton.deploy.errors
    import mlflow_triton.export
    import mlflow_triton.local.errors  # noqa: F401

    subclasses = {cls for cls in _subclasses(MlflowTritonError) if cls.__module__.startswith("mlflow_triton.")}
    warnings = {cls for cls in _subclasses(Warning) if cls.__module__.startswith("mlflow_triton.")}

    assert subclasses | warnings | {MlflowTritonError} == set(_exported_classes().values())


def test_importing_the_errors_module_loads_no_heavy_dependency_in_a_fresh_interpreter():
    heavy = ("mlflow", "numpy", "pandas", "pytriton", "torch", "transformers", "onnx", "onnxruntime")
    script = f"import sys, mlflow_triton.errors\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n"

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"


def test_require_extra_raises_the_missing_extra_error_naming_the_extra_when_the_module_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "not_installed_here", None)

    with pytest.raises(MissingExtraError) as raised:
        require_extra("not_installed_here", "onnx", "the parity check needs not_installed_here", "or skip it")
    assert str(raised.value) == (
        "the parity check needs not_installed_here: pip install 'mlflow-triton[onnx]' (or skip it)"
    )
    assert isinstance(raised.value, ImportError) and isinstance(raised.value, MlflowTritonError)


def test_require_extra_returns_the_module_when_it_is_installed():
    assert require_extra("json", "onnx", "nothing") is sys.modules["json"]


def test_pack_names_the_deploy_extra_with_the_missing_extra_error_when_venv_pack2_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "venv_pack", None)

    with pytest.raises(
        MissingExtraError,
        match=(
            r"^mlflow-triton pack needs venv-pack2 \(the packer of virtualenvs\): "
            r"pip install 'mlflow-triton\[deploy\]'$"
        ),
    ):
        _archive.require_packer()


def test_reading_s3_names_the_s3_extra_with_the_missing_extra_error_when_boto3_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)

    with pytest.raises(
        MissingExtraError, match=r"^reading an S3 artifact store needs boto3: pip install 'mlflow-triton\[s3\]'$"
    ):
        _store._check_s3_readable(None)


def test_the_old_name_of_the_missing_packer_error_is_the_missing_extra_error():
    from mlflow_triton.deploy.errors import PackToolMissingError

    assert PackToolMissingError is MissingExtraError
