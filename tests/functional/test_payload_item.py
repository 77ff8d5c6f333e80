"""A large trigger payload lives in an item of its own, not in the trigger item.

The trigger item is rewritten by every claim, start fence and settle; DynamoDB bills a
write unit per KB written, so a 50 KB payload there would cost ~150 write units a fire.
"""

from __future__ import annotations

import json

from chalicelib import assembly
from chalicelib.domain.spec import TriggerIn, parse_model
from chalicelib.services import triggers
from chalicelib.store import triggers as triggers_store
from chalicelib.store.aws import client
from chalicelib.store.state import StateModel
from chalicelib.store.triggers import TriggerModel
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


def _about_items() -> list[str]:
    return [i.trigger_id for i in StateModel.scan() if "#about#" in i.trigger_id]


LONG = {
    "workflow": "echo",
    "schedule": {"interval_s": 60},
    "title": "Nightly export of the payments ledger to the warehouse, " * 3 + "x" * 32,
    "tags": [f"team-{n}-payments-prod"[:20] for n in range(10)],
    "payload": {"bucket": "exports-prod", "prefix": "ledger/daily/", "rows": 10_000},
}


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
    item = triggers_store.get_trigger(created["id"])
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
        "MEASURE created",
        _item_bytes(created["id"]),
        len(triggers_store.get_trigger(created["id"]).spec),
    )
    assert _item_bytes(created["id"]) < 1024
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded"]
    assert _item_bytes(created["id"]) < 1024


def _old_spec(body: dict) -> str:
    """The spec as stored before defaults and title/tags were left out of the item."""
    spec = parse_model(TriggerIn, body).model_dump(mode="json", exclude={"state"})
    return json.dumps(spec, separators=(",", ":"))


def _same_fields(view: dict) -> dict:
    """A view without what differs between two triggers made from one body."""
    different = {"id", "webhook_url", "created_at", "updated_at", "next_fire_at", "last_run"}
    return {k: v for k, v in view.items() if k not in different}


def test_a_trigger_stored_the_old_way_reads_lists_and_fires_as_a_new_one(
    aws, clock, root, monkeypatch
):
    """Items written with every default spelled out (and title and tags inline) read the same."""
    seen = []

    def keep(fire):
        seen.append(fire.payload)
        return Result()

    monkeypatch.setitem(REGISTRY, "keep-payload", Workflow(name="keep-payload", func=keep))
    body = {**LONG, "workflow": "keep-payload", "limits": {"max_failures": 2}}
    new = triggers.create_trigger(root, body, now=clock())
    old = triggers.create_trigger(root, body, now=clock())
    TriggerModel(old["id"]).update(actions=[TriggerModel.spec.set(_old_spec(body))])
    assert "about_ref" in triggers_store.get_trigger(new["id"]).spec
    assert "about_ref" not in triggers_store.get_trigger(old["id"]).spec
    assert '"max_failures":5' not in triggers_store.get_trigger(new["id"]).spec

    views = [triggers.get_trigger_view(root, t["id"]) for t in (new, old)]
    assert _same_fields(views[0]) == _same_fields(views[1]) == _same_fields(new)
    assert views[1]["limits"] == {
        "max_runs": None,
        "expires_at": None,
        "max_usd": None,
        "budget_period": "month",
        "max_failures": 2,
    }
    assert views[1]["schedule"] == {
        "cron": None,
        "timezone": "UTC",
        "interval_s": 60,
        "at": None,
        "dst": None,
        # The v1.2 schedule fields read as null on every trigger, old or new (as limits' do).
        "business_day": None,
        "time": None,
        "calendar": None,
        "jitter_s": None,
        "catchup": None,
        "skips": None,
        "extras": None,
    }
    listed = triggers.list_triggers(root, {"tag": "team-3-payments-prod"})["items"]
    assert sorted(v["id"] for v in listed) == sorted([new["id"], old["id"]])
    shown = {k: v for k, v in _same_fields(views[0]).items() if k != "state"}
    assert [_same_fields(v) for v in listed] == [shown] * 2

    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["succeeded", "succeeded"]
    assert seen == [LONG["payload"], LONG["payload"]]
    after = [triggers.get_trigger_view(root, t["id"]) for t in (new, old)]
    assert _same_fields(after[0]) == _same_fields(after[1])
    assert after[1]["run_count"] == 1

    # An edit stores the old trigger the new way; what it shows changes only where edited.
    patched = triggers.patch_trigger(root, old["id"], {"overlap": "allow"}, now=clock())
    assert _same_fields(patched) == {**_same_fields(after[1]), "overlap": "allow", "version": 2}
    assert "about_ref" in triggers_store.get_trigger(old["id"]).spec
    assert _item_bytes(old["id"]) < _item_bytes(new["id"]) + 32


def test_an_edit_keeps_the_title_and_tags_and_replaces_their_item(aws, clock, root):
    created = triggers.create_trigger(root, LONG, now=clock())
    (first,) = _about_items()
    patched = triggers.patch_trigger(root, created["id"], {"concurrency": 2}, now=clock())
    assert (patched["title"], patched["tags"]) == (LONG["title"], LONG["tags"])
    assert _about_items() == [first]  # unchanged: not written again
    patched = triggers.patch_trigger(root, created["id"], {"tags": ["one"]}, now=clock())
    assert (patched["title"], patched["tags"]) == (LONG["title"], ["one"])
    (second,) = _about_items()
    assert second != first
    patched = triggers.patch_trigger(
        root, created["id"], {"title": None, "tags": None}, now=clock()
    )
    assert (patched["title"], patched["tags"], patched["display_name"]) == (None, [], "echo")
    assert _about_items() == []
    assert triggers.list_triggers(root, {"tag": "one"})["items"] == []
    triggers.patch_trigger(root, created["id"], {"title": "back"}, now=clock())
    assert triggers.get_trigger_view(root, created["id"])["title"] == "back"
    triggers.delete_trigger(root, created["id"], now=clock())
    assert _about_items() == []
