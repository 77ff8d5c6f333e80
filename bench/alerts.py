"""What alerts cost a fire: ``measure_fire_cost`` without alerts, then with the alerts
queue and a tenant-wide policy, as deployed (``python -m bench.alerts``).

Successful fires make no transition, so they must cost the same; the heartbeat's one
sweep request a tick (``detect.request_sweep``) is shared by the tick's fires.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

from bench import cost
from bench.env import MotoEnv

__all__ = ["measure", "main"]

KEYS = ("dynamodb_calls", "sqs_requests", "dynamodb_wru", "dynamodb_rru")


def _with_alerts(fresh):  # noqa: ANN001, ANN202 (MotoEnv.fresh)
    def fresh_with_alerts(**settings: str) -> MotoEnv:
        os.environ.pop("CRONHOOK_ALERTS_QUEUE_URL", None)
        env = fresh(**settings)
        from chalicelib import wiring
        from chalicelib.services.alerts import policies
        from chalicelib.services.auth import Principal
        from chalicelib.settings import reset_settings
        from chalicelib.store.aws import client

        url = client("sqs").create_queue(QueueName="cronhook-alerts")["QueueUrl"]
        os.environ["CRONHOOK_ALERTS_QUEUE_URL"] = url
        reset_settings()
        wiring.ready()
        every_kind = ["failed", "recovered", "disabled", "late", "no_event"]
        policies.create_alert(
            Principal("root", "local", "admin"),
            {"name": "all", "on": every_kind, "channels": []},
            now=datetime.now(UTC),
        )
        return env

    return fresh_with_alerts


def measure(env: MotoEnv, *, triggers: int = 100, ticks: int = 3) -> dict:
    """Per-fire calls and units, before and after alerts (one repeat each)."""
    fresh = env.fresh
    results = {}
    try:
        for name, hook in (("before", fresh), ("after", _with_alerts(fresh))):
            env.fresh = hook  # type: ignore[method-assign]
            os.environ.pop("CRONHOOK_ALERTS_QUEUE_URL", None)
            measured = cost.measure_fire_cost(env, triggers=triggers, ticks=ticks, repeats=1)
            results[name] = {k: measured["per_fire"][k] for k in KEYS}
            results[name]["usd_per_million"] = measured["usd_per_million_calls_and_lambda"]
    finally:
        env.fresh = fresh  # type: ignore[method-assign]
        os.environ.pop("CRONHOOK_ALERTS_QUEUE_URL", None)
    return results


def main() -> None:
    print(json.dumps(measure(MotoEnv().start()), indent=1))


if __name__ == "__main__":
    main()
