"""The heartbeat: once a minute, find due, enqueue, reap. It claims nothing (``shards``).

Built in one place, ``chalicelib.assembly``: ``tick`` receives the run pipeline (for the
reaper's ``after_lost``) and the sweeps it runs after the sends.
"""

from __future__ import annotations

from chalicelib.services.heartbeat.reaper import reap_expired, refresh_due
from chalicelib.services.heartbeat.report import TickReport
from chalicelib.services.heartbeat.shards import TICK_BUDGET_S, Sweep, tick
from chalicelib.services.heartbeat.slots import (
    MAX_SLOTS_PER_ROW,
    OVERDUE_S,
    enqueue_if_sent_window,
    fire_message,
)

__all__ = [
    "TickReport",
    "Sweep",
    "tick",
    "reap_expired",
    "refresh_due",
    "fire_message",
    "enqueue_if_sent_window",
    "MAX_SLOTS_PER_ROW",
    "OVERDUE_S",
    "TICK_BUDGET_S",
]
