"""IANA zone names: accepted in any case, given their IANA spelling; unknown ones refused."""

from __future__ import annotations

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.schedule import canonical_timezone

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
