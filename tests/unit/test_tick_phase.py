"""The local heartbeat's phase: half a period past the boundary, so the tick's reads and
sends (and the snapshot after it) do not land on the second when crons on :00 start."""

from __future__ import annotations

import pytest

from devstack.ticks import tick_wait_s


@pytest.mark.parametrize(
    ("now_s", "period_s", "wait_s"),
    [
        (0.0, 60, 30.0),  # on the minute: the tick is at :30
        (10.0, 60, 20.0),
        (29.5, 60, 0.5),
        (30.0, 60, 60.0),  # a tick just ran at :30: the next is a period later
        (59.0, 60, 31.0),
        (120.0, 60, 30.0),
        (1_000.0, 2, 1.0),  # a 2 s heartbeat ticks on the odd second
        (1_001.5, 2, 1.5),
        (7.0, 20, 3.0),  # 20 s: on :10, :30, :50
    ],
)
def test_the_tick_is_half_a_period_past_the_boundary(
    now_s: float, period_s: int, wait_s: float
) -> None:
    assert tick_wait_s(now_s, period_s) == pytest.approx(wait_s)


@pytest.mark.parametrize("period_s", [1, 2, 5, 20, 60, 300])
def test_a_tick_never_waits_more_than_a_period_nor_lands_on_the_boundary(period_s: int) -> None:
    for step in range(0, 4 * period_s * 10):
        now = 1_700_000_000 + step / 10
        wait = tick_wait_s(now, period_s)
        assert 0 < wait <= period_s
        assert (now + wait) % period_s == pytest.approx(period_s / 2)


def test_a_period_under_one_second_ticks_every_second() -> None:
    assert 0 < tick_wait_s(1_700_000_000.25, 0) <= 1
