"""Rotating a webhook secret: each previous secret keeps its own grace; 0 ends them all.

Deliveries go through the real ``/hooks`` route (Standard Webhooks, signed with the
reference recipe in ``tests/signing.py``); time is the test's clock.
"""

from __future__ import annotations

from datetime import timedelta

from chalicelib.domain.spec import ROTATION_GRACE_S
from chalicelib.services import events, triggers
from tests.signing import delivery_body, signed_headers


class Hook:
    """One Standard Webhooks trigger and a way to deliver to it with a given secret."""

    def __init__(self, http, clock, root):
        self.http, self.clock, self.root = http, clock, root
        self.created = triggers.create_trigger(
            root, {"workflow": "echo", "event": {"source": "standard"}}, now=clock()
        )
        self.first = self.created["webhook"]["secret"]
        self.n = 0

    def deliver(self, secret: str) -> int:
        self.n += 1
        body = delivery_body("standard", f"m{self.n}")
        ts = int(self.clock().timestamp())
        headers = signed_headers("standard", secret, body, ts=ts, delivery=f"m{self.n}")
        token = self.created["webhook"]["url"].rsplit("/", 1)[1]
        return self.http.post(f"/hooks/{token}", headers=headers, body=body).status_code

    def rotate(self, **body) -> dict:
        return events.rotate_secret(self.root, self.created["id"], body, now=self.clock())


def test_a_second_rotation_does_not_end_the_first_ones_grace(aws, clock, root, http):
    hook = Hook(http, clock, root)
    one = hook.rotate(grace_s=600)["secret"]  # the first secret verifies until +600 s
    clock.advance(300)
    answer = hook.rotate(grace_s=600)  # `one` verifies until +900 s, the first still until +600
    two = answer["secret"]
    assert len(answer["previous_secrets_valid_until"]) == 2
    assert {hook.deliver(s) for s in (hook.first, one, two)} == {202}
    clock.advance(299)  # +599 s: the first secret's own grace is not over
    assert hook.deliver(hook.first) == 202
    clock.advance(2)  # +601 s
    assert hook.deliver(hook.first) == 401
    assert hook.deliver(one) == 202
    clock.advance(300)  # +901 s
    assert hook.deliver(one) == 401
    assert hook.deliver(two) == 202


def test_a_rotation_with_no_grace_ends_every_older_secret_at_once(aws, clock, root, http):
    hook = Hook(http, clock, root)
    one = hook.rotate(grace_s=3600)["secret"]
    answer = hook.rotate(grace_s=0)  # "it leaked": only the new secret verifies
    assert answer["previous_valid_until"] is None
    assert answer["previous_secrets_valid_until"] == []
    assert hook.deliver(hook.first) == 401
    assert hook.deliver(one) == 401
    assert hook.deliver(answer["secret"]) == 202


def test_the_default_grace_is_short_and_said_in_the_answer(aws, clock, root, http):
    hook = Hook(http, clock, root)
    answer = hook.rotate()
    assert ROTATION_GRACE_S <= 3600  # minutes, not the day a leaked secret used to get
    until = clock() + timedelta(seconds=ROTATION_GRACE_S)
    assert answer["previous_valid_until"] == until.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    clock.advance(ROTATION_GRACE_S - 1)
    assert hook.deliver(hook.first) == 202
    clock.advance(2)
    assert hook.deliver(hook.first) == 401


def test_older_secrets_in_grace_are_capped(aws, clock, root, http):
    hook = Hook(http, clock, root)
    secrets = [hook.first]
    for _ in range(events.MAX_PREVIOUS_SECRETS + 1):
        clock.advance(1)
        secrets.append(hook.rotate(grace_s=3600)["secret"])
    # The newest previous secrets verify; the oldest one beyond the cap does not.
    assert hook.deliver(secrets[0]) == 401
    assert {hook.deliver(s) for s in secrets[1:]} == {202}
