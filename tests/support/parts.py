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
