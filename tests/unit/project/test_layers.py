"""Who imports whom: the layer list of the package, and every import of every part parsed against it.

:data:`ARROWS` is the one list (docs/layout.md draws it): each unit of the package and the units it imports
directly. A unit may import what it reaches along the arrows (:func:`reach`), never a unit that reaches it back,
so the list itself has no circle. The units are the parts of ``pyproject.toml`` (their folders), with three
modules of ``logging_side/`` standing apart: the command line (``cli``, the one caller of ``local``, ``export``
and ``deploy``), the error family (``errors``) and the public ``triton`` flavor (which ``local`` and ``export``
read). ``shared_contract`` and ``command_line`` import nothing outside the standard library but their arrows.

Inside the units, :func:`test_no_module_imports_one_that_imports_it_when_every_import_is_parsed` holds the
modules to the same rule: no import circle and no import from a module to one that imports it. Every import
counts there, wherever it stands: at module level, under ``if TYPE_CHECKING:`` (the type checker follows it, and a
circle closed there is one a reader must untangle all the same) and inside a function (a lazy import hides a
circle from Python's import machinery, it does not remove it).

What importing a part loads (no pytriton, torch or converters) is measured in fresh interpreters by the parts'
own boundary tests (``test_local_boundary.py``, ``test_export_boundaries.py``, ``test_command_line_boundary.py``,
``test_contract_is_stdlib_only.py``); module names and private modules by ``test_repository_boundary.py``.
"""

import ast
import functools
import sys

import pytest

from tests.support.parts import (
    PARTS,
    ROOT,
    imported_modules,
    module_imports,
    module_name,
    owning_part,
    package_modules,
    part_files,
)

#: The layer list: unit -> the units it imports directly. Units are the parts' folders plus three modules.
ARROWS = {
    "cli": ("logging_side", "local_triton", "export", "deploy"),
    "deploy": ("local_triton",),
    "local_triton": ("triton",),
    "export": ("triton",),
    "triton": ("logging_side",),
    "logging_side": ("repository", "command_line", "errors"),
    "repository": ("runtime", "errors"),
    "runtime": ("shared_contract",),
    "errors": ("runtime", "shared_contract"),  # runtime/errors.py: the vendored runtime keeps its own classes
    "command_line": ("shared_contract",),
    "shared_contract": (),
}
#: The modules of ``logging_side/`` that are units of their own; the rest of the folder is ``logging_side``.
MODULE_UNITS = {
    "mlflow_triton.cli": "cli",
    "mlflow_triton.__main__": "cli",
    "mlflow_triton._console": "cli",
    "mlflow_triton.errors": "errors",
    "mlflow_triton.triton": "triton",
}
MODULES = package_modules()


def unit_of(module):
    """The unit of the layer list that holds ``module`` (an import name of the package), or None."""
    for name, unit in MODULE_UNITS.items():
        if module == name or module.startswith(f"{name}."):
            return unit
    return owning_part(module)


@functools.cache
def reach(unit):
    """Every unit ``unit`` may import: those its arrows reach, one or more steps away."""
    reached = set()
    for target in ARROWS[unit]:
        reached |= {target, *reach(target)}
    return frozenset(reached)


def unit_files(*units):
    """The source files of ``units``, sorted."""
    return sorted(path for path in MODULES.values() if unit_of(module_name(path)) in units)


def files_never_importing(unit):
    """The files of every unit that may not import ``unit`` (and is not it)."""
    return unit_files(*(other for other in ARROWS if other != unit and unit not in reach(other)))


def prefixes(units):
    """The import names of ``units``: the parts' packages and the modules standing as units."""
    packages = {package for folder, package in PARTS.items() if folder in units}
    return tuple(sorted(packages | {name for name, unit in MODULE_UNITS.items() if unit in units}))


def _id(path):
    return path.relative_to(ROOT).as_posix()


# --- the list itself ---------------------------------------------------------------------------------------------


def test_layer_list_names_every_part_and_module_unit_when_compared_with_pyproject():
    assert set(ARROWS) == set(PARTS) | set(MODULE_UNITS.values())
    assert {target for targets in ARROWS.values() for target in targets} <= set(ARROWS)


def test_layer_list_has_no_circle_when_every_arrow_is_followed():
    assert [unit for unit in ARROWS if unit in reach(unit)] == []


# --- every part against the list ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(MODULES.values()), ids=_id)
def test_module_imports_only_units_its_unit_reaches_when_parsed(path):
    own = unit_of(module_name(path))
    against = sorted(
        f"{name} ({unit_of(name)})"
        for name, _ in module_imports(path, MODULES)
        if unit_of(name) != own and unit_of(name) not in reach(own)
    )

    assert against == [], f"{own} may import {sorted(reach(own))} (tests/unit/project/test_layers.py ARROWS)"


def _circles(graph):
    """Every elementary circle of ``graph`` ({module: modules it imports}) as ``[a, b, ..., a]``, each starting at
    its smallest name."""
    strongly_connected = _strongly_connected(graph)
    circles = []
    for start in sorted(graph):
        component = strongly_connected[start]
        if len(component) < 2:
            continue
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for target in sorted(graph[node], reverse=True):
                if target == start:
                    circles.append([*path, start])
                elif target in component and target > start and target not in path:
                    stack.append((target, [*path, target]))
    return sorted(circles, key=lambda circle: (len(circle), circle))


