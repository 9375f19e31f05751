"""The repository format is a part of its own, and no part reaches into another's private modules.

``mlflow_triton.repository`` holds what the logging side writes and ``local``, ``export`` and ``deploy`` read;
it imports the runtime and the contract (whose rules it applies, not copies), the public error classes and
nothing of the parts that use it. Across parts, only public modules are imported: a module whose name has a
``_`` component belongs to its own part.
"""

import functools

import pytest

from tests.support.parts import PARTS, ROOT, absolute_imports, imported_modules, module_name, owning_part, part_files

ALL_FILES = [path for folder in PARTS for path in part_files(folder)]


def _private(module):
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_imports_nothing_private_of_another_part_when_parsed(path):
    own = path.parent.name
    foreign_private = [
        name
        for name in imported_modules(path)
        if name.startswith("mlflow_triton") and owning_part(name) not in (own, None) and _private(name)
    ]

    assert foreign_private == []


@pytest.mark.parametrize(
    "folder", ["logging_side", "local_triton", "export", "deploy"], ids=lambda folder: PARTS[folder]
)
def test_format_files_are_read_through_the_repository_part_when_parsed(folder):
    # the config and request modules left the root package: an import of the old names would fail at run time
    gone = ("mlflow_triton._config", "mlflow_triton._requests", "mlflow_triton._names", "mlflow_triton._paths")
    used = [name for path in part_files(folder) for name in imported_modules(path) if name.startswith(gone)]

    assert used == []


# The documented API: what users import by name (docs/logging.md, the `mlflow-triton` entry point, the error
# classes of docs/deploy-containers.md).
USER_MODULES = {
    *(f"mlflow_triton.{name}" for name in ("sklearn", "pytorch", "transformers", "pyfunc", "triton", "errors", "cli")),
    "mlflow_triton.deploy.errors",
}
# Vendored into every model.py under their file names (the auditor's guide reads them so): the rule leaves them be.
VENDORED = ("runtime", "shared_contract")
EXAMPLE_FILES = sorted((ROOT / "examples").rglob("*.py"))


@functools.cache
def _imported_outside(own):
    """Every module name imported by the other parts and by the examples: parsed once per part."""
    parts = {name for path in ALL_FILES if path.parent.name != own for name in imported_modules(path)}
    return parts | {name for path in EXAMPLE_FILES for name in absolute_imports(path)}


@pytest.mark.parametrize(
    "path",
    [path for path in ALL_FILES if path.parent.name not in VENDORED and not path.stem.startswith("__")],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_module_starts_with_underscore_exactly_when_nothing_outside_its_part_imports_it_by_name(path):
    module = module_name(path)
    used_outside = module in USER_MODULES or module in _imported_outside(path.parent.name)

    assert path.stem.startswith("_") != used_outside, (
        f"{module}: imported by name outside its part" if used_outside else f"{module}: only its own part imports it"
    )


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_import_no_private_module_when_parsed(path):
    private = [name for name in absolute_imports(path) if name.startswith("mlflow_triton") and _private(name)]

    assert private == []
