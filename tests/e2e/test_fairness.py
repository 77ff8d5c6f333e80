"""A quiet tenant's run is not held behind a noisy tenant's backlog (the local runner pool).

Measured before: six 25 s ``sleep`` runs of tenant B delayed tenant A's run from 1.9 s to
48.9 s (it waited for all of B's queue). Now A waits at most for one of B's runs to end.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = pytest.mark.e2e

SLEEP_S = 8
NOISY_RUNS = 6


def test_a_quiet_tenants_run_starts_before_the_noisy_tenants_backlog(tmp_path):
    stack = start_stack(tmp_path, max_concurrency=2)
    try:
        noisy = stack.call("POST", "/v1/keys", {"role": "operator", "tenant": "noisy"}).json()
        noisy_key = noisy["key"]
        noisy_ids = []
        for n in range(NOISY_RUNS):
            created = stack.call(
                "POST",
                "/v1/triggers",
                {
                    "workflow": "sleep",
                    "schedule": {"interval_s": 86400},
                    "title": f"noisy {n}",
                    "payload": {"seconds": SLEEP_S},
                },
                key=noisy_key,
            ).json()
            noisy_ids.append(created["id"])
        quiet = stack.call(
            "POST", "/v1/triggers", {"workflow": "echo", "schedule": {"interval_s": 86400}}
        ).json()
        for trigger_id in noisy_ids:
            fired = stack.call("POST", f"/v1/triggers/{trigger_id}/fire", key=noisy_key)
            assert fired.status_code == 202, fired.text
        assert stack.call("POST", f"/v1/triggers/{quiet['id']}/fire").status_code == 202

        def finished(trigger_id: str, key: str | None = None) -> dict | None:
            runs = stack.call("GET", f"/v1/triggers/{trigger_id}/runs", key=key).json()["items"]
            done = [r for r in runs if r["status"] == "succeeded"]
            return done[0] if done else None

        quiet_run = stack.wait_for(lambda: finished(quiet["id"]), timeout_s=120)
        noisy_runs = [
            stack.wait_for(lambda t=t: finished(t, noisy_key), timeout_s=180) for t in noisy_ids
        ]
    finally:
        stop_stack(stack)
    started_before = [r for r in noisy_runs if r["started_at"] < quiet_run["started_at"]]
    # Two runners; the quiet fire arrived behind six noisy ones. In arrival order it would
    # have started seventh, after three waves of noisy runs.
    assert len(started_before) <= 3, (quiet_run, noisy_runs)
    assert all(r["finished_at"] > r["started_at"] for r in noisy_runs)
