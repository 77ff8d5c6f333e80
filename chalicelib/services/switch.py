"""The on/off switch ``triggers_enabled``: an SSM parameter read with a short cache (default on)."""

from __future__ import annotations

from datetime import datetime

__all__ = ["triggers_enabled", "set_override", "CACHE_S"]

CACHE_S = 30
_cache: dict[str, tuple[float, bool]] = {}
_override: dict[str, bool] = {}


def set_override(enabled: bool | None) -> None:
    """Force the switch (tests, local stack); None goes back to the parameter."""
    if enabled is None:
        _override.clear()
    else:
        _override["value"] = enabled


def triggers_enabled(*, now: datetime) -> bool:
    """Whether triggers may fire: off means no heartbeat work, 503 on ingress, nothing fires."""
    if "value" in _override:
        return _override["value"]
    from chalicelib.settings import get_settings

    name = get_settings().switch_param
    if not name:
        return True
    at = now.timestamp()
    cached = _cache.get(name)
    if cached is not None and at - cached[0] < CACHE_S:
        return cached[1]
    from botocore.exceptions import ClientError

    from chalicelib.store.aws import client

    try:
        value = client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
        enabled = value.strip().lower() not in ("off", "false", "0", "disabled")
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ParameterNotFound":
            raise
        enabled = True
    _cache[name] = (at, enabled)
    return enabled
