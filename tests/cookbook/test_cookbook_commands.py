"""The cookbook's shell commands, run as written (only the addresses swapped for the test's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cookbook.conftest import COOKBOOK, fire, settled

pytestmark = pytest.mark.e2e

FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>
<item><guid>post-1</guid><title>First</title><link>https://blog.example/1</link></item>
</channel></rss>"""


def _sh_blocks(example: str) -> list[str]:
    text = (COOKBOOK / example / "README.md").read_text()
    return [
        re.sub(r"^ {2}", "", b, flags=re.MULTILINE)
        for b in re.findall(r"```sh\n(.*?)```", text, re.S)
    ]


def _bash(script: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _bare_env(tmp_path: Path) -> dict:
    """A shell with no AWS settings of its own (no credentials, no region, no ~/.aws)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def test_the_weekly_report_secret_command_works_as_written_without_aws_settings(
    cookbook_stack, aws_port, tmp_path
):
    command = next(b for b in _sh_blocks("weekly_report") if "secretsmanager" in b)
    command = command.replace("127.0.0.1:4566", f"127.0.0.1:{aws_port}")
    command = command.replace("client-7/REPORT_TOKEN", "client-70/REPORT_TOKEN")
    done = _bash(command, _bare_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "client-70/REPORT_TOKEN" in done.stdout


def test_the_rss_create_command_makes_a_trigger_that_runs(
    cookbook_stack, receiver_factory, tmp_path
):
    rx = receiver_factory(feed=FEED)
    command = next(b for b in _sh_blocks("rss_repurposer") if "triggers create" in b)
    command = command.replace("https://blog.example/feed.xml", rx.url + "/feed.xml")
    command = command.replace("https://social.example/post", rx.url + "/post")
    env = {
        **_bare_env(tmp_path),
        "CRONHOOK_URL": cookbook_stack.url,
        "CRONHOOK_API_KEY": cookbook_stack.api_key,
    }
    done = _bash(command.strip() + " -o json", env)
    assert done.returncode == 0, done.stderr
    import json

    trigger = json.loads(done.stdout)
    assert trigger["workflow"] == "rss-repurposer"
    run = settled(cookbook_stack, fire(cookbook_stack, trigger["id"]))
    assert run["status"] == "succeeded", run
    assert [p["body"]["title"] for p in rx.posts] == ["First"]
