"""Built-in workflows, for trying cronhook out: ``echo``, ``fail``, ``sleep``."""

from __future__ import annotations

import time
from datetime import timedelta

from chalicelib.workflows import Fire, Result, workflow

__all__ = ["echo", "fail", "sleep"]


def _number(value: object, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


@workflow("echo")
def echo(fire: Fire) -> Result:
    """Returns its payload as output and counts its runs in state.count."""
    state = dict(fire.state or {})
    state["count"] = int(_number(state.get("count"))) + 1
    payload = fire.payload if isinstance(fire.payload, dict) else {}
    cost = _number(payload.get("cost_usd"), _number(state.get("cost_usd")))
    next_fire_at = None
    next_in_s = state.get("next_in_s")
    if (
        isinstance(next_in_s, int | float)
        and not isinstance(next_in_s, bool)
        and fire.scheduled_for
    ):
        next_fire_at = fire.scheduled_for + timedelta(seconds=float(next_in_s))
    return Result(state=state, output=fire.payload, cost_usd=cost, next_fire_at=next_fire_at)


@workflow("fail")
def fail(fire: Fire) -> Result:
    """Always raises."""
    raise RuntimeError("the fail workflow always fails")


@workflow("sleep")
def sleep(fire: Fire) -> Result:
    """Sleeps payload.seconds or state.seconds (default 2)."""
    payload = fire.payload if isinstance(fire.payload, dict) else {}
    seconds = _number(payload.get("seconds"), _number((fire.state or {}).get("seconds"), 2.0))
    time.sleep(max(0.0, min(seconds, 600.0)))
    return Result(state=fire.state, output={"slept_s": seconds})
