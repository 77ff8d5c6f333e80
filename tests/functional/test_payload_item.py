"""A large trigger payload lives in an item of its own, not in the trigger item.

The trigger item is rewritten by every claim, start fence and settle; DynamoDB bills a
write unit per KB written, so a 50 KB payload there would cost ~150 write units a fire.
"""

from __future__ import annotations

import json

from chalicelib import assembly
from chalicelib.services import triggers
from chalicelib.store import dynamo
from chalicelib.store.aws import client
from chalicelib.store.models import StateModel, TriggerModel
from chalicelib.workflows import REGISTRY, Result, Workflow

BIG = {"rows": [{"id": n, "text": "x" * 90} for n in range(500)]}  # ~50 KB


def _value_bytes(value: dict) -> int:
    """DynamoDB's size of one attribute value (the rules its write units are billed on)."""
    ((kind, data),) = value.items()
    if kind in ("S", "B"):
        return len(data.encode() if isinstance(data, str) else data)
    if kind == "N":
        digits = len(data.lstrip("-").replace(".", "").lstrip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_bytes(v) for k, v in data.items())
    if kind == "L":
        return 3 + sum(1 + _value_bytes(v) for v in data)
    return len(json.dumps(data).encode())  # sets: an over-estimate is fine here


def _item_bytes(trigger_id: str) -> int:
    """The size of the raw trigger item as DynamoDB counts it: names plus values."""
    raw = client("dynamodb").get_item(
        TableName=TriggerModel.Meta.table_name, Key={"id": {"S": trigger_id}}
    )["Item"]
    return sum(len(name.encode()) + _value_bytes(value) for name, value in raw.items())


def _payload_items() -> list[str]:
    return [i.trigger_id for i in StateModel.scan() if "#payload#" in i.trigger_id]


def test_a_large_payload_is_kept_out_of_the_trigger_item_and_reaches_the_workflow(
    aws, clock, root, monkeypatch
):
    seen = []

    def keep(fire):
        seen.append(fire.payload)
        return Result()

    monkeypatch.setitem(REGISTRY, "keep-payload", Workflow(name="keep-payload", func=keep))
    created = triggers.create_trigger(
        root,
        {"workflow": "keep-payload", "schedule": {"interval_s": 60}, "payload": BIG},
        now=clock(),
    )
    assert created["payload"] == BIG
    assert _item_bytes(created["id"]) < 1024  # every claim/start/settle: one write unit
    assert len(_payload_items()) == 1
    assert triggers.get_trigger_view(root, created["id"])["payload"] == BIG

    clock.advance(60)
    assert assembly.tick(now=clock()).due == 2  # this slot, and the next (within 60 s)
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert seen == [BIG]


def test_patching_the_payload_replaces_its_item_and_delete_removes_it(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}, "payload": BIG}, now=clock()
    )
    (first,) = _payload_items()
    other = {"rows": BIG["rows"][:-1]}
    patched = triggers.patch_trigger(root, created["id"], {"payload": other}, now=clock())
    assert patched["payload"] == other
    (second,) = _payload_items()
    assert second != first
    # A small payload goes back inline; the large one's item is gone.
    patched = triggers.patch_trigger(root, created["id"], {"payload": {"n": 1}}, now=clock())
    assert patched["payload"] == {"n": 1} and _payload_items() == []
    # An unrelated edit keeps an externalized payload as it is.
    triggers.patch_trigger(root, created["id"], {"payload": BIG}, now=clock())
    triggers.patch_trigger(root, created["id"], {"title": "renamed"}, now=clock())
    assert triggers.get_trigger_view(root, created["id"])["payload"] == BIG
    assert len(_payload_items()) == 1
    triggers.delete_trigger(root, created["id"], now=clock())
    assert _payload_items() == []


def test_a_small_payload_stays_inline(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 60}, "payload": {"n": 1}},
        now=clock(),
    )
    item = dynamo.get_trigger(created["id"])
    assert json.loads(item.spec)["payload"] == {"n": 1}
    assert _payload_items() == []


def test_a_long_title_ten_tags_and_a_payload_keep_the_trigger_item_under_1_kb(aws, clock, root):
    """The item every claim, start and settle rewrites costs one write unit while < 1 KB.

    A long title (the 200 characters a title may have), ten tags and a payload that stays
    inline must not push it over: measured as created and as the settle of a fire leaves
    it (``last_run`` included).
    """
    created = triggers.create_trigger(
        root,
        {
            "workflow": "echo",
            "schedule": {"interval_s": 60},
            "title": "Nightly export of the payments ledger to the warehouse, " * 3 + "x" * 32,
            "tags": [f"team-{n}-payments-prod"[:20] for n in range(10)],
            "payload": {"bucket": "exports-prod", "prefix": "ledger/daily/", "rows": 10_000},
        },
        now=clock(),
    )
    print(
        "MEASURE created", _item_bytes(created["id"]), len(dynamo.get_trigger(created["id"]).spec)
    )
    assert _item_bytes(created["id"]) < 1024
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    print("MEASURE settled", _item_bytes(created["id"]))
    assert _item_bytes(created["id"]) < 1024
