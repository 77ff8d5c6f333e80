"""The run pipeline as assembled: each hook meets the policies in the order the runner had
when they registered themselves (plugins.py's import order plus ``insert(0)``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib import assembly
from chalicelib.services import events
from chalicelib.services.pipeline import AfterSettleFailed, Pipeline, RunContext, RunPolicy
from chalicelib.store.sqs import FireMessage
from chalicelib.store.triggers import TriggerModel


def _overrides(policy: RunPolicy, hook: str) -> bool:
    return getattr(type(policy), hook) is not getattr(RunPolicy, hook)


def _order(hook: str, *, reverse: bool = False) -> list[str]:
    policies = assembly.build_pipeline().policies
    ordered = list(reversed(policies)) if reverse else list(policies)
    return [p.name for p in ordered if _overrides(p, hook)]


def test_checks_run_switch_creator_serialize_budget():
    assert _order("check") == ["switch", "creator", "serialize", "budget"]


def test_after_settle_releases_budget_then_key_then_books_then_deletes_then_backfills():
    assert _order("after_settle", reverse=True) == [
        "budget",
        "serialize",
        "audit",
        "events",
        "state_contract",
        "workflow_access",
        "ondemand",
    ]


def test_after_lost_and_the_fire_fields_and_redaction_have_their_policies():
    assert _order("after_lost", reverse=True) == ["budget", "events", "ondemand"]
    assert set(_order("fire_fields")) == {"ondemand", "workflow_access", "events"}
    assert _order("redact") == _order("redact_state") == ["workflow_access"]


def test_the_heartbeat_sweeps_pending_events_then_the_alert_policies():
    from chalicelib.services.alerts.detect import request_sweep

    assert assembly.build_sweeps() == [events.sweep, request_sweep]


class Note(RunPolicy):
    def __init__(self, name: str, seen: list, *, fields: dict | None = None, fails: bool = False):
        self.name, self.seen, self.fields, self.fails = name, seen, fields or {}, fails

    def check(self, ctx):
        self.seen.append(("check", self.name))

    def fire_fields(self, ctx):
        return self.fields

    def after_settle(self, ctx):
        self.seen.append(("after", self.name))
        if self.fails:
            raise RuntimeError(f"{self.name} failed")

    def after_lost(self, *, item, run_id, entry, now):
        self.seen.append(("lost", self.name))


NOW = datetime(2026, 1, 1, tzinfo=UTC)


def ctx_of_a_run() -> RunContext:
    return RunContext(
        item=TriggerModel("t1"),
        spec={},
        message=FireMessage(run_id="r1", trigger_id="t1", surface="schedule"),
        now=NOW,
    )


def test_before_hooks_run_in_list_order_and_after_hooks_in_reverse():
    seen: list = []
    pipeline = Pipeline((Note("a", seen), Note("b", seen)), sleep=lambda s: None)
    pipeline.check(ctx_of_a_run())
    pipeline.after_settle(ctx_of_a_run())
    pipeline.after_lost(item=TriggerModel("t1"), run_id="r1", entry={}, now=NOW)
    assert seen == [
        ("check", "a"),
        ("check", "b"),
        ("after", "b"),
        ("after", "a"),
        ("lost", "b"),
        ("lost", "a"),
    ]


def test_a_failing_after_settle_hook_is_retried_then_raised_after_the_others_ran():
    seen: list = []
    pipeline = Pipeline((Note("a", seen), Note("b", seen, fails=True)), sleep=lambda s: None)
    with pytest.raises(AfterSettleFailed, match="b failed"):
        pipeline.after_settle(ctx_of_a_run())
    assert seen == [("after", "b")] * 3 + [("after", "a")]


def test_two_policies_giving_the_same_fire_field_is_an_error():
    seen: list = []
    pipeline = Pipeline(
        (Note("a", seen, fields={"payload": 1}), Note("b", seen, fields={"payload": 2}))
    )
    with pytest.raises(ValueError, match="payload"):
        pipeline.fire_fields(ctx_of_a_run())
    apart = Pipeline((Note("a", seen, fields={"payload": 1}), Note("b", seen, fields={"x": 2})))
    assert apart.fire_fields(ctx_of_a_run()) == {"payload": 1, "x": 2}
