"""shared_contract/ imports only the standard library (it is vendored into Triton's model.py): proven here in a bare
interpreter; its imports are parsed by tests/unit/project/test_layers.py, which holds the layer list."""

import pathlib
import subprocess
import sys
import textwrap

SHARED_CONTRACT = pathlib.Path(__file__).resolve().parents[3] / "shared_contract"
SOURCES = sorted(SHARED_CONTRACT.glob("**/*.py"))


def test_shared_contract_has_sources_when_listed():
    assert SHARED_CONTRACT / "contract.py" in SOURCES


BARE_INTERPRETER_SCRIPT = textwrap.dedent(
    """
    import importlib.abc, importlib.util, sys

    folder = sys.argv[1]
    # Keep only the standard library (no site-packages, no project checkout), then the folder.
    sys.path[:] = [p for p in sys.path if "site-packages" not in p and "dist-packages" not in p] + [folder]
    allowed = set(sys.stdlib_module_names) | {"__main__", "shared_contract", "vendored_contract"}

    class DenyNonStdlib(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] not in allowed:
                raise ImportError(f"non-stdlib import attempted: {name}")
            return None

    sys.meta_path.insert(0, DenyNonStdlib())

    spec = importlib.util.spec_from_file_location("vendored_contract", folder + "/contract.py")
    contract = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = contract
    spec.loader.exec_module(contract)

    package_spec = importlib.util.spec_from_file_location(
        "shared_contract", folder + "/__init__.py", submodule_search_locations=[folder]
    )
    package = importlib.util.module_from_spec(package_spec)
    sys.modules[package_spec.name] = package
    package_spec.loader.exec_module(package)

    c = contract.Contract(
        flavor="sklearn",
        inputs=contract.StructureMapping("columns", [contract.FieldMapping("a b", "a_b")]),
        outputs=contract.StructureMapping("tensor", [contract.FieldMapping(None, "output_0")]),
    )
    assert contract.Contract.from_json(c.to_json()) == c
    assert package.Contract.__module__ == "shared_contract.contract"

    foreign = sorted(
        name for name in sys.modules
        if name.split(".")[0] not in allowed and name not in sys.builtin_module_names
    )
    assert not foreign, foreign
    assert "site" not in sys.modules
    print("ok", len(sys.modules))
    """
)


def _run_in_bare_interpreter(folder, cwd):
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", BARE_INTERPRETER_SCRIPT, str(folder)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={},
    )


def test_shared_contract_imports_in_bare_interpreter_when_site_packages_are_absent(tmp_path):
    result = _run_in_bare_interpreter(SHARED_CONTRACT, tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_bare_interpreter_check_fails_when_contract_imports_third_party_module(tmp_path):
    folder = tmp_path / "shared_contract"
    folder.mkdir()
    for source in SOURCES:
        (folder / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    with (folder / "contract.py").open("a", encoding="utf-8") as handle:
        handle.write("\nimport numpy\n")

    result = _run_in_bare_interpreter(folder, tmp_path)

    assert result.returncode != 0
    assert "numpy" in result.stderr
