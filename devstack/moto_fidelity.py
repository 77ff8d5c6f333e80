"""Make moto deliver events in the shape AWS does, where cronhook's sources read them.

Applied in the embedded AWS process (``embedded_aws``), next to ``moto_atomic``:

1. EventBridge input transformers: AWS replaces ``<aws.events.event.json>`` with the
   event as it would deliver it (``version, id, detail-type, source, account, time,
   region, resources, detail``, ``time`` as ISO-8601 ``Z``). moto inserts its internal
   record instead (``time`` as epoch seconds, plus ``ingestion-time``).
2. S3 → EventBridge ("Object Created"): AWS sends ``detail.object`` with ``etag``,
   ``version-id`` (versioned buckets only) and a ``sequencer`` that grows with every
   write of a key, and ``reason`` ``PutObject``/``CopyObject``/``CompleteMultipartUpload``.
   moto sends ``eTag``, one constant sequencer for every object, ``reason:
   ObjectCreated``, skips input transformers, and sends a multipart upload twice (its
   completion also writes the object with a Put event). Without a real sequencer, dedupe on
   bucket + key + sequencer would swallow every rewrite of a key.
3. SES ``DeleteReceiptRule``: moto has no such call (it answered an HTML 500), so a deleted
   ``email`` trigger's receipt rule stayed. It removes the rule from its rule set, as AWS
   does (an unknown rule set is ``RuleSetDoesNotExist``; an unknown rule, nothing).
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from devstack.moto_version import require_pinned_moto

__all__ = ["make_moto_faithful", "aws_event"]

_PLACEHOLDER = "<aws.events.event.json>"
_REASONS = {
    "Put": "PutObject",
    "Post": "PostObject",
    "Copy": "CopyObject",
    "CompleteMultipartUpload": "CompleteMultipartUpload",
}
_sequence = itertools.count(1)
_sequence_lock = threading.Lock()


def aws_event(event: dict) -> dict:
    """moto's internal event record as EventBridge delivers it."""
    when = event.get("time")
    if isinstance(when, int | float):
        when = datetime.fromtimestamp(float(when), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": event.get("version", "0"),
        "id": event.get("id"),
        "detail-type": event.get("detail-type"),
        "source": event.get("source"),
        "account": event.get("account"),
        "time": when,
        "region": event.get("region"),
        "resources": event.get("resources", []),
        "detail": event.get("detail", {}),
    }


def _sequencer() -> str:
    # S3: "a string representation of a hexadecimal value", larger for later events of
    # a key; nanoseconds and a counter make it unique and ordered in this process.
    with _sequence_lock:
        return f"{time.time_ns():016X}{next(_sequence):08X}"


def make_moto_faithful() -> None:
    """Patch moto's EventBridge templating, S3's EventBridge events and SES's missing
    ``DeleteReceiptRule`` (idempotent)."""
    require_pinned_moto("moto_fidelity")
    _patch_event_templates()
    _patch_s3_events()
    _patch_ses_delete_receipt_rule()


def _patch_ses_delete_receipt_rule() -> None:
    """SES's ``DeleteReceiptRule``, which moto lacks (item 3 above)."""
    from moto.core.responses import EmptyResult
    from moto.ses.exceptions import RuleSetDoesNotExist
    from moto.ses.models import SESBackend
    from moto.ses.responses import EmailResponse

    if getattr(SESBackend, "delete_receipt_rule", None) is not None:
        return

    def delete_receipt_rule(self: Any, rule_set_name: str, rule_name: str) -> None:
        rule_set = self.receipt_rule_set.get(rule_set_name)
        if rule_set is None:
            raise RuleSetDoesNotExist(f"Rule set does not exist: {rule_set_name}")
        rule_set.rules = [r for r in rule_set.rules if r.get("Name") != rule_name]

    def respond(self: Any) -> Any:
        self.backend.delete_receipt_rule(
            self._get_param("RuleSetName"), self._get_param("RuleName")
        )
        return EmptyResult()

    SESBackend.delete_receipt_rule = delete_receipt_rule  # type: ignore[attr-defined]
    EmailResponse.delete_receipt_rule = respond  # type: ignore[attr-defined]


def _patch_event_templates() -> None:
    """EventBridge's ``<aws.events.event>`` placeholder: the whole event, as AWS sends it."""
    from moto.events import utils as events_utils

    parser = events_utils.EventTemplateParser
    if getattr(parser.parse, "_cronhook", False):
        return
    original_parse = parser.parse

    def parse(input_template: Any, input_paths_map: Any, event: Any) -> Any:
        if isinstance(input_template, str) and _PLACEHOLDER in input_template:
            if not input_paths_map:
                text = input_template.replace(_PLACEHOLDER, json.dumps(aws_event(event)))
                return json.loads(text)
        return original_parse(input_template, input_paths_map, event)

    parse._cronhook = True  # type: ignore[attr-defined]
    parser.parse = staticmethod(parse)  # type: ignore[method-assign]


def _s3_event(account_id: str, bucket: Any, kind: list[str], key: Any) -> Any:
    """The EventBridge event S3 sends for ``key`` (the shape AWS documents)."""
    from moto.core.utils import unix_time
    from moto.events.utils import _BASE_EVENT_MESSAGE
    from moto.s3 import notifications

    obj: dict[str, Any] = {
        "key": key.name,
        "size": key.size,
        "etag": key.etag.replace('"', ""),
        "sequencer": _sequencer(),
    }
    if getattr(bucket, "is_versioned", False) and key.version_id not in (None, "null"):
        obj["version-id"] = key.version_id
    event = copy.deepcopy(_BASE_EVENT_MESSAGE)
    event.update(
        {
            "id": str(uuid.uuid4()),
            "detail-type": notifications._detail_type(":".join(kind)),
            "source": "aws.s3",
            "account": account_id,
            "time": unix_time(),
            "region": bucket.region_name,
            "resources": [bucket.arn],
            "ingestion-time": unix_time(),
            "detail": {
                "version": "0",
                "bucket": {"name": bucket.name},
                "object": obj,
                "request-id": uuid.uuid4().hex[:16].upper(),
                "requester": account_id,
                "source-ip-address": "127.0.0.1",
                "reason": _REASONS.get(kind[-1], kind[-1]) if len(kind) > 2 else kind[-1],
            },
        }
    )
    return event


def _patch_s3_events() -> None:
    """S3 → EventBridge: AWS's event shape, one event per write, the default bus only."""
    from moto.s3 import notifications

    if getattr(notifications._send_event_bridge_message, "_cronhook", False):
        return

    def send_event_bridge_message(account_id: str, bucket: Any, event_name: str, key: Any) -> None:
        from moto.events.models import events_backends

        kind = str(getattr(event_name, "value", event_name)).split(":")
        if kind[-1] == "Put" and getattr(key, "multipart", None) is not None:
            return  # moto's CompleteMultipartUpload also writes with a Put event; AWS: one
        event = _s3_event(account_id, bucket, kind, key)
        backend = events_backends[account_id][bucket.region_name]
        for event_bus in list(backend.event_buses.values()):
            if event_bus.name != "default":
                continue  # S3 sends to the account's default bus only
            for rule in list(event_bus.rules.values()):
                try:
                    rule.send_to_targets(event)
                except Exception:  # asynchronous in AWS: a bad target never fails the write
                    continue

    send_event_bridge_message._cronhook = True  # type: ignore[attr-defined]
    notifications._send_event_bridge_message = send_event_bridge_message
