"""The store answers in frozen records (issue 27): what is put is what is read back, and a
service cannot change a stored item by assigning to what the store handed it."""

from __future__ import annotations

import dataclasses

import pytest

from chalicelib.domain.records import ApiKey, AuditEntry, Delivery, Page
from chalicelib.store import audit, deliveries, keys
from chalicelib.store.key_lookup import find_key


def test_a_key_put_is_the_key_read_listed_found_and_removed(aws):
    put = keys.put_key(
        "key_a1", tenant="t1", role="operator", key_hash="h" * 64, created_ms=1_000, created_by=None
    )
    assert put == ApiKey("key_a1", "t1", "operator", "h" * 64, 1_000)
    keys.put_key(
        "key_a2", tenant="t1", role="viewer", key_hash="g" * 64, created_ms=2_000, created_by="x"
    )
    assert keys.get_key("key_a1", consistent=True) == put
    assert find_key("key_a1") == put
    first = keys.query_keys("t1", limit=1, last_evaluated_key=None)
    assert isinstance(first, Page) and [k.id for k in first] == ["key_a2"]  # newest first
    assert first.last_evaluated_key is not None
    rest = keys.query_keys("t1", limit=5, last_evaluated_key=first.last_evaluated_key)
    assert list(rest) == [put] and rest.last_evaluated_key is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        put.role = "admin"  # type: ignore[misc]
    assert keys.delete_key("key_a1") == put
    assert keys.delete_key("key_a1") is None  # removed once: the second caller gets nothing
    assert keys.get_key("key_a1") is None and find_key("key_a1") is None


def test_an_audit_entry_put_once_is_read_back_narrowed_and_not_overwritten(aws):
    entry = AuditEntry("t1", "0000000001000#aa", 1_000, "key_a1", "create", "trg_1", '{"a":1}', 99)
    other = AuditEntry("t1", "0000000002000#bb", 2_000, "system", "disable", "trg_2")
    assert audit.put_entry(entry) and audit.put_entry(other)
    assert not audit.put_entry(dataclasses.replace(entry, action="delete"))  # same sk: kept
    page = audit.query_entries(
        "t1", trigger_id=None, action=None, limit=10, last_evaluated_key=None
    )
    assert list(page) == [other, entry]
    narrowed = audit.query_entries(
        "t1", trigger_id="trg_1", action="create", limit=10, last_evaluated_key=None
    )
    assert list(narrowed) == [entry]


def test_a_recorded_delivery_is_read_back_by_outcome_and_before_a_key(aws):
    def delivery(at_ms: int, outcome: str) -> Delivery:
        return Delivery(
            trigger_id="trg_1",
            sk=f"{at_ms:013d}#dlv_{at_ms}",
            id=f"dlv_{at_ms}",
            received_ms=at_ms,
            outcome=outcome,
            status=401,
            size=12,
            headers='{"content-type":"application/json"}',
            expires=123,
        )

    rows = [
        delivery(1_000, "invalid_signature"),
        delivery(2_000, "stale"),
        delivery(3_000, "stale"),
    ]
    for row in rows:
        deliveries.put_delivery(row)
    assert deliveries.count_in_hour("trg_1", hour=0, expires=123) == 1  # never listed
    stale = deliveries.query_deliveries("trg_1", limit=1, last_evaluated_key=None, outcome="stale")
    assert list(stale) == [rows[2]] and stale.last_evaluated_key is not None
    more = deliveries.query_deliveries(
        "trg_1", limit=5, last_evaluated_key=stale.last_evaluated_key, outcome="stale"
    )
    assert list(more) == [rows[1]]
    assert deliveries.deliveries_before("trg_1", before=rows[2].sk, limit=5) == rows[1::-1]


def test_an_event_put_is_the_event_read_and_a_mark_stores_no_run(aws):
    from chalicelib.domain.records import EventRecord, PendingRow
    from chalicelib.store import event_reads, event_writes
    from chalicelib.store.events import EventModel

    full = EventRecord(
        id="evt_r1",
        trigger_id="trg_r",
        tenant="t1",
        received_ms=1_000,
        source="webhook",
        run_id="trg_r.run1",
        received_sk="0000000001000#evt_r1",
        event_type="push",
        dedupe_key="k1",
        body='{"a":1}',
        body_size=7,
        headers='{"x-a":"1"}',
        pending_trigger="trg_r",
        pending_shard="0",
        pending_sk="0000000001000#trg_r.run1",
        dedupe_until=61_000,
        expires=99,
    )
    assert event_writes.put_event(full, now_ms=1_000) is None
    assert event_reads.get_event("evt_r1") == full
    assert event_writes.put_event(full, now_ms=2_000) == full  # the dedupe hands it back
    assert event_reads.queue_of("trg_r", limit=5) == [PendingRow("evt_r1", full.pending_sk)]
    mark = EventRecord(
        id="evt_m1", trigger_id="trg_r", tenant="t1", received_ms=1_000, source="webhook",
        status="ignored", dedupe_until=61_000,
    )  # fmt: skip
    assert event_writes.put_event(mark, now_ms=1_000, mark=True) is None
    assert event_reads.get_event("evt_m1") == mark
    stored = EventModel.get("evt_m1").attribute_values
    assert "run_id" not in stored and "received_sk" not in stored  # nothing a mark lacks
    with pytest.raises(dataclasses.FrozenInstanceError):
        full.status = "running"  # type: ignore[misc]
