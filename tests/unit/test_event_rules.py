"""The event rules (``domain/event_rules``): attempts, retries, how an attempt ended, the sweep's keys."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain import event_rules as rules
from chalicelib.domain.event_rules import RunOutcome

NOW_MS = 1_790_000_000_000


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({}, 3),
        ({"max_attempts": None}, 3),
        ({"max_attempts": 0}, 3),
        ({"max_attempts": 1}, 1),
        ({"max_attempts": 5}, 5),
        ({"max_attempts": "4"}, 4),
    ],
)
def test_max_attempts_defaults_to_three(event, expected):
    assert rules.max_attempts_of(event) == expected


@pytest.mark.parametrize(
    ("event", "default", "expected"),
    [({}, "webhook", "webhook"), ({"source": "github"}, "webhook", "github"), ({}, "file", "file")],
)
def test_source_of_a_stored_event_spec(event, default, expected):
    assert rules.source_of(event, default=default) == expected


@pytest.mark.parametrize(
    ("attempt", "max_attempts", "retries"),
    [(1, 3, True), (2, 3, True), (3, 3, False), (4, 3, False), (1, 1, False)],
)
def test_a_failed_attempt_is_retried_while_attempts_are_left(attempt, max_attempts, retries):
    assert rules.will_retry(attempt, max_attempts) is retries


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("succeeded", "succeeded"),
        ("failed", "failed"),
        ("skipped", "skipped"),
        ("refused", "refused"),
        ("budget_exceeded", "budget_exceeded"),
        ("lost", "failed"),
        ("running", "failed"),
        (None, "failed"),
    ],
)
def test_an_attempt_ends_with_a_terminal_status_or_failed(status, expected):
    assert rules.attempt_status(status) == expected


@pytest.mark.parametrize(
    ("status", "attempt", "defer_s", "expected"),
    [
        ("failed", 1, None, NOW_MS + 2_000),  # backoff 2 s, 8 s, 32 s ...
        ("failed", 2, None, NOW_MS + 8_000),
        ("failed", 3, None, NOW_MS + 32_000),
        ("failed", None, None, NOW_MS + 2_000),  # a lost run's attempt: the first backoff
        ("failed", 9, None, NOW_MS + 300_000),  # capped at 5 minutes
        ("succeeded", 1, None, None),  # terminal
        ("refused", 1, None, None),
        ("succeeded", 1, 7, NOW_MS + 7_000),  # deferred: waits defer_s whatever the status
        ("failed", 1, 0, NOW_MS + 1_000),  # at least a second
    ],
)
def test_when_an_attempt_may_start_again(status, attempt, defer_s, expected):
    assert (
        rules.ready_ms_after(status=status, attempt=attempt, defer_s=defer_s, now_ms=NOW_MS)
        == expected
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (rules.pending_key(12, "run_trg_x_1"), (12, "run_trg_x_1")),
        ("0001790000000000#run#with#hashes", (1_790_000_000_000, "run#with#hashes")),
        ("0001790000000000", (1_790_000_000_000, None)),
        ("0001790000000000#", (1_790_000_000_000, None)),
        ("x#run", (None, "run")),
        (None, (None, None)),
        ("", (None, None)),
    ],
)
def test_the_pending_key_reads_back(key, expected):
    assert rules.parse_pending_key(key) == expected


def test_the_pending_key_sorts_by_ready_time():
    keys = [rules.pending_key(ms, "r") for ms in (10, 9, 1_000, 100)]
    assert sorted(keys) == [rules.pending_key(ms, "r") for ms in (9, 10, 100, 1_000)]


STARTED = NOW_MS - 60_000


@pytest.mark.parametrize(
    ("record", "last_run", "expected"),
    [
        # 1. the run record of this attempt
        (("succeeded", STARTED + 5), {}, RunOutcome("succeeded", found_in="record")),
        (("lost", STARTED), {}, RunOutcome("lost", found_in="record")),
        # an older attempt's record (retries keep the run id): not this one's
        (("failed", STARTED - 1), {}, RunOutcome("lost", rules.LOST_AFTER_SETTLE, NOW_MS, "lost")),
        # a record not ended yet
        (("queued", STARTED + 5), {}, RunOutcome("lost", rules.LOST_AFTER_SETTLE, NOW_MS, "lost")),
        # 2. the trigger's last_run names this run, not older than the attempt
        (
            (None, None),
            {"id": "r1", "status": "failed", "finished_at": STARTED + 9, "error": "boom"},
            RunOutcome("failed", "boom", STARTED + 9, "last_run"),
        ),
        (
            (None, None),
            {"id": "other", "status": "succeeded", "finished_at": STARTED + 9},
            RunOutcome("lost", rules.LOST_AFTER_SETTLE, NOW_MS, "lost"),
        ),
        (
            (None, None),
            {"id": "r1", "status": "succeeded", "finished_at": STARTED - 9},
            RunOutcome("lost", rules.LOST_AFTER_SETTLE, NOW_MS, "lost"),
        ),
        (
            (None, None),
            {"id": "r1", "status": "running", "finished_at": STARTED + 9},
            RunOutcome("lost", rules.LOST_AFTER_SETTLE, NOW_MS, "lost"),
        ),
        # the record wins over last_run
        (
            ("succeeded", STARTED + 1),
            {"id": "r1", "status": "failed", "finished_at": STARTED + 9},
            RunOutcome("succeeded", found_in="record"),
        ),
    ],
)
def test_how_an_attempt_ended_from_what_its_run_left(record, last_run, expected):
    status, finished = record
    assert (
        rules.run_outcome(
            run_id="r1",
            started_ms=STARTED,
            record_status=status,
            record_finished_ms=finished,
            last_run=last_run,
            now_ms=NOW_MS,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("lease_ms", "ready_ms", "timeout_s", "expected"),
    [(5_000, 1_000, 900, 5_000), (None, 1_000, 900, 1_000 + 960_000), (None, 0, 60, 120_000)],
)
def test_a_running_attempt_may_be_live_until_its_lease(lease_ms, ready_ms, timeout_s, expected):
    assert (
        rules.lease_end_ms(lease_ms=lease_ms, ready_ms=ready_ms, runner_timeout_s=timeout_s)
        == expected
    )


AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({}, False),
        ({"expires_at": "2026-12-01T12:00:00Z"}, True),  # at the instant: expired
        ({"expires_at": "2026-12-01T11:59:59.999Z"}, True),
        ({"expires_at": "2026-12-01T12:00:00.001Z"}, False),
        ({"expires_at": "2026-12-01T13:00:00+01:00"}, True),
        ({"expires_at": "not a date"}, False),
        ({"expires_at": 1_790_000_000}, False),
    ],
)
def test_an_expired_trigger(limits, expected):
    assert rules.expired(limits, now=AT) is expected
