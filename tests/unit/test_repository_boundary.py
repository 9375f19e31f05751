"""The repository format is a part of its own, and no part reaches into another's private modules.

``mlflow_triton.repository`` holds what the logging side writes and ``local``, ``export`` and ``deploy`` read;
it imports the runtime and the contract (whose rules it applies, not copies), the public error classes and
nothing of the parts that use it. Across parts, only public modules are imported: a module whose name has a
``_`` component belongs to its own part.
"""

import pytest

from tests.support.parts import PARTS, imported_modules, owning_part, part_files

ALL_FILES = [path for folder in PARTS for path in part_files(folder)]
# What the repository part may use of the others: the runtime's readers and codecs, the contract, the errors.
REPOSITORY_MAY_IMPORT = ("mlflow_triton.runtime", "mlflow_triton.shared_contract", "mlflow_triton.errors")


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


@pytest.mark.parametrize("path", part_files("repository"), ids=lambda p: p.name)
def test_repository_part_imports_only_the_runtime_the_contract_and_the_errors_when_parsed(path):
    outside = [
        name
        for name in imported_modules(path)
        if name.startswith("mlflow_triton")
        and owning_part(name) != "repository"
        and not name.startswith(REPOSITORY_MAY_IMPORT)
    ]

    assert outside == []


@pytest.mark.parametrize(
    "folder", ["logging_side", "local_triton", "export", "deploy"], ids=lambda folder: PARTS[folder]
)
def test_format_files_are_read_through_the_repository_part_when_parsed(folder):
    # the config and request modules left the root package: an import of the old names would fail at run time
    gone = ("mlflow_triton._config", "mlflow_triton._requests", "mlflow_triton._names", "mlflow_triton._paths")
    used = [name for path in part_files(folder) for name in imported_modules(path) if name.startswith(gone)]

    assert used == []