def _strongly_connected(graph):
    """{node: the set of nodes that reach it and that it reaches} (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), {}

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while node not in component:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
            for member in component:
                found[member] = frozenset(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph(kinds=("module", "type checking", "function")):
    """{module: the package's modules it imports} for the imports of ``kinds`` (where they stand)."""
    return {
        name: {target for target, where in module_imports(path, MODULES) if where in kinds and target != name}
        for name, path in MODULES.items()
    }


def test_circles_are_found_when_a_graph_holds_them():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"a"}, "d": {"a"}}

    assert _circles(graph) == [["a", "b", "a"], ["a", "b", "c", "a"]]


def test_imports_are_found_wherever_the_statement_stands_when_parsed(tmp_path):
    probe = tmp_path / "logging_side" / "_probe.py"
    probe.parent.mkdir()
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import _stage\n"
        "if TYPE_CHECKING:\n"
        "    from ._plan import Plan\n"
        "def later():\n"
        "    from mlflow_triton import triton\n"
        "    import mlflow_triton.runtime.codecs\n",
        encoding="utf-8",
    )

    modules = {"mlflow_triton", "mlflow_triton._stage", "mlflow_triton._plan", "mlflow_triton.triton"}
    modules |= {"mlflow_triton.runtime", "mlflow_triton.runtime.codecs"}

    assert module_imports(probe, modules) == [
        ("mlflow_triton._stage", "module"),
        ("mlflow_triton._plan", "type checking"),
        ("mlflow_triton.triton", "function"),
        ("mlflow_triton.runtime.codecs", "function"),
    ]


def test_a_string_naming_a_module_exactly_is_an_import_by_name_when_parsed(tmp_path):
    probe = tmp_path / "logging_side" / "_probe.py"
    probe.parent.mkdir()
    probe.write_text(
        "import importlib\n"
        "RUN = _calls('mlflow_triton.export', 'export_command')\n"
        "def later():\n"
        "    runtime = importlib.import_module('mlflow_triton.runtime')\n"
        "    return runtime, 'mlflow_triton.nowhere', 'see mlflow_triton.export'\n",
        encoding="utf-8",
    )

    modules = {"mlflow_triton", "mlflow_triton.export", "mlflow_triton.runtime"}

    assert module_imports(probe, modules) == [("mlflow_triton.export", "by name"), ("mlflow_triton.runtime", "by name")]


def test_no_module_imports_one_that_imports_it_when_every_import_is_parsed():
    circles = [" -> ".join(circle) for circle in _circles(import_graph())]

    assert circles == [], "import circles:\n" + "\n".join(circles)


# --- the part rules the list implies, each as its part's boundary test first wrote it ----------------------------


@pytest.mark.parametrize("path", files_never_importing("local_triton"), ids=_id)
def test_module_never_imports_the_local_part_when_parsed(path):
    local = [name for name in imported_modules(path) if name.startswith("mlflow_triton.local")]

    assert local == []


@pytest.mark.parametrize("path", files_never_importing("export"), ids=_id)
def test_other_parts_never_import_the_export_when_parsed(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]

    assert [name for name in imported if name.startswith("mlflow_triton.export") or name == "export"] == []


@pytest.mark.parametrize("path", files_never_importing("deploy"), ids=_id)
def test_module_never_imports_the_deploy_part_when_parsed(path):
    deploy = [name for name in imported_modules(path) if name.startswith("mlflow_triton.deploy")]

    assert deploy == []


@pytest.mark.parametrize("path", unit_files(*ARROWS["deploy"]), ids=_id)
def test_local_part_never_imports_the_deploy_part_when_parsed(path):
    source = path.read_text(encoding="utf-8")

    assert "mlflow_triton.deploy" not in source
    assert "from ..deploy" not in source


#: What the repository part may use of the others: the runtime's readers and codecs, the contract, the errors.
REPOSITORY_MAY_IMPORT = prefixes(reach("repository"))


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


def _resolved_against(package, path):
    """Absolute module names imported by ``path``, relative imports resolved against ``package``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            yield ".".join(part for part in (base, node.module) if part)


COMMAND_LINE = PARTS["command_line"]
#: What the command line may import of the package: the contract, for ``MlflowTritonError``, and itself.
COMMAND_LINE_MAY_IMPORT = (*prefixes(reach("command_line")), COMMAND_LINE)


@pytest.mark.parametrize("path", part_files("command_line"), ids=lambda p: p.name)
def test_module_imports_only_the_standard_library_and_the_contract_when_parsed(path):
    outside = [
        name
        for name in _resolved_against(COMMAND_LINE, path)
        if name.split(".")[0] not in sys.stdlib_module_names
        and name != "__future__"
        and not any(name == allowed or name.startswith(f"{allowed}.") for allowed in COMMAND_LINE_MAY_IMPORT)
    ]

    assert outside == []


SHARED_CONTRACT = ROOT / "shared_contract"
CONTRACT_SOURCES = sorted(SHARED_CONTRACT.glob("**/*.py"))
CONTRACT_MODULES = {path.stem for path in CONTRACT_SOURCES} - {"__init__"}


def _imports(path):
    """(level, top-level module or None, names) for every import statement in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name.split(".")[0], None
        elif isinstance(node, ast.ImportFrom):
            module = node.module.split(".")[0] if node.module else None
            yield node.level, module, [alias.name for alias in node.names]


@pytest.mark.parametrize("path", CONTRACT_SOURCES, ids=lambda p: p.name)
def test_shared_contract_module_imports_only_stdlib_when_parsed(path):
    outside = []
    for level, module, names in _imports(path):
        if level == 0:
            if module not in sys.stdlib_module_names:
                outside.append(module)
        elif (
            level != 1
            or (module is None and not set(names) <= CONTRACT_MODULES)
            or (module is not None and module not in CONTRACT_MODULES)
        ):
            outside.append("." * level + (module or ",".join(names)))

    assert outside == [], f"{path.name} imports outside the standard library / shared_contract: {outside}"
