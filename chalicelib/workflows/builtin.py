"""Built-in workflows, for trying cronhook out: ``echo``, ``fail``, ``sleep``.

Registered only where ``CRONHOOK_BUILTIN_WORKFLOWS`` asks for them (on by default in the
local and test stages, off in deployed ones): in a deployed stage ``sleep`` would let any
operator hold a runner for ten minutes per fire, and ``echo`` is no one's job.
"""

from __future__ import annotations

import time
from datetime import timedelta

from chalicelib.workflows.model import Fire, Result, Workflow

__all__ = ["echo", "fail", "sleep", "BUILTINS"]


def _number(value: object, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


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


def fail(fire: Fire) -> Result:
    """Always raises."""
    raise RuntimeError("the fail workflow always fails")


def sleep(fire: Fire) -> Result:
    """Sleeps payload.seconds or state.seconds (default 2)."""
    payload = fire.payload if isinstance(fire.payload, dict) else {}
    seconds = _number(payload.get("seconds"), _number((fire.state or {}).get("seconds"), 2.0))
    time.sleep(max(0.0, min(seconds, 600.0)))
    return Result(state=fire.state, output={"slept_s": seconds})


def _entry(func: object, name: str) -> Workflow:
    doc = (getattr(func, "__doc__", None) or "").strip()
    return Workflow(name=name, func=func, description=doc.splitlines()[0] if doc else "")  # type: ignore[arg-type]


BUILTINS: dict[str, Workflow] = {
    "echo": _entry(echo, "echo"),
    "fail": _entry(fail, "fail"),
    "sleep": _entry(sleep, "sleep"),
}
