"""The docs' relative links lead somewhere: a file of the repository, and a heading in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# The documents issue 30 touched; each is checked whole.
CHECKED = ("docs/comparison.md", "docs/console.md", "README.md", "docs/cookbook/README.md")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#+\s+(.*)$", path.read_text(), flags=re.MULTILINE)
    return {_anchor(h) for h in headings}


def _broken(doc: Path) -> list[str]:
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        if ROOT not in linked.parents and linked != ROOT:
            broken.append(f"{target} (outside the repository)")
        elif not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no such heading)")
    return broken


@pytest.mark.parametrize("name", CHECKED)
def test_every_relative_link_leads_to_a_file_and_heading_of_the_repository(name: str) -> None:
    assert _broken(ROOT / name) == []
