"""End to end: ``cronhook watch DIR --trigger ID`` with the local stack (the file adapter)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.e2e.conftest import ROOT, start_stack, stop_stack

pytestmark = pytest.mark.e2e


def _cli(stack, *args):
    env = {**os.environ, "CRONHOOK_URL": stack.url, "CRONHOOK_API_KEY": stack.api_key}
    return subprocess.run(
        [sys.executable, "-m", "cronhook_cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _runs(stack, trigger_id):
    return stack.call("GET", f"/v1/triggers/{trigger_id}/runs").json()["items"]


def _outputs(stack, trigger_id, count):
    def done():
        ok = [r for r in _runs(stack, trigger_id) if r["status"] == "succeeded"]
        return ok if len(ok) >= count else None

    runs = stack.wait_for(done, timeout_s=60)
    return [stack.call("GET", f"/v1/runs/{r['id']}").json()["output"] for r in runs]


def test_watch_runs_one_event_per_settled_file_resumes_after_restart_and_stops_when_dir_goes(
    tmp_path,
):
    watched = tmp_path / "inbox"
    watched.mkdir()
    stack = start_stack(tmp_path)
    try:
        trigger = stack.call(
            "POST",
            "/v1/triggers",
            {
                "workflow": "echo",
                "event": {"source": "file", "filter": {"fields": {"name": ["a.csv", "b.csv"]}}},
            },
        ).json()
        trigger_id = trigger["id"]
        wrong = _cli(stack, "watch", str(watched), "--trigger", "trg_nope")
        assert wrong.returncode == 1, wrong.stderr
        ok = _cli(
            stack, "watch", str(watched), "--trigger", trigger_id, "--data-dir", str(stack.data_dir)
        )
        assert ok.returncode == 0, ok.stderr
        assert (stack.data_dir / "watches.json").exists()

        # Written in three chunks: one event, once the writes have settled.
        with open(watched / "a.csv", "wb") as f:
            for chunk in (b"id,n\n", b"1,2\n", b"3,4\n"):
                f.write(chunk)
                f.flush()
                time.sleep(0.2)
        (watched / "notes.txt").write_text("the filter keeps it out")
        first = _outputs(stack, trigger_id, 1)
        assert first[0]["name"] == "a.csv"
        assert first[0]["size"] == len(b"id,n\n1,2\n3,4\n")
        assert first[0]["path"] == str((watched / "a.csv").resolve())
    finally:
        stop_stack(stack)

    (watched / "b.csv").write_text("x,y\n")  # while the stack is down
    stack = start_stack(tmp_path)
    try:
        # Resumed from the list: b.csv runs; a.csv is seen again but is a duplicate.
        outputs = _outputs(stack, trigger_id, 2)
        assert sorted(o["name"] for o in outputs) == ["a.csv", "b.csv"]
        events = stack.call("GET", f"/v1/triggers/{trigger_id}/events").json()["items"]
        assert len(events) == 2
        assert len(_runs(stack, trigger_id)) == 2

        for path in watched.iterdir():
            path.unlink()
        watched.rmdir()

        def disabled():
            view = stack.call("GET", f"/v1/triggers/{trigger_id}").json()
            return view if view["status"] == "disabled" else None

        view = stack.wait_for(disabled, timeout_s=30)
        assert view["disabled_reason"] == "source_gone"
        stack.wait_for(lambda: "is gone" in stack.log_path.read_text(), timeout_s=30)
        assert trigger_id not in (stack.data_dir / "watches.json").read_text()
    finally:
        stop_stack(stack)
