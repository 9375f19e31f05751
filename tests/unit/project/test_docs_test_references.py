"""The documentation cannot rot silently: every test it names exists, every README link reaches its target.

``mkdocs build --strict`` (``make docs``) checks the links between docs/ pages; README.md is not part of the
site, so its relative links and anchors are checked here, with the slugs the site uses.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from tests.support import docs_pages

PAGES = [*docs_pages.pages(), docs_pages.ROOT / "CHANGELOG.md"]
REFERENCES = sorted({(page.name, reference) for page in PAGES for reference in docs_pages.test_references(page)})
README_LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#(?P<anchor>[^)\s]+))?\)")
GUIDE = docs_pages.DOCS / "auditing-the-runtime.md"


def anchors(page: Path) -> set[str]:
    """The anchors the site gives ``page``'s headings (Python-Markdown's toc slugs)."""
    text = page.read_text(encoding="utf-8")
    titles = [line.lstrip("#").strip() for line in _lines_outside_fences(text) if re.match(r"^#{1,6} ", line)]
    return {slugify(re.sub(r"[`*]", "", title), "-") for title in titles}


def _lines_outside_fences(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


@pytest.mark.parametrize(
    ("page", "reference"), REFERENCES, ids=[f"{page}-{reference.split('::')[1]}" for page, reference in REFERENCES]
)
def test_docs_name_only_tests_that_exist_when_a_page_names_a_test(page, reference):
    assert docs_pages.test_exists(reference), f"{page} names {reference}, which does not exist"


def test_auditors_guide_names_tests_for_every_step_when_read():
    references = docs_pages.test_references(GUIDE)

    assert len(references) >= 30
    files = {Path(reference.split("::")[0]).name for reference in references}
    assert {
        "test_runtime_initialize.py",
        "test_runtime_execute.py",
        "test_runtime_loading.py",
        "test_runtime_conversions.py",
        "test_runtime_codecs.py",
    } <= files


def test_readme_links_reach_an_existing_file_and_heading_when_relative():
    broken = []
    for match in README_LINK.finditer(docs_pages.README.read_text(encoding="utf-8")):
        target, anchor = match.group("target"), match.group("anchor")
        if "://" in target:
            continue
        path = docs_pages.ROOT / target
        if not path.exists() or (anchor is not None and anchor not in anchors(path)):
            broken.append(match.group(0))

    assert broken == []


def test_the_auditors_guide_states_the_line_counts_and_the_runtime_version_of_the_code_it_describes():
    from mlflow_triton.runtime import RUNTIME_VERSION

    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    stated = dict(
        re.findall(r"`(?:[a-z_]+/)?([a-z_]+\.py)` \(?(\d+)(?: lines)?\)?", text.split("an hour is enough")[0])
    )
    root = docs_pages.ROOT
    actual = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in [*(root / "runtime").glob("*.py"), root / "shared_contract" / "contract.py"]
        if path.name != "__init__.py"
    }

    assert {name: int(count) for name, count in stated.items()} == actual
    assert f"runtime version {RUNTIME_VERSION} " in text


def test_the_auditors_guide_lists_the_sources_of_model_py_in_the_order_the_composer_uses():
    from mlflow_triton._model_py import SOURCES

    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    sentence = text.split("composes `1/model.py` from these sources, in dependency order:")[1].split(". ")[0]

    assert re.findall(r"`([\w/]+\.py)`", sentence) == [label for label, _ in SOURCES]


def test_the_auditors_guide_states_the_mapping_versions_the_contract_reads():
    from mlflow_triton.shared_contract.contract import SUPPORTED_MAPPING_VERSIONS

    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    stated = re.search(r"an unsupported mapping version \(supported: ([\d, ]+)\)", text).group(1)

    assert tuple(int(version) for version in stated.split(", ")) == SUPPORTED_MAPPING_VERSIONS


# Named in the guide, but written by the logging side, not by the code Triton runs.
NOT_RUNTIME_NAMES = {"mlflow_triton_runtime_version"}


def test_the_auditors_guide_names_only_functions_classes_and_keys_the_runtime_sources_hold():
    root = docs_pages.ROOT
    sources = [*(root / "runtime").glob("*.py"), root / "shared_contract" / "contract.py"]
    words = {word for path in sources for word in re.findall(r"\w+", path.read_text(encoding="utf-8"))}
    code = re.findall(r"`([A-Za-z_][\w.]*)`", GUIDE.read_text(encoding="utf-8"))
    # snake_case and CamelCase names: functions, classes, config keys; plain words (`predict`, `None`) are left out
    names = {part for name in code for part in name.split(".") if "_" in part or re.search(r"[a-z][A-Z]", part)}

    assert sorted(names - words - NOT_RUNTIME_NAMES) == []
