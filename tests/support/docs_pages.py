"""The documentation a reader reads, in reading order, and its fenced code blocks.

``README.md`` comes first, then every ``docs/*.md`` page in the navigation order of ``mkdocs.yml``, then the
pages not (yet) in the navigation, by name. Tests run the blocks of these pages (see docs/contributing.md).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<language>[\w+-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
    flags=re.MULTILINE | re.DOTALL,
)
# A test named in a page: tests/<folder>/<file>.py::<test name>, optionally [a parameter id].
TEST_REFERENCE = re.compile(r"(?P<file>tests/[\w/]+\.py)::(?P<name>test_\w+)")
_HEADING = re.compile(r"^#{1,6} +(?P<title>.+?) *$", flags=re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: its page, the line its code starts on, its language, the nearest heading above it."""

    page: Path
    line: int
    language: str
    code: str
    heading: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"

    @property
    def id(self) -> str:
        first = next((line for line in self.code.splitlines() if line.strip() and not line.startswith("#")), "")
        slug = re.sub(r"[^A-Za-z0-9_.]+", "_", first.strip())[:40].strip("_")
        return f"{self.page.stem}-line{self.line}-{slug}"


def _nav_pages(entries: object) -> list[str]:
    """The page file names of an ``mkdocs.yml`` ``nav`` (nested sections flattened), in order."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    return []


def pages() -> list[Path]:
    """``README.md``, the navigation's pages in order, then the other ``docs/*.md`` pages by name."""
    navigation = [DOCS / name for name in _nav_pages(yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))["nav"])]
    others = sorted(path for path in DOCS.glob("*.md") if path not in navigation)
    return [README, *[path for path in navigation if path.is_file()], *others]


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """The fenced blocks of ``page`` (also indented ones, in list items), dedented; only ``language``'s if given."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if language is None or match.group("language") == language:
            found.append(
                Block(
                    page,
                    text.count("\n", 0, match.start("code")) + 1,
                    match.group("language"),
                    textwrap.dedent(match.group("code")),
                    _heading_before(text, match.start()),
                )
            )
    return found


def all_blocks(language: str) -> list[Block]:
    """Every ``language`` block of every page, in reading order."""
    return [block for page in pages() for block in blocks(page, language)]


def _heading_before(text: str, position: int) -> str:
    """The title of the last Markdown heading before ``position``, outside fenced blocks."""
    title, fenced = "", False
    for line in text[:position].splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := _HEADING.match(line)):
            title = heading.group("title")
    return title


def test_references(page: Path) -> list[str]:
    """The ``tests/…/<file>.py::<test name>`` references written in ``page``, in order."""
    return [match.group(0) for match in TEST_REFERENCE.finditer(page.read_text(encoding="utf-8"))]


def test_exists(reference: str) -> bool:
    """Whether ``tests/…/<file>.py::<test name>`` names a file of this checkout that defines that test."""
    match = TEST_REFERENCE.fullmatch(reference)
    return match is not None and match.group("name") in _function_names(ROOT / match.group("file"))


@functools.cache
def _function_names(path: Path) -> frozenset[str]:
    """The names of the functions ``path`` defines (module level, in classes, anywhere); none when it is missing."""
    if not path.is_file():
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
