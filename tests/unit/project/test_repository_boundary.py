"""The repository format is a part of its own, and no part reaches into another's private modules.

``mlflow_triton.repository`` holds what the logging side writes and ``local``, ``export`` and ``deploy`` read;
it imports the runtime and the contract (whose rules it applies, not copies), the public error classes and
nothing of the parts that use it. Across parts, only public modules are imported: a module whose name has a
``_`` component belongs to its own part.
"""

import ast
import functools

import pytest

from mlflow_triton import flavors
from mlflow_triton.repository import layout
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


# The documented API: what users import by name (docs/logging.md: the wrappers the flavor registry lists, the
# `mlflow-triton` entry point, the error classes of docs/deploy-containers.md).
USER_MODULES = {
    *flavors.WRAPPERS.values(),
    *(f"mlflow_triton.{name}" for name in ("triton", "errors", "cli")),
    "mlflow_triton.deploy.errors",
    "mlflow_triton.local.stream_client",  # run by name: `mlflow-triton serve` prints it for a streaming model
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


# The folders and files of a generated repository, each named once in repository/layout.py.
LAYOUT_NAMES = {
    name: value for name, value in vars(layout).items() if name.isupper() and isinstance(value, str) and value
}
# MLflow's own names too (a logged package holds an MLmodel and a requirements.txt): a literal of them is the
# repository's only in a path that reaches into a model directory through another name of the layout.
MLFLOW_NAMES = {layout.MLMODEL_FILE, layout.REQUIREMENTS_FILE}
LAYOUT_HELPERS = {"artifact_directory"}
PATH_CALLS = {"join", "joinpath", "Path", "PurePath", "PurePosixPath"}


def _path_chains(tree):
    """The operands of every path built in ``tree``: ``a / b / c``, ``os.path.join(a, b)``, ``Path(a, b)``."""

    def operands(node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return [*operands(node.left), *operands(node.right)]
        return [node]

    divisions = [node for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)]
    inner = {id(side) for node in divisions for side in (node.left, node.right)}
    yield from (operands(node) for node in divisions if id(node) not in inner)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if called in PATH_CALLS:
                yield list(node.args)


def _layout_literals(chain):
    """The string literals of ``chain`` that spell a name of the layout."""

    def names(operand):
        parts = operand.value.split("/") if isinstance(operand, ast.Constant) and isinstance(operand.value, str) else []
        return [part for part in parts if part in LAYOUT_NAMES.values()]

    into_a_model = any(
        (isinstance(operand, ast.Name) and operand.id in LAYOUT_NAMES)
        or (isinstance(operand, ast.Attribute) and operand.attr in LAYOUT_NAMES)
        or (isinstance(operand, ast.Call) and getattr(operand.func, "id", None) in LAYOUT_HELPERS)
        or any(name not in MLFLOW_NAMES for name in names(operand))
        for operand in chain
    )
    return [name for operand in chain for name in names(operand) if into_a_model or name not in MLFLOW_NAMES]


@pytest.mark.parametrize(
    "path",
    [path for path in ALL_FILES if path.parent.name not in VENDORED and path != ROOT / "repository" / "layout.py"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_repository_paths_spell_no_folder_or_file_name_of_the_layout_when_parsed(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    spelled = [
        f"line {line}: {name!r}"
        for line, name in sorted(
            {(chain[0].lineno, name) for chain in _path_chains(tree) for name in _layout_literals(chain)}
        )
    ]

    assert spelled == [], f"{spelled}: name them through mlflow_triton.repository.layout ({sorted(LAYOUT_NAMES)})"


def test_artifact_folder_is_defined_once_in_the_runtime_when_every_part_is_parsed():
    from mlflow_triton.runtime import loading

    defined = [
        path.relative_to(ROOT).as_posix()
        for path in sorted(ROOT.glob("*/*.py"))
        if not path.parts[len(ROOT.parts)].startswith((".", "tests", "docs", "build"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id == "ARTIFACT_DIRECTORY"
    ]

    assert defined == ["runtime/loading.py"]
    assert layout.ARTIFACT_DIRECTORY is loading.ARTIFACT_DIRECTORY


def test_layout_names_the_descriptor_mlflow_writes_when_compared_with_mlflow():
    from mlflow.models.model import MLMODEL_FILE_NAME

    assert layout.MLMODEL_FILE == MLMODEL_FILE_NAME
