"""Every planted bug of ``make mutants`` still applies to the code it plants it in.

A mutant whose text no longer occurs (the code moved or was renamed) would be reported
as a failure only when ``make mutants`` runs; here it fails with the suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.mutations import MUTATIONS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_the_mutants_text_occurs_once_in_its_file(mutation) -> None:
    source = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert source.count(mutation.old) == 1, f"{mutation.path}: the text to mutate moved"
    assert mutation.new != mutation.old
