"""The README's "Limits in brief" is the bold first sentence of each limit on docs/limits.md, in the same order.

A limit added, lifted or reworded on one page and not on the other fails here, naming the sentences that differ.
"""

import re

from tests.support.docs_pages import DOCS, README

_BULLET = re.compile(r"^- (?P<text>.*?)(?=^- |^\S|\Z)", flags=re.MULTILINE | re.DOTALL)
_BOLD_LEAD = re.compile(r"^\*\*(?P<lead>.+?)\*\*", flags=re.DOTALL)


def _bullets(text):
    return [" ".join(match["text"].split()) for match in _BULLET.finditer(text)]


def readme_limits():
    section = README.read_text(encoding="utf-8").split("## Limits in brief\n", 1)[1].split("\n## ", 1)[0]
    return _bullets(section)


def limits_page_leads():
    page = (DOCS / "limits.md").read_text(encoding="utf-8")
    leads = []
    for bullet in _bullets(page):
        match = _BOLD_LEAD.match(bullet)
        assert match, f"docs/limits.md: a limit without its bold first sentence: {bullet[:80]!r}"
        leads.append(match["lead"])
    return leads


def test_readme_limits_are_the_bold_sentences_of_the_limits_page_in_order():
    assert readme_limits() == limits_page_leads()


def test_bullets_are_read_whole_when_they_span_lines():
    text = "- **one\n  two.** more\n  text\n- **three.**\n\nAfter.\n"

    assert _bullets(text) == ["**one two.** more text", "**three.**"]
