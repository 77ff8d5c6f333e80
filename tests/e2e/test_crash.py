"""kill -9 of every local-stack process, mid-traffic, three times: nothing acknowledged is lost.

Issue 26: the embedded AWS saved ``tables.json`` only after a heartbeat tick and as it
stopped, so a SIGKILL lost every write since the last tick: deliveries answered 202
(some already POSTed to their ``http:`` target), and claims, so a slot fired twice
after the restart. And a snapshot dumped one table after another, so a slot could be
passed (the trigger's pointer saved moved on) with its run record not saved: no run
and no record. Now every acknowledged write is journaled and fsync'd first
(``devstack/journal.py``).

Signed webhook deliveries and 1 s and 2 s interval triggers with an ``http:`` target at
a receiver this test runs; every stack process (the stack, its embedded AWS, its
runners) is killed with SIGKILL while both flow; the stack is started again on the same
data dir (``python -m devstack.stack``, what ``make run`` runs). Then:

- every delivery answered 202 has its event, and exactly one run, which ended;
- no slot reached the receiver twice;
- every slot of each interval trigger between its first and last run has its own run
  or record, or passed while an earlier slot's late run had not started (merged into
  it, the documented rule for a late fire).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import Stack, start_stack, stop_stack
from tests.signing import delivery_body, signed_headers

pytestmark = [pytest.mark.e2e, pytest.mark.soak]

KILLS = 3
INTERVALS_S = (1, 2)
TERMINAL = {"succeeded", "failed", "skipped", "refused", "budget_exceeded", "lost"}


class Receiver:
    """An ``http:`` target on this machine that keeps the body of every POST it gets."""

    def __init__(self) -> None:
        self.fires: list[dict] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.fires.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/fire"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Deliveries:
    """Signed deliveries posted one after another until stopped; keeps those answered 202."""

    def __init__(self, url: str, secret: str, start: int) -> None:
        self.url, self.secret, self.n = url, secret, start
        self.accepted: dict[int, dict] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._post_until_stopped, daemon=True)
        self.thread.start()

    def _post_until_stopped(self) -> None:
        with requests.Session() as session:
            while not self.stopping.is_set():
                self.n += 1
                body = delivery_body("webhook", f"crash-{self.n}", delivery_number=self.n)
                headers = signed_headers(
                    "webhook", self.secret, body, ts=int(time.time()), delivery=f"crash-{self.n}"
                )
                try:
                    answer = session.post(self.url, data=body, headers=headers, timeout=30)
                except requests.RequestException:
                    continue  # the stack is gone: not accepted, nothing promised
                if answer.status_code == 202:
                    self.accepted[self.n] = answer.json()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=60)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _kill_every_process(stack: Stack) -> None:
    """SIGKILL the embedded AWS, the runners and the stack, children first (a child
    whose parent dies first is sent SIGTERM and would save cleanly)."""
    children = _children(stack.process.pid)
    assert len(children) >= 2, f"expected the embedded AWS and the runners, got {children}"
    for pid in [*children, stack.process.pid]:
        os.kill(pid, signal.SIGKILL)
    stack.process.wait(timeout=30)
    for pid in children:  # reaped by init; wait until they are gone (their ports free)
        while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
            time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def _all(stack: Stack, path: str) -> list[dict]:
    items, cursor = [], None
    while True:
        params = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = stack.call("GET", path, params=params).json()
        items += page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            return items


def _at(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _slots_unaccounted(runs: list[dict], interval_s: int) -> list[str]:
    """The slots between the first and the last record with no run or record of their own,
    and not passed while an earlier slot waited to be decided (merged into it: a late run,
    up to its start; a late skip, up to its record). A record whose decision time is not
    known (``lost``; one rebuilt from the trigger's ``last_run`` at a restart) covers the
    slots up to the next record: its claim may have merged them."""
    by_slot = {_at(r["scheduled_for"]): r for r in runs}
    slots = sorted(by_slot)
    covered_until = slots[0]
    missing = []
    for slot in _grid(slots[0], slots[-1], interval_s):
        run = by_slot.get(slot)
        if run is not None:
            covered_until = max(covered_until, _decided_at(run, slot, slots))
        elif slot > covered_until:
            missing.append(slot.isoformat())
    return missing


def _grid(first: datetime, last: datetime, interval_s: int) -> list[datetime]:
    step = timedelta(seconds=interval_s)
    return [first + n * step for n in range(int((last - first) / step) + 1)]


def _decided_at(run: dict, slot: datetime, slots: list[datetime]) -> datetime:
    if run["started_at"]:
        return _at(run["started_at"])
    if run["status"] == "skipped" and run["finished_at"]:
        return _at(run["finished_at"])
    later = [s for s in slots if s > slot]
    return later[0] if later else slot


def _create(stack: Stack, body: dict) -> dict:
    created = stack.call("POST", "/v1/triggers", body)
    assert created.status_code == 201, created.text
    return created.json()


def test_kill_9_of_every_stack_process_loses_nothing_acknowledged_and_fires_no_slot_twice(
    tmp_path,
):
    receiver = Receiver()
    env = {"CRONHOOK_ALLOW_PRIVATE_TARGETS": "1"}
    stack = start_stack(tmp_path, env=env)
    accepted: dict[int, dict] = {}
    try:
        hook = _create(stack, {"workflow": "echo", "event": {"source": "webhook"}})
        token, secret = hook["webhook"]["url"].rsplit("/", 1)[1], hook["webhook"]["secret"]
        targets = {
            _create(stack, {"workflow": f"http:{receiver.url}", "schedule": {"interval_s": every}})[
                "id"
            ]: every
            for every in INTERVALS_S
        }
        for round_ in range(KILLS):
            fired_before, accepted_before = len(receiver.fires), len(accepted)
            deliveries = Deliveries(
                f"{stack.url}/hooks/{token}", secret, start=max(accepted, default=0)
            )
            # Mid-traffic: deliveries answered this round, and slots reaching the receiver.
            stack.wait_for(
                lambda d=deliveries, f=fired_before: (
                    len(d.accepted) >= 20 and len(receiver.fires) >= f + 3
                ),
                timeout_s=120,
            )
            _kill_every_process(stack)
            stack.log_path.rename(tmp_path / f"stack-{round_}.log")
            deliveries.stop()
            accepted.update(deliveries.accepted)
            assert len(accepted) > accepted_before
            stack = start_stack(tmp_path, env=env)
        _settle_and_check(stack, hook["id"], targets, accepted, receiver)
    finally:
        stop_stack(stack)
        receiver.close()


def _settle_and_check(
    stack: Stack, hook_id: str, targets: dict[str, int], accepted: dict, receiver: Receiver
) -> None:
    # Every accepted delivery's event has ended; each target fired a few slots since.
    fired = len(receiver.fires)

    seen: list[list[dict]] = []

    def settled() -> list[dict] | None:
        seen[:] = [_all(stack, f"/v1/triggers/{hook_id}/events")]
        done = all(e["status"] in TERMINAL for e in seen[0]) and len(receiver.fires) >= fired + 4
        return seen[0] if done else None

    try:
        events = stack.wait_for(settled, timeout_s=240)
    except AssertionError:
        open_events = [e for e in seen[0] if e["status"] not in TERMINAL]
        raise AssertionError(f"events not ended: {open_events[:5]} ({len(open_events)})") from None
    for trigger_id in targets:  # stop firing: the last slot's run settles, no new one starts
        assert stack.call("POST", f"/v1/triggers/{trigger_id}/disable").status_code == 200

    events_by_id = {e["id"]: e for e in events}
    missing = [n for n, a in accepted.items() if a["event_id"] not in events_by_id]
    assert not missing, f"{len(missing)} of {len(accepted)} accepted deliveries have no event"

    runs = _all(stack, f"/v1/triggers/{hook_id}/runs")
    runs_per_event = Counter(r["event_id"] for r in runs)
    wrong = {
        a["event_id"]: runs_per_event[a["event_id"]]
        for a in accepted.values()
        if runs_per_event[a["event_id"]] != 1
    }
    assert not wrong, f"accepted deliveries without exactly one run: {wrong}"
    assert {r["status"] for r in runs} <= TERMINAL, Counter(r["status"] for r in runs)

    slots = Counter(
        (f["trigger_id"], f["scheduled_for"]) for f in receiver.fires if f["surface"] == "schedule"
    )
    twice = {slot: n for slot, n in slots.items() if n > 1}
    assert not twice, f"slots that reached the receiver more than once: {twice}"

    for trigger_id, every in targets.items():
        runs = [r for r in _all(stack, f"/v1/triggers/{trigger_id}/runs") if r["scheduled_for"]]
        assert len(runs) >= 10
        unaccounted = _slots_unaccounted(runs, every)
        assert not unaccounted, (
            f"{trigger_id} (every {every} s): slots passed unrecorded: {unaccounted}"
        )
