"""tools/check_house: each rule catches its breach (`make lint` runs the rules on the tree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import check_house


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _function(name: str, lines: int) -> str:
    """A function of exactly ``lines`` lines."""
    return f"def {name}():\n" + "    x = 1\n" * (lines - 2) + "    return x\n"


@pytest.mark.parametrize(
    ("rel", "text", "expected"),
    [
        ("chalicelib/a.py", "x = 1\n" * 401, "401 lines (limit 400)"),
        ("app.py", "x = 1\n" * 401, "401 lines (limit 400)"),
        ("app.py", _function("route", 61), "route is 61 lines (limit 60)"),
        ("chalicelib/b.py", _function("long", 61), "long is 61 lines (limit 60)"),
        ("chalicelib/services/c.py", "from pynamodb.models import Model\n", "imports pynamodb"),
        ("chalicelib/services/d.py", "import pynamodb.exceptions\n", "imports pynamodb"),
    ],
)
def test_each_rule_names_its_breach(tmp_path: Path, rel: str, text: str, expected: str) -> None:
    found = check_house.breaches(_write(tmp_path, rel, text), root=tmp_path)
    assert len(found) == 1 and expected in found[0] and rel in found[0]


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("chalicelib/a.py", "x = 1\n" * 400),
        ("chalicelib/b.py", _function("fits", 60)),
        ("chalicelib/store/c.py", "from pynamodb.models import Model\n"),  # the store may
    ],
)
def test_what_is_within_the_rules_passes(tmp_path: Path, rel: str, text: str) -> None:
    assert check_house.breaches(_write(tmp_path, rel, text), root=tmp_path) == []


def test_an_import_cycle_is_found_even_through_an_import_inside_a_function(tmp_path: Path) -> None:
    _write(tmp_path, "chalicelib/__init__.py", "")
    _write(tmp_path, "chalicelib/a.py", "from chalicelib import b\n")
    _write(tmp_path, "chalicelib/b.py", "def later():\n    from chalicelib.a import x\n")
    _write(tmp_path, "chalicelib/c.py", "from chalicelib import a\n")
    assert check_house.import_cycles(root=tmp_path) == [["chalicelib.a", "chalicelib.b"]]


def test_relative_imports_resolve_to_their_modules(tmp_path: Path) -> None:
    _write(tmp_path, "chalicelib/__init__.py", "")
    _write(tmp_path, "chalicelib/pkg/__init__.py", "from . import one\n")
    _write(tmp_path, "chalicelib/pkg/one.py", "from .two import y\n")
    _write(tmp_path, "chalicelib/pkg/two.py", "from ..pkg import one\n")
    assert check_house.import_cycles(root=tmp_path) == [
        ["chalicelib.pkg.one", "chalicelib.pkg.two"]
    ]


def test_the_tree_check_covers_app_py_and_the_product_package() -> None:
    assert {"app.py", "chalicelib"} <= set(check_house.CHECKED)
