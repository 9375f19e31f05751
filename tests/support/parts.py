"""The package's parts (pyproject's package-dir) and the modules a source file imports, for the boundary tests."""

import ast
import pathlib

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _package_dirs():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {folder: package for package, folder in setuptools["package-dir"].items()}


#: {folder: import package}, as pyproject.toml maps them (logging_side -> mlflow_triton, ...)
PARTS = _package_dirs()


def part_files(folder):
    return sorted((ROOT / folder).glob("*.py"))


def module_name(path):
    package = PARTS[path.parent.name]
    return package if path.stem == "__init__" else f"{package}.{path.stem}"


def imported_modules(path):
    """Absolute module names imported by ``path`` (relative imports resolved against its package), each import
    ``from M import a`` giving ``M`` and ``M.a`` (``a`` may be a module or a name)."""
    package = PARTS[path.parent.name]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def owning_part(module):
    """The part (its folder) that holds ``module``: the longest import package that prefixes it."""
    matches = [
        (package, folder) for folder, package in PARTS.items() if module == package or module.startswith(package + ".")
    ]
    return max(matches, key=lambda match: len(match[0]))[1] if matches else None


def absolute_imports(path):
    """Like :func:`imported_modules` for a file outside the parts (examples/): its absolute imports only."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def package_modules():
    """Every module of the package by its import name: ``{"mlflow_triton.local.sources": path, ...}``."""
    return {module_name(path): path for folder in PARTS for path in part_files(folder)}


def module_imports(path, modules):
    """``(module, where)`` for every import in ``path`` of a module of ``modules``, wherever the statement stands.

    ``from M import a`` gives ``M.a`` where that is a module, else ``M``; ``import a.b`` gives the longest name of
    ``modules`` that begins it. ``where`` is ``"module"`` for a statement run on import, ``"type checking"`` under
    ``if TYPE_CHECKING:``, ``"function"`` inside a function (a lazy import is an import all the same) and
    ``"by name"`` for a string that names a module of ``modules`` exactly (imported with ``importlib``, run with
    ``-m``, or listed in a registry that imports it on first use, such as the command line's ``_calls``).
    """
    package = PARTS[path.parent.name]  # a module and its package's __init__ resolve relative imports alike

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node, where):
        if isinstance(node, ast.Import):
            yield from ((known(alias.name), where) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            for alias in node.names:
                yield (f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else known(module)), where
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules:
            yield node.value, "by name"
        for child in ast.iter_child_nodes(node):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = "function"
            elif isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING") and where == "module":
                inner = "type checking" if child in node.body else where
            else:
                inner = where
            yield from visit(child, inner)

    return [(name, where) for name, where in visit(ast.parse(path.read_text(encoding="utf-8")), "module") if name]
