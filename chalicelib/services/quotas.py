"""Per-tenant quotas: triggers, API keys, and runs in flight; 429 ``quota`` when one is reached.

A tenant's usage is one item in the ledger table (``tenant#<tenant>`` / ``usage``) holding
three counters, changed with one conditional ``ADD`` by the API calls that change them
(create, delete, a PATCH of ``concurrency``, key create and delete). Nothing on the fire
path reads or writes it.

- ``triggers``: how many triggers the tenant has (``CRONHOOK_QUOTA_TRIGGERS``).
- ``keys``: how many API keys (``CRONHOOK_QUOTA_KEYS``; the root key is not one).
- ``runs``: the sum of its triggers' ``concurrency`` (``CRONHOOK_QUOTA_RUNS_IN_FLIGHT``).
  Every claim of a run is bounded by its trigger's concurrency (one conditional write
  on ``size(in_flight)``), so this sum is the most runs the tenant can ever have in
  flight at once, whatever it fires, replays or backfills.

The item is made on first use from a count of what the tenant already has (a deployment
from before quotas, or a counter lost), so it never starts at zero for a tenant that
has triggers. Of two creates racing for the last place, the conditional write lets one in.
"""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import ClientError

from chalicelib.domain.errors import Throttled
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.observability import logger, record_metric
from chalicelib.settings import get_settings
from chalicelib.store import quotas as usage_store

__all__ = ["Usage", "take", "release", "usage_of", "trigger_capacity"]

_NAMES = {
    "triggers": ("triggers", "CRONHOOK_QUOTA_TRIGGERS"),
    "keys": ("API keys", "CRONHOOK_QUOTA_KEYS"),
    "runs": (
        "runs in flight (the sum of its triggers' concurrency)",
        "CRONHOOK_QUOTA_RUNS_IN_FLIGHT",
    ),
}


@dataclass(frozen=True)
class Usage:
    """What a tenant holds of each quota."""

    triggers: int = 0
    keys: int = 0
    runs: int = 0


def trigger_capacity(spec: dict) -> int:
    """The most runs a trigger can have in flight at once (its ``concurrency``)."""
    return TriggerSpec.from_dict(spec).concurrency


def _limits() -> dict[str, int]:
    settings = get_settings()
    return {
        "triggers": settings.quota_triggers,
        "keys": settings.quota_keys,
        "runs": settings.quota_runs_in_flight,
    }


def _seed(tenant: str) -> None:
    """Make the usage item if it is missing, from a count (a lost race is someone else's seed)."""
    if usage_store.read_usage(tenant) is not None:
        return
    usage_store.seed_usage(tenant, usage_store.count_usage(tenant))


def usage_of(tenant: str) -> Usage:
    """The tenant's usage as stored (strongly consistent)."""
    _seed(tenant)
    return Usage(**(usage_store.read_usage(tenant) or {}))


def take(tenant: str, **deltas: int) -> None:
    """Add ``deltas`` (``triggers=1, runs=2``...) to the tenant's usage, or 429 ``quota``.

    One conditional ``ADD``: every counter that grows must stay within its quota. A
    refusal changes nothing and names the quota that was reached.
    """
    deltas = {k: int(v) for k, v in deltas.items() if v}
    unknown = set(deltas) - set(_NAMES)
    if unknown:
        raise ValueError(f"unknown quota {sorted(unknown)}")
    if not deltas:
        return
    _seed(tenant)
    limits = _limits()
    if not usage_store.add_usage(tenant, deltas, limits=limits):
        _refuse(tenant, deltas, limits)


def _refuse(tenant: str, deltas: dict[str, int], limits: dict[str, int]) -> None:
    held = usage_of(tenant)
    for name, delta in deltas.items():
        have = getattr(held, name)
        if delta > 0 and have + delta > limits[name]:
            what, setting = _NAMES[name]
            record_metric("QuotaRefusals", quota=name)
            logger.info("quota reached", extra={"tenant": tenant, "quota": name})
            raise Throttled(
                f"tenant {tenant!r} has {have} of its {limits[name]} {what} and this needs "
                f"{delta} more ({setting}); free some up or raise the quota",
                code="quota",
            )
    # The counters moved between the refusal and the read: the caller may simply retry.
    raise Throttled("the tenant's usage changed at the same time; try again", code="quota")


def release(tenant: str, **deltas: int) -> None:
    """Give back what ``take`` took (a delete, a failed create); never refused."""
    negative = {k: -abs(int(v)) for k, v in deltas.items() if v}
    if not negative:
        return
    try:
        # No usage item: nothing to give back (the next take counts the tenant afresh).
        usage_store.give_back(tenant, negative)
    except ClientError as exc:
        logger.warning("quota usage not given back", extra={"tenant": tenant, "error": str(exc)})
