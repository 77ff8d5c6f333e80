"""cronhook_cli/root.py: the ``cronhook`` group, ``main()`` and its exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any

import pytest
from click.testing import CliRunner

import cronhook_cli as cli_module
from cronhook_cli import cli
from tests.unit.cli_fake import API_KEY, FakeCronhook
from tests.unit.cli_fixtures import api_fixture, closed_port_url_fixture  # noqa: F401


def run_main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["cronhook", *args])
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
    return exited.value.code  # type: ignore[return-value]


def test_main_exits_1_without_a_traceback_when_the_server_is_down(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], closed_port_url: str
) -> None:
    code = run_main(monkeypatch, "--url", closed_port_url, "triggers", "list")

    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("Error: cannot reach cronhook at")
    assert "Traceback" not in captured.err and captured.out == ""


def test_main_exits_2_on_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(monkeypatch, "triggers", "create", "--workflow", "echo", "--every", "soon")

    assert code == 2
    assert "Invalid value for '--every'" in capsys.readouterr().err


def test_main_exits_0_on_success(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], api: FakeCronhook
) -> None:
    api.answer("POST", "/v1/triggers/trg_01/fire", 202, {"run_id": "run_1"})

    code = run_main(
        monkeypatch, "--url", api.url, "--api-key", API_KEY, "triggers", "fire", "trg_01", "--json"
    )

    assert code == 0
    assert json.loads(capsys.readouterr().out) == {"run_id": "run_1"}


def test_main_turns_an_unexpected_exception_into_exit_1_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_module.Client, "request", explode)

    code = run_main(monkeypatch, "triggers", "get", "trg_01")

    err = capsys.readouterr().err
    assert code == 1
    assert "unexpected failure: RuntimeError: a bug" in err
    assert "Traceback" not in err


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("cronhook ")
    assert result.stdout.split()[1][0].isdigit() or result.stdout.split()[1] == "unknown"


def test_shell_completion_completes_commands() -> None:
    # What docs/cli.md tells people to put in their shell's start-up file.
    env = {"_CRONHOOK_COMPLETE": "bash_complete", "COMP_WORDS": "cronhook tri", "COMP_CWORD": "1"}
    result = CliRunner().invoke(cli, [], env=env, prog_name="cronhook", standalone_mode=True)
    assert result.stdout.split() == ["plain,triggers"]


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cronhook_cli", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: cronhook [OPTIONS] COMMAND [ARGS]...")
    listed = done.stdout.split("Commands:")[1].split()
    assert set(cli.commands) <= set(listed)


def test_the_console_script_is_cronhook_cli_main() -> None:
    (script,) = entry_points(group="console_scripts", name="cronhook")

    assert script.value == "cronhook_cli:main"
    assert script.load() is cli_module.main
