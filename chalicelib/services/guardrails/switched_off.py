"""The switch: nothing fires while ``triggers_enabled`` is off.

A queued cron, interval or manual run is recorded ``skipped`` (its slot is not made up
later: on resume a trigger fires once and skips the slots it missed); an event run, a
backfill slot and an ``at`` trigger's only fire wait for the switch.
"""

from __future__ import annotations

from chalicelib.observability import record_metric
from chalicelib.services import switch
from chalicelib.services.pipeline import Refusal, RunContext, RunPolicy

__all__ = ["SWITCH_WAIT_S", "SwitchPolicy", "switch_guard"]

# An event run waits this long between looks at the switch while it is off.
SWITCH_WAIT_S = 60


def switch_guard(ctx: RunContext) -> Refusal | None:
    """Nothing fires while triggers are switched off."""
    if switch.triggers_enabled(now=ctx.now):
        return None
    record_metric("SwitchedOffRuns", surface=ctx.message.surface)
    if ctx.message.surface in ("event", "backfill") or ctx.item.kind == "at":
        # An event accepted before the switch went off, a slot someone asked to backfill,
        # or an `at` trigger's only fire: skipping would lose it, so it waits for the switch.
        return Refusal(
            "skipped",
            "triggers are switched off; waiting",
            defer=True,
            delay_s=SWITCH_WAIT_S,
        )
    # A recurring slot is skipped, not made up later: on resume the heartbeat fires the
    # trigger once for the time it was off (and a made-up slot would be a second fire).
    return Refusal("skipped", "triggers are switched off (triggers_enabled)")


class SwitchPolicy(RunPolicy):
    """``check``: the switch (``switch_guard``)."""

    name = "switch"

    def check(self, ctx: RunContext) -> Refusal | None:
        return switch_guard(ctx)
