"""Count AWS calls and the DynamoDB capacity units they would bill, from botocore hooks.

Every call made while a ``CallLog`` is active is recorded with the code that made it
(the innermost ``chalicelib`` function on the stack, e.g. ``dynamo.claim_slot``), so a
per-fire bill can be broken down call by call.

Capacity is estimated the way on-demand DynamoDB bills it (item sizes from the requests
and responses, with a shadow copy of every item image seen so far):

- a write costs 1 WRU per started KB of the larger of the item before and after;
- a failed conditional write costs the same, with the item as it stands;
- each GSI costs 1 WRU per started KB of its entry for every entry written: an index
  key that changes is two writes (old entry out, new entry in), a projected attribute
  that changes is one, an item entering or leaving the index is one;
- a read costs 1 RRU per started 4 KB (strongly consistent) or half that (eventually
  consistent, and every GSI query); a query or scan adds up the items it read first.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.hooks import Handlers, hooked

__all__ = ["Call", "CallLog", "item_size", "summarize"]


@dataclass
class Call:
    """One AWS call as billed."""

    service: str
    operation: str
    caller: str
    table: str | None = None
    ok: bool = True
    error_code: str | None = None
    wru: float = 0.0
    gsi_wru: float = 0.0
    rru: float = 0.0
    items_read: int = 0
    thread: str = ""
    seconds: float = 0.0


def _value_size(value: dict) -> int:
    (kind, raw), *_ = value.items()
    if kind == "S":
        return len(raw.encode())
    if kind == "N":
        digits = raw.lstrip("-").replace(".", "").lstrip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(raw) if isinstance(raw, bytes | bytearray) else len(str(raw))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in raw.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in raw)
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: v}) for v in raw)
    return len(json.dumps(raw))


def item_size(item: dict | None) -> int:
    """The billed size of an item in DynamoDB's attribute-value format (names + values)."""
    if not item:
        return 0
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _kb(size: int) -> int:
    return max(1, math.ceil(size / 1024))


@dataclass
class _Index:
    keys: tuple[str, ...]
    projection: str  # ALL | KEYS_ONLY | INCLUDE
    include: tuple[str, ...] = ()


@dataclass
class _Table:
    keys: tuple[str, ...]
    indexes: dict[str, _Index] = field(default_factory=dict)


def _schemas() -> dict[str, _Table]:
    from chalicelib.store.tables import ALL_MODELS

    tables = {}
    for model in ALL_MODELS:
        schema = model._get_schema()
        keys = tuple(k["AttributeName"] for k in schema["key_schema"])
        table = _Table(keys=keys)
        for index in schema.get("global_secondary_indexes", []):
            projection = index["projection"]
            table.indexes[index["index_name"]] = _Index(
                keys=tuple(k["AttributeName"] for k in index["key_schema"]),
                projection=projection["ProjectionType"],
                include=tuple(projection.get("NonKeyAttributes", [])),
            )
        tables[model.Meta.table_name] = table
    return tables


