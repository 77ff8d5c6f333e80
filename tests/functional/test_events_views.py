"""Listing a trigger's events (services/events/views.py): newest first, a page at a time."""

from __future__ import annotations

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.services import events
from tests.scenarios import deliver, webhook_trigger

pytestmark = pytest.mark.usefixtures("fresh_secrets")


def test_events_are_listed_newest_first_a_page_at_a_time(aws, clock, root, ran):
    created = webhook_trigger(root, clock)
    answers = []
    for n in (1, 2, 3):
        answers.append(deliver(created, clock, n)[1])
        clock.advance(1)
    first = events.list_events(root, created["id"], {"limit": "2"})
    assert [e["id"] for e in first["items"]] == [answers[2]["event_id"], answers[1]["event_id"]]
    assert first["items"][0]["status"] == "pending"
    assert first["items"][0]["headers"]["idempotency-key"] == "job-3"
    assert "x-signature-256" not in first["items"][0]["headers"]
    rest = events.list_events(root, created["id"], {"limit": "2", "cursor": first["next_cursor"]})
    assert [e["id"] for e in rest["items"]] == [answers[0]["event_id"]]
    other = webhook_trigger(root, clock)
    with pytest.raises(ValidationError):  # a cursor of another trigger is refused
        events.list_events(root, other["id"], {"cursor": first["next_cursor"]})
