"""IANA zone names: accepted in any case, given their IANA spelling; unknown ones refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import canonical_timezone
from chalicelib.domain.schedule.zones import wall_of, zone

# --- zone names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("UTC", "UTC"),
        ("utc", "UTC"),
        ("europe/berlin", "Europe/Berlin"),
        ("AMERICA/NEW_YORK", "America/New_York"),
        ("est", "EST"),
        ("australia/lord_howe", "Australia/Lord_Howe"),
    ],
)
def test_zone_names_are_accepted_in_any_case_and_given_their_iana_spelling(given, canonical):
    assert canonical_timezone(given) == canonical


@pytest.mark.parametrize("given", ["", "Mars/Olympus_Mons", "Europe/Berlin ", "Berlin"])
def test_unknown_or_empty_zone_names_are_refused_naming_schedule_timezone(given):
    with pytest.raises(ValidationError) as raised:
        canonical_timezone(given)
    assert raised.value.field == "schedule.timezone"


# --- wall times -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instant", "name", "wall"),
    [
        (datetime(2026, 7, 1, 12, tzinfo=UTC), "Europe/Berlin", datetime(2026, 7, 1, 14)),
        (datetime(2026, 1, 1, 12, tzinfo=UTC), "europe/berlin", datetime(2026, 1, 1, 13)),
        (datetime(2026, 1, 1, 12, tzinfo=UTC), "Asia/Kolkata", datetime(2026, 1, 1, 17, 30)),
        (datetime(2026, 1, 1, 3, tzinfo=UTC), "America/New_York", datetime(2025, 12, 31, 22)),
        # Outside years 1-9999 on that zone's clock: no wall time.
        (datetime(9999, 12, 31, 23, tzinfo=UTC), "Asia/Tokyo", None),
        (datetime(1, 1, 1, 0, tzinfo=UTC), "America/New_York", None),
    ],
)
def test_wall_of_an_instant_is_its_naive_time_on_the_zones_clock(instant, name, wall):
    assert wall_of(instant, zone(name)) == wall


def test_zone_is_looked_up_by_its_iana_spelling():
    assert zone("europe/berlin").key == "Europe/Berlin"
    with pytest.raises(ValidationError) as caught:
        zone("Mars/Olympus_Mons")
    assert caught.value.field == "schedule.timezone"