def _caller() -> str:
    """The innermost cronhook function on the stack, as ``module.function``."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("chalicelib.") and not module.startswith("chalicelib.store.aws"):
            return f"{module.rsplit('.', 1)[-1]}.{frame.f_code.co_name}"
        if module.startswith("bench.") or module.startswith("tests."):
            return f"{module.rsplit('.', 1)[-1]}.{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


class CallLog:
    """Records every AWS call while active (``with CallLog() as log:``)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._images: dict[tuple[str, str], dict] = {}
        self._tables: dict[str, _Table] = {}
        self._context = None
        self.paused = False

    # -- hooks ------------------------------------------------------------------

    def _register(self, client: Any) -> Handlers:
        return [
            ("before-parameter-build", self._before),
            ("after-call", self._after),
            ("after-call-error", self._after_error),
        ]

    def _before(self, params: dict, model: Any, context: dict, **_: Any) -> None:
        context["bench_params"] = dict(params)
        context["bench_caller"] = _caller()
        context["bench_started"] = time.perf_counter()

    def _after(self, http_response: Any, parsed: dict, model: Any, context: dict, **_: Any) -> None:
        status = getattr(http_response, "status_code", 200)
        error = (parsed or {}).get("Error", {}).get("Code") if status >= 300 else None
        self._record(model, context, parsed or {}, error)

    def _after_error(self, exception: Exception, context: dict, **_: Any) -> None:
        self._record(None, context, {}, type(exception).__name__)

    def _record(self, model: Any, context: dict, parsed: dict, error: str | None) -> None:
        if "bench_params" not in context:
            return
        service = model.service_model.endpoint_prefix if model is not None else "?"
        operation = model.name if model is not None else "?"
        params = context["bench_params"]
        call = Call(
            service=service,
            operation=operation,
            caller=context.get("bench_caller", "?"),
            table=params.get("TableName"),
            ok=error is None,
            error_code=error,
            thread=threading.current_thread().name,
            seconds=time.perf_counter() - context.get("bench_started", time.perf_counter()),
        )
        if service == "dynamodb":
            with self._lock:
                self._bill(call, operation, params, parsed)
        elif operation == "ReceiveMessage":
            call.items_read = len(parsed.get("Messages", []))
        if not self.paused:
            with self._lock:
                self.calls.append(call)

    # -- capacity -------------------------------------------------------------------

    def _table(self, name: str | None) -> _Table | None:
        if name is None:
            return None
        if name not in self._tables:
            self._tables = _schemas()
        return self._tables.get(name)

    def _key(self, table: _Table, item: dict) -> str:
        return json.dumps([item.get(k) for k in table.keys], sort_keys=True)

    def _index_wru(self, table: _Table, before: dict | None, after: dict | None) -> float:
        total = 0.0
        for index in table.indexes.values():
            in_before = bool(before) and all(k in before for k in index.keys)
            in_after = bool(after) and all(k in after for k in index.keys)

            def entry(image: dict, index: _Index = index) -> dict:
                if index.projection == "ALL":
                    return image
                names = set(index.keys) | set(table.keys) | set(index.include)
                return {k: v for k, v in image.items() if k in names}

            if in_before and in_after:
                old, new = entry(before or {}), entry(after or {})
                if any(old.get(k) != new.get(k) for k in index.keys):
                    total += _kb(item_size(old)) + _kb(item_size(new))
                elif old != new:
                    total += _kb(item_size(new))
            elif in_before:
                total += _kb(item_size(entry(before or {})))
            elif in_after:
                total += _kb(item_size(entry(after or {})))
        return total

    def _write(self, call: Call, table: _Table, key_item: dict, after: dict | None) -> None:
        key = (call.table or "", self._key(table, key_item))
        before = self._images.get(key)
        if not call.ok:
            if call.error_code == "ConditionalCheckFailedException":
                call.wru += _kb(item_size(before))
            return
        call.wru += _kb(max(item_size(before), item_size(after)))
        call.gsi_wru += self._index_wru(table, before, after)
        if after is None:
            self._images.pop(key, None)
        else:
            self._images[key] = after

    def _bill(self, call: Call, operation: str, params: dict, parsed: dict) -> None:
        table = self._table(call.table)
        consistent = bool(params.get("ConsistentRead"))
        if operation == "PutItem" and table:
            self._write(call, table, params["Item"], params["Item"])
        elif operation == "UpdateItem" and table:
            key = (call.table or "", self._key(table, params["Key"]))
            after = parsed.get("Attributes") or self._images.get(key) or params["Key"]
            self._write(call, table, params["Key"], after)
        elif operation == "DeleteItem" and table:
            self._write(call, table, params["Key"], None)
        elif operation == "BatchWriteItem":
            for name, requests in params.get("RequestItems", {}).items():
                sub = self._table(name)
                if sub is None:
                    continue
                for request in requests:
                    part = Call(call.service, call.operation, call.caller, table=name)
                    if "PutRequest" in request:
                        item = request["PutRequest"]["Item"]
                        self._write(part, sub, item, item)
                    else:
                        self._write(part, sub, request["DeleteRequest"]["Key"], None)
                    call.wru += part.wru
                    call.gsi_wru += part.gsi_wru
        elif operation == "GetItem":
            item = parsed.get("Item")
            call.items_read = 1 if item else 0
            call.rru = (1.0 if consistent else 0.5) * math.ceil(max(1, item_size(item)) / 4096)
            if item and table:
                self._images[(call.table or "", self._key(table, item))] = item
        elif operation in ("Query", "Scan"):
            items = parsed.get("Items", [])
            call.items_read = int(parsed.get("ScannedCount", len(items)))
            size = sum(item_size(i) for i in items)
            consistent = consistent and not params.get("IndexName")
            call.rru = (1.0 if consistent else 0.5) * math.ceil(max(1, size) / 4096)
            if table and not params.get("IndexName") and not params.get("ProjectionExpression"):
                for item in items:
                    self._images[(call.table or "", self._key(table, item))] = item
        elif operation == "BatchGetItem":
            for name, items in parsed.get("Responses", {}).items():
                sub = self._table(name)
                for item in items:
                    call.items_read += 1
                    call.rru += 0.5 * math.ceil(max(1, item_size(item)) / 4096)
                    if sub is not None:
                        self._images[(name, self._key(sub, item))] = item

    # -- use ---------------------------------------------------------------------------

    def __enter__(self) -> CallLog:
        self._context = hooked(self._register)
        self._context.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._context is not None
        self._context.__exit__(*exc)

    def mark(self) -> int:
        """The position to count from (``since(mark)``)."""
        with self._lock:
            return len(self.calls)

    def since(self, mark: int = 0) -> list[Call]:
        with self._lock:
            return list(self.calls[mark:])

    def forget(self) -> None:
        """Drop the calls recorded so far (keeps the item images)."""
        with self._lock:
            self.calls.clear()

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        """Do not record calls made inside the block (item images are still kept current)."""
        self.paused = True
        try:
            yield
        finally:
            self.paused = False


def summarize(calls: list[Call]) -> dict[str, dict]:
    """Per ``service.operation caller``: count, WRU (table + GSI), RRU."""
    out: dict[str, dict] = defaultdict(lambda: Counter())
    for c in calls:
        row = out[f"{c.service}.{c.operation} ({c.caller})"]
        row["calls"] += 1
        row["failed"] += 0 if c.ok else 1
        row["wru"] += c.wru
        row["gsi_wru"] += c.gsi_wru
        row["rru"] += c.rru
        row["items_read"] += c.items_read
    return {k: dict(v) for k, v in sorted(out.items())}
