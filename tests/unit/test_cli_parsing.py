"""cronhook_cli/parsing.py: durations, instants, JSON and URLs as the command line takes them."""

from __future__ import annotations

import pytest

from cronhook_cli import parse_every, parse_instant
from tests.unit.cli_fake import invoke


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("1h", 3600),
        ("2d", 172800),
        ("1h30m", 5400),
        ("1d12h", 129600),
        (" 2H ", 7200),
    ],
)
def test_parse_every_turns_a_duration_into_seconds(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "h", "1x", "1.5h", "-5m", "0s", "0h0m", "1h 30m"])
def test_parse_every_rejects_anything_but_positive_unit_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_every(text)


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2030-01-01T08:00:00Z", "2030-01-01T08:00:00Z"),
        ("2030-01-01T08:00:00+00:00", "2030-01-01T08:00:00Z"),
        ("2030-03-31T03:30:00+02:00", "2030-03-31T01:30:00Z"),
        ("2030-10-27T02:30:00+01:00", "2030-10-27T01:30:00Z"),
        ("2030-01-01T08:00:00.250Z", "2030-01-01T08:00:00.250000Z"),
    ],
)
def test_parse_instant_normalises_to_utc_with_z(text: str, instant: str) -> None:
    assert parse_instant(text) == instant


@pytest.mark.parametrize("text", ["2030-01-01T08:00:00", "2030-01-01", "tomorrow", ""])
def test_parse_instant_rejects_naive_or_unparseable_times(text: str) -> None:
    with pytest.raises(ValueError):
        parse_instant(text)


def test_a_url_without_http_scheme_is_a_usage_error() -> None:
    result = invoke("localhost:8000", "triggers", "list")

    assert result.exit_code == 2
    assert "is not an http(s) URL" in result.stderr
