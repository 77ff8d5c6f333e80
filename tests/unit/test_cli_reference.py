"""cronhook_cli/reference.py: docs/cli.md's reference is the commands' own."""

from __future__ import annotations

import cronhook_cli as cli_module


def test_docs_cli_md_carries_the_current_reference() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    start = text.index(cli_module.REFERENCE_BEGIN)
    end = text.index(cli_module.REFERENCE_END) + len(cli_module.REFERENCE_END) + 1
    assert text[start:end] == cli_module.render_reference(), (
        "docs/cli.md's reference is out of date: run .venv/bin/python -c "
        "'from cronhook_cli import write_reference; write_reference()'"
    )
