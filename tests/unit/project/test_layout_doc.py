"""docs/layout.md names every part of the package as pyproject.toml maps it, so the page cannot drift."""

import re

from tests.support.parts import PARTS, ROOT

LAYOUT = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")


def _parts_table():
    section = LAYOUT.split("## Parts", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([a-z_]+)/` \| `([a-z_.]+)` \|", section, re.M))


def test_layout_page_lists_every_part_with_its_import_name_when_compared_with_pyproject():
    assert _parts_table() == PARTS
