"""docs/architecture.md's line counts come from the tree (tools/tree.py), never typed."""

from __future__ import annotations

import pytest

from tools import tree


def test_every_module_is_counted_with_its_real_length():
    block = tree.render()
    for path in sorted((tree.ROOT / "chalicelib" / "store").glob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert f"{path.stem} {lines}" in block


def test_a_name_and_its_count_never_part_across_lines():
    for line in tree.render().splitlines():
        assert len(line) <= tree.WIDTH or " " not in line.strip()
        assert not line.rstrip().endswith("("), line


def test_rewrite_replaces_only_the_block():
    page = f"intro\n{tree.START}\nold 1\n{tree.END}\noutro\n"
    assert tree.rewrite(page, "new 2") == f"intro\n{tree.START}\nnew 2\n{tree.END}\noutro\n"


def test_a_page_without_the_block_is_refused():
    with pytest.raises(ValueError, match="tree:start"):
        tree.rewrite("no block here", "x")


def test_the_page_is_current():
    assert tree.main(["--check"]) == 0
