"""The pure alert rules (chalicelib/domain/alerts.py): transitions, matching, one message."""

from __future__ import annotations

import pytest

from chalicelib.domain.alerts import (
    Transition,
    budget_crossed,
    flush_at_ms,
    matches,
    message_subject,
    message_text,
    minute_of,
    notification_id,
    notifies,
    run_transitions,
)


@pytest.mark.parametrize(
    ("succeeded", "counts", "before", "disabled", "kinds"),
    [
        (True, True, 0, None, []),  # the common run: no transition, no call
        (None, True, 0, None, []),  # skipped, refused
        (False, True, 0, None, ["failed"]),
        (False, True, 4, None, ["failed"]),
        (False, False, 0, None, []),  # an event attempt that will be retried
        (True, True, 3, None, ["recovered"]),
        (False, True, 4, "failures", ["failed", "disabled"]),
        (None, True, 0, "budget", ["disabled"]),
    ],
)
def test_a_run_makes_a_transition_only_when_something_changed(
    succeeded, counts, before, disabled, kinds
):
    assert (
        run_transitions(
            succeeded=succeeded,
            failure_counts=counts,
            failures_before=before,
            disabled_reason=disabled,
        )
        == kinds
    )


def _t(kind: str, **fields) -> Transition:
    return Transition(kind=kind, tenant="local", trigger_id="trg_a", at_ms=1, **fields)


POLICY = {
    "id": "alr_1",
    "on": ["failed", "recovered", "budget", "disabled"],
    "failures_in_a_row": 3,
}


@pytest.mark.parametrize(
    ("transition", "notified"),
    [
        (_t("failed", consecutive_failures=1), False),
        (_t("failed", consecutive_failures=3), True),  # the third in a row: once a streak
        (_t("failed", consecutive_failures=4), False),
        (_t("recovered", failures_before=2), False),  # that streak never alerted
        (_t("recovered", failures_before=3), True),
        (_t("disabled", reason="failures"), True),
        (_t("late", policy_id="alr_1"), False),  # not in ``on``
        (_t("budget", percent_before=70, percent_after=80), True),  # 80 is the default
        (_t("budget", percent_before=80, percent_after=90), False),
    ],
)
def test_a_policy_notifies_once_a_streak_and_once_when_it_ends(transition, notified):
    assert notifies(POLICY, transition) is notified


def test_a_sweep_finding_notifies_only_the_policy_that_found_it():
    policy = {"id": "alr_1", "on": ["late"]}
    assert notifies(policy, _t("late", policy_id="alr_1"))
    assert not notifies(policy, _t("late", policy_id="alr_2"))


@pytest.mark.parametrize(
    ("match", "covered"),
    [
        ({}, True),
        ({"tags": ["client-7"]}, True),
        ({"tags": ["client-8"]}, False),
        ({"tags": ["client-8", "nightly"]}, True),
        ({"workflows": ["report"]}, True),
        ({"workflows": ["other"]}, False),
        ({"trigger_ids": ["trg_a"], "tags": ["nightly"]}, True),
        ({"trigger_ids": ["trg_b"], "tags": ["nightly"]}, False),
    ],
)
def test_match_lists_must_each_hold_one_value_and_an_empty_match_covers_the_tenant(match, covered):
    assert (
        matches(match, trigger_id="trg_a", workflow="report", tags=["client-7", "nightly"])
        is covered
    )


@pytest.mark.parametrize(
    ("before", "after", "crossed"),
    [(0, 0.5, False), (0.5, 1.0, True), (7.9, 8.1, True), (8.1, 8.9, False), (9.9, 12, True)],
)
def test_a_budget_transition_is_a_crossing_of_a_tenth(before, after, crossed):
    assert budget_crossed(before, after, 10.0) is crossed


def test_a_transition_round_trips_and_keeps_its_id():
    t = _t("failed", run_id="trg_a.0000000000001s", consecutive_failures=3, error="boom")
    back = Transition.from_dict(t.to_dict())
    assert back == t and back.id == "trg_a:failed:trg_a.0000000000001s"
    with pytest.raises(ValueError):
        Transition.from_dict({"kind": "exploded", "tenant": "t", "trigger_id": "x", "at_ms": 1})


def test_notification_ids_are_stable_per_transition_policy_and_channel():
    assert notification_id("t1", "alr_1", "email#0") == notification_id("t1", "alr_1", "email#0")
    assert notification_id("t1", "alr_1", "email#0") != notification_id("t1", "alr_1", "slack#1")


def test_a_minute_is_flushed_after_it_ends():
    at = 1_796_040_059_999
    assert flush_at_ms(minute_of(at)) == 1_796_040_065_000


def test_one_message_names_the_trigger_the_reason_and_the_run_and_a_digest_names_the_count():
    one = [{"kind": "disabled", "trigger_id": "trg_a", "title": "nightly", "run_id": "r1",
            "reason": "failures", "error": "boom"}]  # fmt: skip
    assert message_subject("ops", one) == "[cronhook] nightly was disabled (trg_a): failures"
    text = message_text("ops", one, console_url="https://c.example")
    assert "last error: boom" in text and "https://c.example/#/runs/r1" in text
    many = [{"kind": "failed", "trigger_id": f"trg_{n}", "error": "boom"} for n in range(12)]
    assert message_subject("ops", many) == "[cronhook] ops: 12 notifications (failed)"
    text = message_text("ops", many, console_url="https://c.example")
    assert text.count("- trg_") == 5 and "... and 7 more." in text


def test_a_digest_counts_distinct_triggers_and_its_notifications_apart():
    one_trigger = [
        {"kind": "failed", "trigger_id": "trg_a", "error": "boom"},
        {"kind": "disabled", "trigger_id": "trg_a", "reason": "failures"},
    ]
    text = message_text("ops", one_trigger, console_url="https://c.example")
    assert text.splitlines()[0] == (
        "1 trigger needs attention: 2 notifications (alert policy 'ops')."
    )
    many = [{"kind": "failed", "trigger_id": f"trg_{n % 3}"} for n in range(7)]
    text = message_text("ops", many, console_url="https://c.example")
    assert text.splitlines()[0] == (
        "3 triggers need attention: 7 notifications (alert policy 'ops')."
    )
