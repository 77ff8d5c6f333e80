"""The trigger record and its item: every field crosses the store boundary both ways."""

from __future__ import annotations

from dataclasses import fields

from chalicelib.domain.records import Trigger
from chalicelib.store.triggers import TriggerModel, trigger_item, trigger_record

FULL = Trigger(
    "trg_1",
    tenant="acme",
    workflow="echo",
    kind="cron",
    spec='{"workflow":"echo"}',
    created_ms=1,
    updated_ms=2,
    sched='{"c":"0 8 * * 1"}',
    status="disabled",
    disabled_reason="manual",
    due_shard="3",
    due_at=10,
    next_fire_at=11,
    in_flight={"trg_1.r1": {"l": 5, "s": 1, "k": "s", "t": 11}},
    consecutive_failures=2,
    failures_paused=3,
    run_count=7,
    last_run={"id": "trg_1.r0", "status": "ok", "finished_at": 9},
    created_by="key_a",
    version=4,
    webhook_token="tok",
    secret_sealed="s1",
    secret_prev_sealed="s0",
    secret_prev_until=99,
    secret_older="[]",
    outbound_secret_sealed="o1",
    disabled_note="note",
    disabled_by="key_b",
    disabled_ms=8,
    backfill_left=3,
    stateless_version=4,
    next_slot=12,
    key="nightly",
    managed_by="terraform",
    drift='{"at":1}',
)


def test_every_field_of_a_trigger_is_set_in_the_example() -> None:
    defaults = Trigger("trg_1")
    unset = [f.name for f in fields(Trigger) if getattr(FULL, f.name) == getattr(defaults, f.name)]
    assert unset == ["id"]


def test_a_record_survives_its_item_and_the_items_dynamodb_form() -> None:
    item = trigger_item(FULL)
    assert trigger_record(item) == FULL
    read = TriggerModel.from_raw_data(item.serialize())  # as a read of the table returns it
    assert trigger_record(read) == FULL


def test_a_read_has_plain_ints_and_dicts_and_no_empty_last_run() -> None:
    read = TriggerModel.from_raw_data(trigger_item(Trigger("trg_2", tenant="t")).serialize())
    record = trigger_record(read)
    assert record.in_flight == {} and record.last_run is None
    assert type(record.version) is int and type(record.in_flight) is dict
    nested = trigger_record(TriggerModel.from_raw_data(trigger_item(FULL).serialize()))
    assert type(nested.in_flight["trg_1.r1"]["l"]) in (int, float)
    assert type(nested.last_run) is dict
