"""tools/check_house: each rule catches its breach (`make lint` runs the rules on the tree)."""

from __future__ import annotations

import ast
import json
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
        ("chalicelib/sources/d2.py", "from pynamodb.models import Model\n", "imports pynamodb"),
        ("chalicelib/assembly.py", "import pynamodb\n", "imports pynamodb"),
        ("app.py", "from pynamodb.exceptions import DoesNotExist\n", "imports pynamodb"),
        ("devstack/r.py", "from pynamodb.models import Model\n", "imports pynamodb"),
        ("cronhook_cli/c.py", "import pynamodb\n", "imports pynamodb"),
        ("cronhook_cli/d.py", 'x = client("dynamodb")\n', "makes a DynamoDB client"),
        ("chalicelib/heartbeat.py", 'x = client("dynamodb")\n', "makes a DynamoDB client"),
        ("chalicelib/services/e.py", 'x = client("dynamodb")\n', "makes a DynamoDB client"),
        ("chalicelib/sources/f.py", "x = aws.client('dynamodb')\n", "makes a DynamoDB client"),
        ("chalicelib/workflows/g.py", 'x = boto3.resource("dynamodb")\n', "DynamoDB client"),
        ("chalicelib/routes/h.py", 's.client(service_name="dynamodb")\n', "DynamoDB client"),
        ("app.py", 'x = client("dynamodb")\n', "makes a DynamoDB client"),
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
        ("chalicelib/store/d.py", 'x = client("dynamodb")\n'),  # and it may call DynamoDB
        ("chalicelib/services/e.py", 'x = client("sqs")\n'),  # other clients are fine
        ("devstack/f.py", 'x = client("dynamodb")\n'),  # the embedded AWS loads its tables
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


def test_the_tree_check_covers_the_whole_tree() -> None:
    wanted = {"app.py", "chalicelib", "devstack", "cronhook_cli", "infra", "bench", "tools"}
    assert wanted <= set(check_house.CHECKED)


def test_the_whole_tree_keeps_the_house_rules() -> None:
    assert check_house.main([]) == 0


_MODELS = (
    "from pynamodb.models import Model\n"
    "from pynamodb.indexes import GlobalSecondaryIndex\n"
    "class TableBase(Model): pass\n"
    "class TriggerModel(TableBase): pass\n"
    "class ByTenant(GlobalSecondaryIndex): pass\n"
    "class DueRow: pass\n"  # a record of the store: not a model
)


def test_model_classes_are_the_stores_classes_built_on_a_pynamodb_model_or_index(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "chalicelib/store/triggers.py", _MODELS)
    _write(tmp_path, "chalicelib/store/runs.py", "class RunModel(base.TableBase): pass\n")
    _write(tmp_path, "chalicelib/services/x.py", "class Elsewhere(Model): pass\n")
    assert check_house.model_class_names(tmp_path) == {
        "TableBase",
        "TriggerModel",
        "ByTenant",
        "RunModel",
    }


def test_every_mention_of_a_model_class_counts_aliases_and_attributes_too() -> None:
    text = (
        "from chalicelib.store.models import TriggerModel, RunModel as R, create_tables\n"
        "from chalicelib.store import models\n"
        "def f(x: TriggerModel) -> None:\n"
        "    R.get(1); models.RunModel.get(2); TriggerModel.by_tenant.query('t')\n"
        "    'TriggerModel in a string does not count'\n"
    )
    names = {"TriggerModel", "RunModel"}
    # imports 2, the annotation, R, models.RunModel, TriggerModel.by_tenant
    assert check_house.model_name_uses(ast.parse(text), names) == 6


def test_the_ratchet_counts_modules_outside_the_store_only(tmp_path: Path) -> None:
    _write(tmp_path, "chalicelib/store/triggers.py", _MODELS)
    _write(tmp_path, "chalicelib/store/runs.py", "class RunModel(TableBase): pass\nx = RunModel\n")
    _write(tmp_path, "chalicelib/services/a.py", "x = RunModel\ny = TriggerModel\n")
    _write(tmp_path, "chalicelib/services/b.py", "x = 1\n")
    _write(tmp_path, "app.py", "x = TableBase\n")
    assert check_house.model_name_counts(tmp_path) == {"chalicelib/services/a.py": 2, "app.py": 1}


@pytest.mark.parametrize(
    ("counts", "allowed", "expected"),
    [
        ({"a.py": 2}, {"a.py": 2}, []),
        ({"a.py": 1}, {"a.py": 2}, []),
        ({}, {"a.py": 2}, []),
        (
            {"a.py": 3},
            {"a.py": 2},
            ["a.py: names the store's model classes 3 times, up from the 2"],
        ),
        ({"b.py": 1}, {"a.py": 2}, ["b.py: names the store's model classes 1 times and is not in"]),
    ],
)
def test_the_ratchet_refuses_a_new_module_or_a_rising_count(
    counts: dict, allowed: dict, expected: list[str]
) -> None:
    found = check_house.ratchet_breaches(counts, allowed)
    assert len(found) == len(expected)
    assert all(line.startswith(want) for line, want in zip(found, expected, strict=True))


def test_tightening_lowers_and_drops_allowances_but_never_raises_or_adds() -> None:
    counts = {"a.py": 1, "b.py": 5, "new.py": 3}
    allowed = {"a.py": 2, "b.py": 4, "gone.py": 7}
    assert check_house.tightened(counts, allowed) == {"a.py": 1, "b.py": 4}


def test_the_checked_in_allowance_holds_for_the_tree() -> None:
    allowed = json.loads((check_house.ROOT / check_house.ALLOWED).read_text())
    assert check_house.ratchet_breaches(check_house.model_name_counts(), allowed) == []
