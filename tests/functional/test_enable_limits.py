"""An enable (or a PATCH) never starts a trigger its own limits already stopped: it would
run once more and stop again (max_runs used up, expires_at passed)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chalicelib.domain.errors import Conflict, ValidationError
from chalicelib.services import triggers
from tests.scenarios import fire_next


def _runner(clock):
    from chalicelib import assembly

    return assembly.build_runner(clock=clock)


def test_a_trigger_that_used_its_max_runs_is_not_enabled_until_they_are_raised(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "echo", "schedule": {"interval_s": 60}, "limits": {"max_runs": 2}},
        now=clock(),
    )
    for _ in range(2):
        assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["enabled"], view["disabled_reason"]) == (False, "max_runs")
    with pytest.raises(Conflict, match="max_runs"):
        triggers.set_enabled(root, created["id"], enabled=True, now=clock())
    with pytest.raises(ValidationError) as refused:
        triggers.patch_trigger(root, created["id"], {"enabled": True}, now=clock())
    assert refused.value.field == "limits.max_runs"
    bulk = triggers.set_enabled_many(root, {"workflow": "echo"}, enabled=True, now=clock())
    assert bulk["changed"] == 0 and bulk["skipped"][0]["id"] == created["id"]
    assert fire_next(aws, clock, _runner(clock)) == []  # it stayed stopped
    # Raised, it runs again.
    triggers.patch_trigger(
        root, created["id"], {"limits": {"max_runs": 3}, "enabled": True}, now=clock()
    )
    assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]


def test_lowering_max_runs_of_an_active_trigger_below_its_runs_is_a_422(aws, clock, root):
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    for _ in range(3):
        assert fire_next(aws, clock, _runner(clock)) == ["succeeded"]
    with pytest.raises(ValidationError) as refused:
        triggers.patch_trigger(root, created["id"], {"limits": {"max_runs": 1}}, now=clock())
    assert refused.value.field == "limits.max_runs"
    with pytest.raises(ValidationError) as dry:  # a dry run answers what the PATCH would
        triggers.dry_run_patch(root, created["id"], {"limits": {"max_runs": 1}}, now=clock())
    assert dry.value.field == "limits.max_runs"
    assert triggers.get_trigger_view(root, created["id"])["limits"]["max_runs"] is None


def test_an_expired_trigger_is_not_enabled_until_its_expiry_moves(aws, clock, root):
    expires = clock() + timedelta(seconds=150)
    created = triggers.create_trigger(
        root,
        {
            "workflow": "echo",
            "schedule": {"interval_s": 60},
            "limits": {"expires_at": expires.isoformat()},
        },
        now=clock(),
    )
    for _ in range(3):
        fire_next(aws, clock, _runner(clock))
    view = triggers.get_trigger_view(root, created["id"])
    assert (view["enabled"], view["disabled_reason"]) == (False, "expired")
    clock.advance(60)
    with pytest.raises(Conflict, match="expires_at"):
        triggers.set_enabled(root, created["id"], enabled=True, now=clock())
    later = (clock() + timedelta(days=1)).isoformat()
    triggers.patch_trigger(
        root, created["id"], {"limits": {"expires_at": later}, "enabled": True}, now=clock()
    )
    assert triggers.get_trigger_view(root, created["id"])["enabled"] is True
