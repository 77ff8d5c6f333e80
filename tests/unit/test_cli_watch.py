"""cronhook_cli/watch.py: ``cronhook watch`` checks the trigger and the dir, then keeps it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.cli_fake import TRIGGER, FakeCronhook, invoke, only_request
from tests.unit.cli_fixtures import api_fixture  # noqa: F401

FILE_TRIGGER = {**TRIGGER, "id": "trg_files", "event": {"source": "file", "filter": None}}


def _stack_uses(data_dir: Path, url: str) -> None:
    """What the local stack writes into the data dir it uses."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "stack.json").write_text(json.dumps({"url": url}))


def test_watch_with_a_data_dir_no_stack_uses_fails_and_keeps_nothing(
    api: FakeCronhook, tmp_path: Path
) -> None:
    api.answer("GET", "/v1/triggers/trg_files", 200, FILE_TRIGGER)
    inbox, wrong = tmp_path / "inbox", tmp_path / "not-the-data-dir"
    inbox.mkdir()

    result = invoke(
        api.url, "watch", str(inbox), "--trigger", "trg_files", "--data-dir", str(wrong)
    )

    assert result.exit_code == 1, result.output
    assert "not the data dir of a local stack" in result.output
    assert "CRONHOOK_DATA_DIR" in result.output
    assert "watching" not in result.output
    assert not (wrong / "watches.json").exists()


def test_watch_with_another_stacks_data_dir_fails(api: FakeCronhook, tmp_path: Path) -> None:
    api.answer("GET", "/v1/triggers/trg_files", 200, FILE_TRIGGER)
    inbox, other = tmp_path / "inbox", tmp_path / "other"
    inbox.mkdir()
    _stack_uses(other, "http://127.0.0.1:9999")

    result = invoke(
        api.url, "watch", str(inbox), "--trigger", "trg_files", "--data-dir", str(other)
    )

    assert result.exit_code == 1, result.output
    assert "http://127.0.0.1:9999" in result.output
    assert not (other / "watches.json").exists()


def test_watch_keeps_the_watch_in_the_data_dir(api: FakeCronhook, tmp_path: Path) -> None:
    api.answer("GET", "/v1/triggers/trg_files", 200, FILE_TRIGGER)
    inbox, data_dir = tmp_path / "inbox", tmp_path / "data"
    inbox.mkdir()
    _stack_uses(data_dir, api.url)

    result = invoke(
        api.url, "watch", str(inbox), "--trigger", "trg_files", "--data-dir", str(data_dir)
    )

    assert result.exit_code == 0, result.output
    assert only_request(api).path == "/v1/triggers/trg_files"
    assert result.stdout.startswith(f"watching {inbox.resolve()} for trigger trg_files")
    kept = (data_dir / "watches.json").read_text()
    assert str(inbox.resolve()) in kept and "trg_files" in json.dumps(json.loads(kept))


def test_watch_of_a_trigger_that_is_not_a_file_trigger_is_a_usage_error(
    api: FakeCronhook, tmp_path: Path
) -> None:
    api.answer("GET", "/v1/triggers/trg_01", 200, TRIGGER)

    result = invoke(
        api.url, "watch", str(tmp_path), "--trigger", "trg_01", "--data-dir", str(tmp_path / "d")
    )

    assert result.exit_code == 2
    assert "has event.source None; create one with --file" in result.stderr
    assert not (tmp_path / "d").exists()


def test_watch_of_a_missing_directory_is_a_usage_error(api: FakeCronhook, tmp_path: Path) -> None:
    api.answer("GET", "/v1/triggers/trg_files", 200, FILE_TRIGGER)
    missing = tmp_path / "nope"

    result = invoke(
        api.url, "watch", str(missing), "--trigger", "trg_files", "--data-dir", str(tmp_path / "d")
    )

    assert result.exit_code == 2
    assert f"{missing} is not a directory" in result.stderr
    assert not (tmp_path / "d").exists()
