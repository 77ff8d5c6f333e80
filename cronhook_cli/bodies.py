"""The JSON bodies of ``triggers create`` and ``triggers update``, from their options.

A bad mix of options (two cadences, ``--tz`` without ``--cron``...) is a usage error raised
here, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cronhook_cli.context import usage

__all__ = ["build_create_body", "build_update_body", "delivered_source"]

LIMIT_NAMES = ("max_runs", "expires_at", "max_usd", "budget_period", "max_failures")
SETTING_NAMES = ("overlap", "concurrency", "serialize_key", "secret_scope", "history")
# Option name -> the schedule field it sets, in the order a PATCH schedule lists them.
_SCHEDULE_FIELDS = (("cron", "cron"), ("every", "interval_s"), ("at", "at"), ("tz", "timezone"))


def _given(values: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: values[name] for name in names if values.get(name) is not None}


def _limits_and_settings(given: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    limits = _given(given, LIMIT_NAMES)
    if limits:
        body["limits"] = limits
    body.update(_given(given, SETTING_NAMES))
    return body


def _dst(given: Mapping[str, Any]) -> dict[str, Any]:
    """The cron's DST policy as the contract names it (empty when neither was given)."""
    dst = {"skipped": given.get("dst_skipped"), "repeated": given.get("dst_repeated")}
    return {name: value for name, value in dst.items() if value is not None}


def delivered_source(given: Mapping[str, Any]) -> dict | None:
    """The ``event`` of --eventbridge, --s3, --email or --file (None if none was given)."""
    pattern, bucket, address = given.get("pattern"), given.get("bucket"), given.get("address")
    on_file = bool(given.get("on_file"))
    flags = (("--eventbridge", pattern), ("--s3", bucket), ("--email", address))
    chosen = [flag for flag, value in (*flags, ("--file", on_file or None)) if value is not None]
    if len(chosen) > 1:
        usage(f"give one event source, not {', '.join(chosen)}")
    if given.get("bus") is not None and pattern is None:
        usage("--bus only applies to --eventbridge")
    if (given.get("prefix") is not None or given.get("suffix") is not None) and bucket is None:
        usage("--prefix and --suffix only apply to --s3")
    if pattern is not None:
        return {
            "flag": "--eventbridge",
            "source": "eventbridge",
            "pattern": pattern,
            "bus": given.get("bus"),
        }
    if bucket is not None:
        event = {"flag": "--s3", "source": "s3", "bucket": bucket}
        return {**event, **{k: given[k] for k in ("prefix", "suffix") if given.get(k)}}
    if address is not None:
        return {"flag": "--email", "source": "email", "address": address}
    if on_file:
        return {"flag": "--file", "source": "file"}
    return None


def _check_create_mix(given: Mapping[str, Any], source: dict | None) -> None:
    cron, webhook = given.get("cron"), given.get("webhook")
    cadences = {"--cron": cron, "--every": given.get("every"), "--at": given.get("at")}
    cadences["--webhook"] = webhook
    if source is not None:
        cadences[source["flag"]] = source
    chosen = [name for name, value in cadences.items() if value is not None]
    if len(chosen) != 1:
        got = f" (got {', '.join(chosen)})" if chosen else ""
        usage(
            "give exactly one of --cron, --every, --at or --webhook"
            f" (or --eventbridge, --s3, --email, --file){got}"
        )
    if given.get("tz") is not None and cron is None:
        usage("--tz only applies to --cron")
    if _dst(given) and cron is None:
        usage("--dst-skipped and --dst-repeated only apply to --cron")
    if given.get("secret") is not None and webhook is None:
        usage("--secret only applies to --webhook")
    if given.get("event_filter") is not None and webhook is None and source is None:
        usage("--filter only applies to event triggers (--webhook, --eventbridge, ...)")


def _schedule_or_event(given: Mapping[str, Any], source: dict | None) -> dict[str, Any]:
    """A new trigger's ``schedule`` or ``event``, from the one cadence or source given."""
    if given.get("cron") is not None:
        schedule = {"cron": given["cron"], "timezone": given.get("tz") or "UTC"}
        return {"schedule": {**schedule, **({"dst": _dst(given)} if _dst(given) else {})}}
    if given.get("every") is not None:
        return {"schedule": {"interval_s": given["every"]}}
    if given.get("at") is not None:
        return {"schedule": {"at": given["at"]}}
    event: dict[str, Any]
    if source is not None:
        event = {name: value for name, value in source.items() if name != "flag"}
    else:
        event = {"source": str(given["webhook"]).lower(), **_given(given, ("secret",))}
    if given.get("event_filter") is not None:
        event["filter"] = given["event_filter"]
    return {"event": event}


def build_create_body(given: Mapping[str, Any]) -> dict[str, Any]:
    """Build the ``POST /v1/triggers`` body; raise ``click.UsageError`` on a bad mix."""
    source = delivered_source(given)
    _check_create_mix(given, source)
    body: dict[str, Any] = {"workflow": given["workflow"]}
    if given.get("title") is not None:
        body["title"] = given["title"]
    if given.get("tags"):
        body["tags"] = list(given["tags"])
    body.update(_schedule_or_event(given, source))
    body.update(_given(given, ("state", "payload")))
    body.update(_limits_and_settings(given))
    if given.get("disabled"):
        body["enabled"] = False
    return body


def build_update_body(given: Mapping[str, Any]) -> dict[str, Any]:
    """Build the ``PATCH /v1/triggers/{id}`` body from ``triggers update``'s options."""
    if len([n for n in ("cron", "every", "at") if given.get(n) is not None]) > 1:
        usage("give at most one of --cron, --every or --at")
    schedule = {
        field: given[name] for name, field in _SCHEDULE_FIELDS if given.get(name) is not None
    }
    if _dst(given):
        schedule["dst"] = _dst(given)
    body: dict[str, Any] = {"schedule": schedule} if schedule else {}
    body.update(_given(given, ("title", "state", "payload")))
    if given.get("tags"):
        body["tags"] = list(given["tags"])
    if given.get("no_tags"):
        if given.get("tags"):
            usage("give --tag or --no-tags, not both")
        body["tags"] = []
    body.update(_limits_and_settings(given))
    if not body:
        usage("nothing to change: give at least one option (see --help)")
    if given.get("if_version") is not None:
        body["version"] = given["if_version"]
    return body
