"""The local pool's fair share rule (``local/fairness.py``), as pure decisions."""

from __future__ import annotations

from collections import deque

import pytest

from devstack.fairness import FairBuffer, Held, fair_share, pick


def _waiting(**counts: int) -> dict[str, deque[Held]]:
    out: dict[str, deque[Held]] = {}
    at = 0.0
    for tenant, n in counts.items():
        out[tenant] = deque()
        for _ in range(n):
            at += 1.0
            out[tenant].append(Held(tenant, f"{tenant}{len(out[tenant])}", at))
    return out


@pytest.mark.parametrize(
    ("ceiling", "tenants", "share"),
    [(5, 1, 5), (5, 2, 3), (5, 3, 2), (5, 10, 1), (1, 2, 1), (2, 2, 1), (0, 0, 1)],
)
def test_the_fair_share_is_the_ceiling_divided_among_tenants_with_work(ceiling, tenants, share):
    assert fair_share(ceiling, tenants) == share


def test_a_tenant_alone_may_fill_the_pool():
    assert pick(_waiting(noisy=6), {"noisy": 4}, ceiling=5) == "noisy"


def test_the_tenant_with_fewer_runs_in_progress_goes_first_even_if_its_message_is_newer():
    # noisy's six messages came first; quiet's one arrived after them.
    assert pick(_waiting(noisy=6, quiet=1), {"noisy": 1}, ceiling=5) == "quiet"


def test_a_tenant_at_its_share_waits_while_another_tenant_has_work():
    # ceiling 4, two tenants with work: a share of 2 each. noisy has 2 running.
    waiting = _waiting(noisy=3, quiet=1)
    assert pick(waiting, {"noisy": 2, "quiet": 1}, ceiling=4) == "quiet"
    waiting["quiet"].clear()
    assert pick(waiting, {"noisy": 2, "quiet": 1}, ceiling=4) == "noisy"  # quiet waits no more


def test_nothing_is_picked_when_every_waiting_tenant_is_at_its_share():
    assert pick(_waiting(a=1, b=1), {"a": 1, "b": 1}, ceiling=2) is None


def test_ties_go_to_the_tenant_whose_oldest_message_waited_longest():
    assert pick(_waiting(first=1, second=1), {}, ceiling=5) == "first"


def test_a_quiet_tenants_fire_waits_for_one_noisy_run_not_for_the_noisy_backlog():
    buffer = FairBuffer(ceiling=2, clock=iter(range(1000)).__next__)
    for n in range(6):
        buffer.add("noisy", f"noisy-{n}")
    started = [buffer.take(), buffer.take()]
    assert [h.message for h in started] == ["noisy-0", "noisy-1"]
    assert buffer.take() is None  # both runners busy
    buffer.add("quiet", "quiet-0")
    buffer.done("noisy")  # the first noisy run ends
    order = [buffer.take().message]
    buffer.done("quiet")
    buffer.done("noisy")
    while (held := buffer.take()) is not None:
        order.append(held.message)
        buffer.done(held.tenant)
    assert order == ["quiet-0", "noisy-2", "noisy-3", "noisy-4", "noisy-5"]


def test_held_messages_are_due_for_a_visibility_extension_once_per_period():
    now = [0.0]
    buffer = FairBuffer(ceiling=1, clock=lambda: now[0])
    buffer.add("a", "m1")
    assert buffer.to_extend(every_s=180) == []
    now[0] = 180.0
    assert [h.message for h in buffer.to_extend(every_s=180)] == ["m1"]
    assert buffer.to_extend(every_s=180) == []
    now[0] = 360.0
    assert [h.message for h in buffer.to_extend(every_s=180)] == ["m1"]


def test_the_buffer_is_full_at_its_limit():
    buffer = FairBuffer(ceiling=1, max_waiting=2)
    buffer.add("a", 1)
    assert not buffer.full()
    buffer.add("b", 2)
    assert buffer.full()


def test_with_another_tenant_active_lately_a_tenant_alone_leaves_one_runner_free():
    assert pick(_waiting(noisy=6), {"noisy": 4}, ceiling=5, recent_tenants=2) is None
    assert pick(_waiting(noisy=6), {"noisy": 3}, ceiling=5, recent_tenants=2) == "noisy"
    # A pool of one cannot keep a runner free.
    assert pick(_waiting(noisy=2), {}, ceiling=1, recent_tenants=2) == "noisy"


def test_the_free_runner_kept_for_a_recent_tenant_starts_its_fire_at_once():
    now = [0.0]
    buffer = FairBuffer(ceiling=3, clock=lambda: now[0])
    buffer.add("quiet", "quiet-0")
    buffer.done(buffer.take().tenant)
    for n in range(5):
        buffer.add("noisy", f"noisy-{n}")
    assert [buffer.take().message for _ in range(2)] == ["noisy-0", "noisy-1"]
    assert buffer.take() is None  # the third runner stays free for quiet
    buffer.add("quiet", "quiet-1")
    assert buffer.take().message == "quiet-1"
    # Fifteen minutes later quiet no longer counts as active: noisy may fill the pool.
    now[0] = 901.0
    buffer.done("quiet")
    assert buffer.take().message == "noisy-2"
