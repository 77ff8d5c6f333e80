"""Concurrent deletes release quota once (issue 26, item 4), against the moto server.

The race, as the audit found it: eight callers read the same key (or trigger), then
each deletes it. A plain DeleteItem succeeds whether or not anything was there, so each
released the tenant's quota and wrote an audit entry: the key counter went from 3 to -9
and the tenant then held 62 keys against a quota of 50. Here every caller is held at a
barrier between its read and its delete, so the interleaving is the worst one on every
run: all eight have read, none has deleted.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.domain.errors import NotFound
from chalicelib.services import keys, quotas, triggers
from chalicelib.services.triggers import delete as trigger_delete
from chalicelib.store import keys as key_store
from chalicelib.store.audit import AuditModel

CALLERS = 8
TENANT = "local"


def _all_at_once(calls: list[Callable[[], Any]]) -> Counter:
    """Run ``calls`` on threads at once; a count of each one's outcome (``ok`` or the error)."""
    outcomes: Counter = Counter()
    lock = threading.Lock()

    def run(call: Callable[[], Any]) -> None:
        try:
            call()
            outcome = "ok"
        except NotFound:
            outcome = "not_found"
        except Exception as exc:  # noqa: BLE001 (an unexpected error is a finding)
            outcome = repr(exc)
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return outcomes


def _held_at_a_barrier(monkeypatch, module: Any, name: str, parties: int) -> None:
    """``module.name`` (a read) waits, once it has read, until ``parties`` callers have."""
    barrier = threading.Barrier(parties, timeout=60)
    real = getattr(module, name)

    def read_then_wait(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        barrier.wait()
        return found

    monkeypatch.setattr(module, name, read_then_wait)


def _audited(action: str) -> Counter:
    entries = AuditModel.query(TENANT, consistent_read=True)
    return Counter(
        json.loads(e.detail).get("key_id") or e.trigger_id for e in entries if e.action == action
    )


def test_eight_simultaneous_deletes_of_each_key_release_one_key_each(aws, clock, root, monkeypatch):
    created = [keys.create_key(root, {"role": "viewer"}, now=clock())["id"] for _ in range(5)]
    before = quotas.usage_of(TENANT)
    assert before.keys == 5
    _held_at_a_barrier(monkeypatch, key_store, "get_key", CALLERS)
    for key_id in created:
        outcomes = _all_at_once(
            [lambda k=key_id: keys.delete_key(root, k, now=clock()) for _ in range(CALLERS)]
        )
        assert outcomes == Counter({"ok": 1, "not_found": CALLERS - 1}), outcomes
    assert quotas.usage_of(TENANT).keys == 0
    assert _audited("delete_key") == Counter(dict.fromkeys(created, 1))


def test_eight_simultaneous_deletes_of_each_trigger_release_its_share_once(
    aws, clock, root, monkeypatch
):
    ids = [
        triggers.create_trigger(
            root,
            {"workflow": "echo", "schedule": {"interval_s": 3600}, "concurrency": 3},
            now=clock(),
        )["id"]
        for _ in range(3)
    ]
    assert quotas.usage_of(TENANT) == quotas.Usage(triggers=3, keys=0, runs=9)
    _held_at_a_barrier(monkeypatch, trigger_delete, "load_owned", CALLERS)
    for trigger_id in ids:
        outcomes = _all_at_once(
            [
                lambda t=trigger_id: triggers.delete_trigger(root, t, now=clock())
                for _ in range(CALLERS)
            ]
        )
        assert outcomes == Counter({"ok": 1, "not_found": CALLERS - 1}), outcomes
    assert quotas.usage_of(TENANT) == quotas.Usage(triggers=0, keys=0, runs=0)
    assert _audited("delete") == Counter(dict.fromkeys(ids, 1))


def test_a_delete_releases_the_concurrency_the_removed_item_held(aws, clock, root):
    """An edit between a caller's read and its delete: what is released is what was removed."""
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 3600}}, now=clock()
    )
    stale = trigger_delete.load_owned(root, created["id"])
    triggers.patch_trigger(root, created["id"], {"concurrency": 4}, now=clock())
    assert quotas.usage_of(TENANT).runs == 4
    trigger_delete.delete_item(root, stale, now=clock())
    assert quotas.usage_of(TENANT) == quotas.Usage(triggers=0, keys=0, runs=0)
    with pytest.raises(NotFound):
        trigger_delete.delete_item(root, stale, now=clock())
