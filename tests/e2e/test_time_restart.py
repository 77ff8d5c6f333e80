"""Time across a restart of the local stack: each catch-up mode, a one-off skip and an extra
run are recorded as the contract says after a restart that spans slots.

Three interval triggers (5 s) run; the stack stops for longer than the 120 s after which a
slot counts as missed; it starts again from the same data directory. Then: ``latest`` ran
one late fire and recorded the slots the outage passed ``missed``; ``all`` ran every one of
them; ``none`` ran none and recorded each ``missed``. A skip and an extra set before the
stop, for after the restart, were kept and done: the slot recorded ``skipped`` with its
reason, the extra run ``succeeded``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = pytest.mark.e2e

OUTAGE_S = 130


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def _runs(stack, trigger_id: str) -> list[dict]:
    answer = stack.call("GET", f"/v1/triggers/{trigger_id}/runs", params={"limit": 200})
    return [r for r in answer.json()["items"] if r["surface"] == "schedule"]


def _create(stack, schedule: dict) -> str:
    answer = stack.call("POST", "/v1/triggers", {"workflow": "echo", "schedule": schedule})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def test_catch_up_modes_a_skip_and_an_extra_are_recorded_after_a_restart(tmp_path):
    first = start_stack(tmp_path)
    try:
        ids = {
            mode: _create(first, {"interval_s": 5, **({"catchup": {"mode": mode}} if mode else {})})
            for mode in (None, "all", "none")
        }
        latest = ids[None]
        # A skip and an extra for well after the restart (the outage and two starts).
        later = datetime.now(UTC) + timedelta(seconds=OUTAGE_S + 200)
        fires = first.call("GET", f"/v1/triggers/{latest}/preview?count=100").json()["fires"]
        skip_slot = next(f for f in fires if _at(f) >= later)
        extra_at = _at(skip_slot) + timedelta(seconds=2, milliseconds=500)
        answer = first.call(
            "POST", f"/v1/triggers/{latest}/skip", {"slot": skip_slot, "reason": "planned"}
        )
        assert answer.status_code == 200, answer.text
        answer = first.call("POST", f"/v1/triggers/{latest}/extra", {"at": _iso(extra_at)})
        assert answer.status_code == 200, answer.text
        for trigger_id in ids.values():
            first.wait_for(
                lambda t=trigger_id: any(r["status"] == "succeeded" for r in _runs(first, t))
            )
    finally:
        stop_stack(first)
    stopped = datetime.now(UTC)
    time.sleep(OUTAGE_S)
    second = start_stack(tmp_path)
    restarted = datetime.now(UTC)
    try:
        skip_ms = _at(skip_slot)

        def done() -> bool:
            runs = _runs(second, latest)
            return any(_at(r["scheduled_for"]) > _at(_iso(extra_at)) for r in runs) and all(
                any(
                    r["status"] == "succeeded" and _at(r["scheduled_for"]) > restarted
                    for r in _runs(second, t)
                )
                for t in ids.values()
            )

        second.wait_for(done, timeout_s=OUTAGE_S + 240, every_s=2)
        # The slots the outage spanned (a margin at each end for runs in flight at the stop).
        window = (stopped + timedelta(seconds=15), restarted - timedelta(seconds=15))

        def spanned(trigger_id: str) -> list[str]:
            return [
                r["status"]
                for r in _runs(second, trigger_id)
                if window[0] < _at(r["scheduled_for"]) < window[1]
            ]

        assert set(spanned(ids[None])) == {"missed"}
        assert set(spanned(ids["none"])) == {"missed"}
        assert set(spanned(ids["all"])) == {"succeeded"}
        assert len(spanned(ids["all"])) >= (window[1] - window[0]).total_seconds() // 5 - 1
        late = [
            r
            for r in _runs(second, latest)
            if r["status"] == "succeeded" and (r["lateness_ms"] or 0) > 100_000
        ]
        assert len(late) == 1  # latest: one late fire for the outage
        by_slot = {r["scheduled_for"]: r for r in _runs(second, latest)}
        skipped = by_slot[skip_slot.replace("Z", ".000Z") if "." not in skip_slot else skip_slot]
        assert (skipped["status"], skipped["error"]) == ("skipped", "planned")
        extra = [r for r in _runs(second, latest) if _at(r["scheduled_for"]) == extra_at]
        assert [r["status"] for r in extra] == ["succeeded"]
        assert skip_ms > restarted
    finally:
        stop_stack(second)
