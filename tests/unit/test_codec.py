"""The stored form of a schedule: compact, and decoded to the very same ``ScheduleSpec``."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from chalicelib.domain.codec import decode_schedule, encode_schedule
from chalicelib.domain.schedule import ScheduleSpec


@pytest.mark.parametrize(
    "spec",
    [
        ScheduleSpec(
            cron="0 8 * * 1", timezone="Europe/Berlin", dst_skipped="skip", dst_repeated="both"
        ),
        ScheduleSpec(
            interval_s=900, anchor_at=datetime(2026, 11, 30, 12, 0, 0, 123000, tzinfo=UTC)
        ),
        ScheduleSpec(at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
    ],
)
def test_the_compact_schedule_encoding_round_trips(spec):
    assert decode_schedule(encode_schedule(spec)) == spec
    assert len(encode_schedule(spec)) < 120


@pytest.mark.parametrize(
    ("spec", "stored"),
    [
        # The defaults (UTC, shift, once) are left out: the due index projects this text.
        (ScheduleSpec(cron="*/5 * * * *"), {"c": "*/5 * * * *"}),
        (
            ScheduleSpec(cron="30 2 * * *", timezone="Europe/Berlin", dst_skipped="skip"),
            {"c": "30 2 * * *", "tz": "Europe/Berlin", "ds": "skip"},
        ),
        (ScheduleSpec(cron="0 1 * * *", dst_repeated="both"), {"c": "0 1 * * *", "dr": "both"}),
        (
            ScheduleSpec(interval_s=60, anchor_at=datetime(2026, 1, 1, tzinfo=UTC)),
            {"i": 60, "an": 1767225600000},
        ),
        (ScheduleSpec(at=datetime(2026, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)), {"a": 1767225600001}),
    ],
)
def test_the_encoding_keeps_only_what_differs_from_the_defaults(spec, stored):
    text = encode_schedule(spec)
    assert json.loads(text) == stored
    assert " " not in text.replace(spec.cron or "", "")  # compact separators


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"c":"0 8 * * *"}', ScheduleSpec(cron="0 8 * * *")),
        (
            '{"i":30,"an":0}',
            ScheduleSpec(interval_s=30, anchor_at=datetime(1970, 1, 1, tzinfo=UTC)),
        ),
        # An instant comes back aware UTC, to the millisecond stored.
        ('{"a":1767225600123}', ScheduleSpec(at=datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC))),
    ],
)
def test_decoding_gives_back_the_defaults_and_aware_utc_instants(text, expected):
    decoded = decode_schedule(text)
    assert decoded == expected
    for instant in (decoded.at, decoded.anchor_at):
        assert instant is None or instant.utcoffset() is not None
