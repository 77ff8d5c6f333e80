"""Cookbook: the repository checks its own cookbook every week, with cronhook.

``cookbook-freshness`` runs every example's self-check against the code it is deployed
with: each example workflow is called as the runner would call it (a real ``Fire``, real
HTTP to a receiver served in this process), and its answer is compared with what the
example promises. A broken example fails the run with the examples that broke and why;
``limits.max_failures`` then disables the trigger with a visible reason instead of failing
quietly every week. The same checks run in ``make test`` (tests/cookbook/).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chalicelib.workflows import Fire, Result, WorkflowFailed, get_workflow, workflow

FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
<item><guid>b</guid><title>Second</title><link>https://example.com/b</link></item>
<item><guid>a</guid><title>First</title><link>https://example.com/a</link></item>
</channel></rss>"""


class Receiver:
    """A local HTTP endpoint: serves the feed at ``/feed``, records every POST."""

    def __init__(self) -> None:
        self.posts: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                data = FEED.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/rss+xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                receiver.posts.append(
                    {
                        "path": self.path,
                        "key": self.headers.get("Idempotency-Key"),
                        "body": json.loads(self.rfile.read(length) or b"null"),
                    }
                )
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[Receiver]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()


class _Secrets:
    def get(self, name: str) -> str:
        return f"selfcheck-{name}"


def _fire(trigger_id: str, *, payload: Any = None, state: dict | None = None) -> Fire:
    at = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    return Fire(
        trigger_id=trigger_id,
        fire_id=f"{trigger_id}:selfcheck",
        scheduled_for=at,
        surface="manual",
        payload=payload,
        state=state or {},
        secrets=_Secrets(),
    )


def _call(name: str, fire: Fire) -> Result:
    registered = get_workflow(name)
    if registered is None:
        raise AssertionError(f"workflow {name!r} is not registered")
    result = registered.func(fire)
    if not isinstance(result, Result):
        raise AssertionError(f"{name} returned {type(result).__name__}, not a Result")
    return result


def check_weekly_report() -> None:
    """One POST per fire, keyed by the fire id; the state counts the report."""
    with Receiver().running() as rx:
        fire = _fire("trg_check", payload={"client": "client-1", "endpoint": rx.url + "/r"})
        result = _call("weekly-report", fire)
        assert [p["key"] for p in rx.posts] == ["weekly-report/trg_check:selfcheck"], rx.posts
        assert result.state == {"reports_sent": 1, "last_week": "2026-W50"}, result.state


def check_rss_repurposer() -> None:
    """Oldest item first, the cursor on the newest, each post keyed by fire and item."""
    with Receiver().running() as rx:
        state = {"feed_url": rx.url + "/feed", "post_url": rx.url + "/post", "cursor": None}
        result = _call("rss-repurposer", _fire("trg_rss", state=state))
        assert [p["body"]["title"] for p in rx.posts] == ["First", "Second"], rx.posts
        assert result.state is not None and result.state["cursor"] == "b", result.state
        again = _call("rss-repurposer", _fire("trg_rss", state=result.state))
        assert again.output == {"posted": []}, again.output


def check_approval_decision() -> None:
    """An answer for the wrong draft fails; the right one is recorded."""
    deleted: list[str] = []

    class Triggers:
        def delete(self, trigger_id: str) -> None:
            deleted.append(trigger_id)

    fire = _fire("trg_dec", payload={"draft_id": "d1", "approved": True}, state={"draft_id": "d1"})
    fire.triggers = Triggers()
    result = _call("approval-decision", fire)
    assert result.output["decision"] == "approved" and deleted == ["trg_dec"], (result, deleted)
    wrong = _fire("trg_dec", payload={"draft_id": "d2"}, state={"draft_id": "d1"})
    try:
        _call("approval-decision", wrong)
    except WorkflowFailed:
        pass
    else:
        raise AssertionError("an answer for another draft was accepted")


CHECKS: dict[str, Callable[[], None]] = {
    "weekly-report": check_weekly_report,
    "rss-repurposer": check_rss_repurposer,
    "approval-decision": check_approval_decision,
}


def run_checks(checks: dict[str, Callable[[], None]] | None = None) -> dict[str, str]:
    """Each check's outcome: ``"ok"`` or the reason it broke."""
    outcomes = {}
    for name, check in (checks or CHECKS).items():
        try:
            check()
            outcomes[name] = "ok"
        except Exception as exc:  # a broken example is the finding, not a crash
            outcomes[name] = f"{type(exc).__name__}: {exc}"[:300]
    return outcomes


@workflow("cookbook-freshness")
def cookbook_freshness(fire: Fire) -> Result:
    """Runs every cookbook example's self-check; fails naming the examples that broke."""
    outcomes = run_checks()
    broken = {name: why for name, why in outcomes.items() if why != "ok"}
    state = {"last_checked": fire.fire_id, "broken": sorted(broken)}
    if broken:
        raise WorkflowFailed(f"cookbook examples broken: {json.dumps(broken)}", state=state)
    return Result(state=state, output=outcomes)


def trigger_body() -> dict:
    """Monday 06:00 UTC, disabled after two broken weeks in a row."""
    return {
        "workflow": "cookbook-freshness",
        "title": "Cookbook freshness check",
        "tags": ["maintenance"],
        "schedule": {"cron": "0 6 * * 1", "timezone": "UTC"},
        "limits": {"max_failures": 2},
    }
