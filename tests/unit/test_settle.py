"""Settle rules as pure functions: parametrised tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.settle import (
    Limits,
    clip_text,
    disable_reason_after_run,
    lateness_ms,
    retry_delay_s,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)


@pytest.mark.parametrize(
    ("kind", "succeeded", "failures", "runs", "limits", "next_fire_at", "expected"),
    [
        ("cron", True, 0, 1, Limits(), LATER, None),
        ("cron", False, 4, 5, Limits(max_failures=5), LATER, None),
        ("cron", False, 5, 5, Limits(max_failures=5), LATER, "failures"),
        ("cron", False, 1, 1, Limits(max_failures=1), LATER, "failures"),
        ("interval", True, 0, 3, Limits(max_runs=3), LATER, "max_runs"),
        ("interval", True, 0, 2, Limits(max_runs=3), LATER, None),
        ("at", True, 0, 1, Limits(), None, "max_runs"),
        ("at", False, 1, 1, Limits(), None, "max_runs"),
        ("cron", True, 0, 1, Limits(expires_at=NOW), LATER, "expired"),
        ("cron", True, 0, 1, Limits(expires_at=NOW + timedelta(minutes=30)), LATER, "expired"),
        ("cron", True, 0, 1, Limits(expires_at=LATER + timedelta(minutes=1)), LATER, None),
        # The most useful reason wins: a poison workflow says "failures", not "max_runs".
        ("interval", False, 5, 5, Limits(max_runs=5, max_failures=5), LATER, "failures"),
        ("event", True, 0, 100, Limits(), None, None),
    ],
)
def test_disable_reason_after_run_follows_the_rules(
    kind, succeeded, failures, runs, limits, next_fire_at, expected
):
    assert (
        disable_reason_after_run(
            kind=kind,
            succeeded=succeeded,
            consecutive_failures=failures,
            run_count=runs,
            limits=limits,
            next_fire_at=next_fire_at,
            now=NOW,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("scheduled", "started", "expected"),
    [
        (NOW, NOW + timedelta(milliseconds=1500), 1500),
        (NOW, NOW - timedelta(seconds=1), 0),
        (None, NOW, None),
    ],
)
def test_lateness_is_never_negative(scheduled, started, expected):
    assert lateness_ms(scheduled, started) == expected


@pytest.mark.parametrize(
    ("attempt", "expected"), [(1, 2.0), (2, 8.0), (3, 32.0), (4, 128.0), (5, 300.0), (9, 300.0)]
)
def test_retry_backoff_grows_and_is_capped(attempt, expected):
    assert retry_delay_s(attempt) == expected


def test_clip_text_keeps_short_text_and_marks_cut_text():
    assert clip_text("hello", max_bytes=10) == "hello"
    clipped = clip_text("é" * 5000, max_bytes=4096)
    assert len(clipped.encode()) <= 4096
    assert clipped.endswith("...[clipped]")
