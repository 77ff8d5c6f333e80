"""moto's SQS, linear where it was quadratic in the queue's length (the embedded AWS's).

The lookahead keeps about a minute of delayed fire messages in the fire queue (thousands
at a few fires a second), and moto 5.2 rescans that whole queue for every message it
touches:

1. ``receive_message`` checks each message it hands out against the queue's retention
   with ``get_queue_attributes``, which builds every attribute of the queue, the three
   ``ApproximateNumberOfMessages*`` counts included: four scans of the queue per message
   (three times over: the lookup reads ``queue.attributes`` three times).
2. ``send_message`` reads ``queue.attributes`` for ``ContentBasedDeduplication``: the
   same four scans for every message sent.
3. Each scan reads the clock once or twice per message (``Message.visible`` and
   ``delayed`` each call ``unix_time_millis``, a few datetime operations).

Measured: with 3,000 delayed and 200 visible messages, a receive took about half a second
and the embedded AWS spent 18-48 % of its CPU here (docs/benchmarks.md, issue 12). The
patch keeps every answer the same: retention is read from the queue's
``message_retention_period`` (what ``get_queue_attributes`` returns for it), and a scan
reads the clock once and compares each message's ``visible_at``/``delayed_until`` to it,
with the comparisons ``Message.visible``/``delayed`` make; the counts of ``attributes``
come from one such scan.
"""

from __future__ import annotations

from typing import Any

from devstack.moto_version import require_pinned_moto

__all__ = ["make_sqs_fast", "patched_sqs_names"]


def _now_ms() -> float:
    # Looked up on each call, as moto's own code does, so a frozen clock is honoured.
    from moto.sqs import models

    return models.unix_time_millis()


def _visible_now(message: Any, now_ms: float) -> bool:
    return now_ms > message.visible_at  # Message.visible


def _delayed_now(message: Any, now_ms: float) -> bool:
    return now_ms < message.delayed_until  # Message.delayed


def _counts(queue: Any) -> tuple[int, int, int]:
    """(receivable, delayed, not visible) of ``queue`` now, in one scan."""
    now_ms = _now_ms()
    receivable = delayed = not_visible = 0
    for message in queue._messages:
        is_delayed = now_ms < message.delayed_until
        if now_ms > message.visible_at:
            receivable += not is_delayed
        else:
            not_visible += 1
        delayed += is_delayed
    return receivable, delayed, not_visible


def _messages(self: Any) -> list:
    """``Queue.messages``: the visible, not delayed messages, in queue order."""
    now_ms = _now_ms()
    return [m for m in self._messages if now_ms > m.visible_at and not now_ms < m.delayed_until]


def _approximate_delayed(self: Any) -> int:
    now_ms = _now_ms()
    return sum(1 for m in self._messages if _delayed_now(m, now_ms))


def _approximate_not_visible(self: Any) -> int:
    now_ms = _now_ms()
    return sum(1 for m in self._messages if not _visible_now(m, now_ms))


def _approximate(self: Any) -> int:
    return len(_messages(self))


_COUNTED = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
)


def _attributes(self: Any) -> dict[str, Any]:
    """``Queue.attributes``, the same dict, with the three counts from one scan."""
    counted = dict(zip(_COUNTED, _counts(self), strict=True))
    names = list(self.BASE_ATTRIBUTES)
    if self.fifo_queue:
        names += self.FIFO_ATTRIBUTES
    if self.kms_master_key_id:
        names += self.KMS_ATTRIBUTES
    result: dict[str, Any] = {}
    for name in names:
        result[name] = counted[name] if name in counted else getattr(self, _attr(name))
    if self.policy:
        result["Policy"] = self.policy
    if self.redrive_policy:
        import json

        result["RedrivePolicy"] = json.dumps(self.redrive_policy)
    for key, value in result.items():
        if isinstance(value, bool):
            result[key] = str(value).lower()
    return result


_attr_names: dict[str, str] = {}


def _attr(name: str) -> str:
    if name not in _attr_names:
        from moto.core.utils import camelcase_to_underscores

        _attr_names[name] = camelcase_to_underscores(name)
    return _attr_names[name]


def _retention_keeps(backend: Any, original: Any, queue_name: str, message: Any) -> bool:
    """``is_message_valid_based_on_retention_period``, reading the period directly."""
    from moto.sqs import models

    period = backend.get_queue(queue_name).message_retention_period
    if period is None:  # moto's lookup then raises; keep its answer
        return bool(original(backend, queue_name, message))
    return bool(period + message.sent_timestamp / 1000 > models.unix_time())


def _delete_message(self: Any, receipt_handle: str) -> None:
    """``Queue.delete_message`` in one scan (moto: ``any()`` over the queue, then a second
    scan, each building a list of receipt handles per message)."""
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    if receipt_handle in self.deleted_messages:
        return  # already deleted: moto answers success again
    kept, gone = [], []
    for message in self._messages:
        if (
            receipt_handle == message.receipt_handle
            or receipt_handle in message._old_receipt_handles
        ):
            gone.append(message)
        else:
            kept.append(message)
    if not gone:
        raise ReceiptHandleIsInvalid()
    for message in gone:
        self.pending_messages.discard(message)
        self.deleted_messages.update(message.all_receipt_handles)
    self._messages = kept


def patched_sqs_names() -> list[tuple[Any, str]]:
    """The (class, attribute) pairs ``make_sqs_fast`` replaces (tests restore them)."""
    from moto.sqs.models import Queue, SQSBackend

    names = ["messages", "attributes"]
    names += ["approximate_number_of_messages", "approximate_number_of_messages_delayed"]
    names += ["approximate_number_of_messages_not_visible"]
    pairs: list[tuple[Any, str]] = [(Queue, name) for name in [*names, "delete_message"]]
    return pairs + [(SQSBackend, "is_message_valid_based_on_retention_period")]


def make_sqs_fast() -> None:
    """Patch moto's SQS queue scans and retention check (idempotent)."""
    require_pinned_moto("moto_sqs_speed")
    from moto.sqs.models import Queue, SQSBackend

    if getattr(Queue.__dict__["messages"].fget, "_cronhook_fast", False):
        return
    scans: tuple[tuple[str, Any], ...] = (
        ("messages", _messages),
        ("attributes", _attributes),
        ("approximate_number_of_messages", _approximate),
        ("approximate_number_of_messages_delayed", _approximate_delayed),
        ("approximate_number_of_messages_not_visible", _approximate_not_visible),
    )
    for name, fget in scans:
        fget._cronhook_fast = True
        setattr(Queue, name, property(fget))
    _delete_message._cronhook_fast = True  # type: ignore[attr-defined]
    Queue.delete_message = _delete_message  # type: ignore[method-assign]
    original = SQSBackend.is_message_valid_based_on_retention_period

    def is_message_valid_based_on_retention_period(
        self: Any, queue_name: str, message: Any
    ) -> bool:
        return _retention_keeps(self, original, queue_name, message)

    SQSBackend.is_message_valid_based_on_retention_period = (  # type: ignore[method-assign]
        is_message_valid_based_on_retention_period
    )
