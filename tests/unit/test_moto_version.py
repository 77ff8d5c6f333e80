"""The embedded AWS's moto patches refuse any moto but the one they were written for."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import moto
import pytest

from devstack.moto_version import PINNED, MotoVersionError, require_pinned_moto

ROOT = Path(__file__).resolve().parents[2]
PATCHES = {
    "moto_atomic": "make_dynamodb_atomic",
    "moto_dynamo_speed": "make_dynamodb_fast",
    "moto_fidelity": "make_moto_faithful",
    "moto_query_speed": "make_query_fast",
    "moto_sqs_speed": "make_sqs_fast",
    "moto_wakeup": "make_long_polls_wake",
    "moto_write_speed": "make_writes_fast",
}


def test_the_pin_in_the_guard_is_the_pin_in_requirements():
    text = (ROOT / "requirements-dev.txt").read_text()
    pin = re.search(r"^moto\[server\]==(\S+)$", text, re.M)
    assert pin is not None
    assert pin.group(1) == PINNED == moto.__version__


def test_another_moto_is_refused_with_what_to_do():
    with pytest.raises(MotoVersionError) as err:
        require_pinned_moto("moto_wakeup", installed="6.0.0")
    message = str(err.value)
    assert "moto 6.0.0 is installed" in message
    assert f"moto[server]=={PINNED}" in message
    assert "devstack/moto_wakeup.py" in message
    require_pinned_moto("moto_wakeup", installed=PINNED)


@pytest.mark.parametrize("module, make", sorted(PATCHES.items()))
def test_every_patch_checks_the_version_before_patching(monkeypatch, module, make):
    patch = importlib.import_module(f"devstack.{module}")
    monkeypatch.setattr(moto, "__version__", "0.0.1")
    with pytest.raises(MotoVersionError, match=module):
        getattr(patch, make)()


def test_the_journal_checks_the_version_before_patching(monkeypatch, tmp_path):
    from devstack import journal_hooks

    monkeypatch.setattr(moto, "__version__", "0.0.1")
    with pytest.raises(MotoVersionError, match="journal_hooks"):
        journal_hooks.install(None, bucket_prefix="cronhook-local-")  # type: ignore[arg-type]


def test_every_patch_module_is_listed():
    found = {p.stem for p in (ROOT / "devstack").glob("moto_*.py")} - {"moto_version"}
    assert found == set(PATCHES)
