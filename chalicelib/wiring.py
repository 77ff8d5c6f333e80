"""Glue between Chalice and the services: lazy setup, auth, JSON bodies, error mapping."""

from __future__ import annotations

import functools
import importlib
import json
import math
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from chalice import AuthResponse, Response

from chalicelib.domain.errors import BadRequest, CronhookError, Unauthorized, UnsupportedMediaType
from chalicelib.gateway import AuthorizerRefused
from chalicelib.observability import ID_KEYS, logger, record_metric, traced
from chalicelib.services.auth import Principal, authenticate, require
from chalicelib.settings import Settings, get_settings

__all__ = [
    "ready",
    "api",
    "json_body",
    "authorize",
    "caller",
    "principal_of",
    "now_utc",
    "heartbeat_once",
    "handle_sqs_batch",
    "error_response",
    "contract_error_shape",
    "lazy_module",
]

_ready_for: Settings | None = None
_plugins_for: Settings | None = None
_ready_lock = threading.Lock()


def ready(*, plugins: bool = True) -> Settings:
    """Point the models at this environment's tables and load the services (once per settings).

    ``plugins=False`` (the authorizer) skips the services that register hooks and guards:
    they import pydantic, jsonschema and the rest of the app, which a key check never needs.
    """
    global _ready_for, _plugins_for
    settings = get_settings()
    if _ready_for is settings and (not plugins or _plugins_for is settings):
        return settings
    with _ready_lock:
        if _ready_for is not settings:
            from chalicelib.store.models import configure_models

            configure_models(settings)
            _ready_for = settings
        if plugins and _plugins_for is not settings:
            import chalicelib.services.plugins  # noqa: F401  (registers hooks and guards)

            _plugins_for = settings
    return settings


class _LazyModule:
    """A module imported on its first attribute access (``importlib.import_module``: the
    import lock makes it safe from threads). ``app.py`` names its services this way, so
    a function imports only what its own path uses (``infra/coldstart.py``)."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self.__dict__["_lazy_name"]), attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        setattr(importlib.import_module(self.__dict__["_lazy_name"]), attribute, value)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


def lazy_module(name: str) -> Any:
    """``name``, imported when first used rather than now."""
    return _LazyModule(name)


def now_utc() -> datetime:
    """The clock: read once per entry point."""
    return datetime.now(UTC)


def error_response(exc: CronhookError) -> Response:
    """The contract's error body with the error's status code (and Retry-After if it has one)."""
    headers = {"Content-Type": "application/json"}
    retry_after_s = getattr(exc, "retry_after_s", None)
    if retry_after_s is not None:
        headers["Retry-After"] = str(int(retry_after_s))
    return Response(body=exc.to_body(), status_code=exc.STATUS_CODE, headers=headers)


def api(func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a route: set up, map ``CronhookError`` to its status; never a 500 for client input."""

    traced_func = traced(func)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # Every log line of a request about a trigger/run/event carries its id.
        ids = {k: v for k, v in kwargs.items() if k in ID_KEYS and v}
        if ids:
            logger.thread_safe_append_keys(**ids)
        try:
            ready()
            return traced_func(*args, **kwargs)
        except CronhookError as exc:
            return error_response(exc)
        except Exception:
            logger.exception("unhandled error")
            return Response(
                body={
                    "error": {"code": "internal", "message": "internal error; it has been logged"}
                },
                status_code=500,
                headers={"Content-Type": "application/json"},
            )
        finally:
            if ids:
                logger.thread_safe_remove_keys(list(ids))

    return wrapper


_CHALICE_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    500: "internal",
}


def contract_error_shape(response: Response) -> Response:
    """Chalice's own error answers (``{"Code", "Message"}``: 405, 415...) in the contract's shape.

    Registered as HTTP middleware in ``app.py``, so it runs the same in Lambda and locally.
    """
    body = response.body
    if not (isinstance(body, dict) and set(body) == {"Code", "Message"}):
        return response
    code = _CHALICE_CODES.get(response.status_code, "error")
    headers = {**(response.headers or {}), "Content-Type": "application/json"}
    return Response(
        body={"error": {"code": code, "message": str(body.get("Message") or code)}},
        status_code=response.status_code,
        headers=headers,
    )


def _reject_constant(value: str) -> Any:
    raise ValueError(f"{value} is not valid JSON")


def json_body(request: Any, *, required: bool = True) -> Any:
    """The request's JSON body; 400 if malformed, 415 if not JSON."""
    raw = request.raw_body or b""
    if not raw.strip():
        if required:
            raise BadRequest("the body must be a JSON object")
        return {}
    content_type = (request.headers.get("content-type") or "application/json").lower()
    if "json" not in content_type:
        raise UnsupportedMediaType("send the body as application/json")
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"malformed JSON: {exc}") from None
    except RecursionError:  # nested deeper than json can parse: a 422 naming the field
        # Imported here: the spec module loads pydantic, which the authorizer never needs.
        from chalicelib.domain.limits import too_deep_error

        raise too_deep_error(raw) from None


def authorize(auth_request: Any) -> AuthResponse:
    """The API's custom authorizer: who the key is, handed to the route in the context.

    API Gateway calls it before any ``/v1`` route (``app.py``; Chalice's local gateway does
    the same locally). A missing or bad key raises ``AuthorizerRefused``, which API Gateway
    answers 401 with the contract's body (``chalicelib/gateway.py``). Any other failure
    (DynamoDB unreachable) is API Gateway's ``AUTHORIZER_FAILURE``: 503, and the route
    never runs. The policy allows every route: the role is checked by the route (403), and
    another tenant's resources are 404 there. No result caching (TTL 0): a revoked or
    demoted key stops working on its next request.
    """
    ready(plugins=False)
    try:
        principal = authenticate(auth_request.token)
    except Unauthorized as exc:
        logger.info("API key refused", extra={"reason": exc.message})
        raise AuthorizerRefused() from None
    except Exception:
        logger.exception("the authorizer failed")  # API Gateway answers 503
        raise
    return AuthResponse(
        routes=["*"],
        principal_id=principal.key_id,
        context={"key_id": principal.key_id, "tenant": principal.tenant, "role": principal.role},
    )


def principal_of(request: Any) -> Principal:
    """The principal the authorizer put in the request's context.

    Every ``/v1`` route has the authorizer (a test walks the route table). A request that
    reaches a route without the authorizer's context is refused (401): there is one way
    to authenticate, and the API function has no access to the root key.
    """
    found = (request.context or {}).get("authorizer") or {}
    if {"key_id", "tenant", "role"} <= set(found):
        return Principal(found["key_id"], found["tenant"], found["role"])
    logger.warning("a route ran without the authorizer's context; refused")
    raise Unauthorized("missing or invalid API key: send Authorization: Bearer <key>")


def caller(request: Any, role: str = "viewer") -> Principal:
    """The authenticated principal, with at least ``role`` (403 otherwise)."""
    principal = principal_of(request)
    require(principal, role)
    return principal


def is_finite(value: float) -> bool:
    """True for a finite float."""
    return math.isfinite(value)


@traced
def heartbeat_once(now: datetime | None = None) -> Any:
    """One heartbeat tick (the switch and the clock are read here)."""
    ready()
    from chalicelib.services import heartbeat, switch

    now = now or now_utc()
    if not switch.triggers_enabled(now=now):
        logger.info("triggers are switched off; heartbeat does nothing")
        return None
    report = heartbeat.tick(now=now)
    _note_tick(now=now)
    return report


def _note_tick(*, now: datetime) -> None:
    """For ``GET /v1/health``: the start of the last tick that ended (never fails the tick)."""
    from chalicelib.services import health

    try:
        health.record_tick(now=now)
    except Exception:  # noqa: BLE001
        logger.warning("the heartbeat's tick time could not be recorded", exc_info=True)


class NotStarted(Exception):
    """A fire message handed back to the queue un-started: a batch item failure, not a run."""


# A message handed back becomes visible again at once (ChangeMessageVisibility), for
# another invocation to run with its full time: waiting out the queue's own visibility
# timeout (settings.queue_visibility_s, counted from the receive) would eat into the
# claim's lease, and the claim could be reaped as lost.
HAND_BACK_VISIBILITY_S = 0


def handle_sqs_batch(event: dict, context: Any = None, *, runner: Any = None) -> dict:
    """Run a batch of fire messages with partial batch failures (powertools' batch utility).

    The messages run one after another. Before starting any but the first, the time left
    in the invocation (``context``; no context, no limit) must be at least
    ``runner.start_margin_ms()``; a message with less is handed back un-started (see
    ``_hand_back``) and the messages after it too, as the clock only runs down.
    """
    ready()
    from aws_lambda_powertools.utilities.batch import (
        BatchProcessor,
        EventType,
        process_partial_response,
    )

    from chalicelib.services.runner import Runner, start_margin_ms, time_left_ms
    from chalicelib.store.sqs import FireMessage

    runner = runner or Runner()
    margin_ms = start_margin_ms()
    attempted = 0  # messages this invocation went on to run (started, dropped or failed)

    @traced
    def record_handler(record: Any) -> str:
        nonlocal attempted
        message = FireMessage.parse(record.body)
        # Every log line of this run carries its ids (context keys: thread-safe).
        ids = {"trigger_id": message.trigger_id, "run_id": message.run_id}
        if message.event_id:
            ids["event_id"] = message.event_id
        logger.thread_safe_append_keys(**ids)
        try:
            left_ms = time_left_ms(context) if attempted else None
            if left_ms is not None and left_ms < margin_ms:
                return _hand_back(record, message, left_ms=left_ms, margin_ms=margin_ms)
            attempted += 1
            status = runner.handle(message)
            logger.info("fire handled", extra={"status": status, "surface": message.surface})
            return status
        finally:
            logger.thread_safe_remove_keys(list(ids))

    processor = BatchProcessor(event_type=EventType.SQS)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )


def handle_ingest_batch(event: dict) -> dict:
    """The ingest queue's Lambda (chalicelib/sources/ingest.py): partial batch failures."""
    ready()
    from chalicelib.sources.ingest import handle_batch

    return handle_batch(event, now=now_utc())


def _hand_back(record: Any, message: Any, *, left_ms: int, margin_ms: int) -> str:
    """Give a message back to the queue without starting it (too little time left).

    Nothing of the run is touched: no start fence, no claim, no run recorded or counted;
    the claim (taken by the heartbeat or the ingress) stays as it was, un-started, and
    the message's next delivery starts it as if it were the first. Usually the message is
    made visible again at once and reported as a batch item failure. One received
    ``RESEND_FROM_RECEIVE`` times already is sent again as a fresh message and this one
    acknowledged instead (a receive count that only grows would dead-letter it).
    """
    from chalicelib.services.runner import RESEND_FROM_RECEIVE
    from chalicelib.store.sqs import send_fires

    receives = _receive_count(record)
    how = "visibility"
    if receives >= RESEND_FROM_RECEIVE and not send_fires([message]):
        how = "resent"
    elif not _visible_again(record):
        how = "visibility_timeout"  # comes back when the queue's visibility timeout ends
    record_metric("RunsHandedBack", surface=message.surface)
    logger.warning(
        "too little time left in this invocation to start the fire: handed back to the "
        "queue, not started",
        extra={
            "surface": message.surface,
            "time_left_ms": left_ms,
            "margin_ms": margin_ms,
            "receive_count": receives,
            "how": how,
        },
    )
    if how == "resent":
        return "handed_back"
    raise NotStarted(f"handed back un-started: {left_ms} ms left, {margin_ms} ms needed")


def _receive_count(record: Any) -> int:
    try:
        return int(record.attributes.approximate_receive_count)
    except (AttributeError, KeyError, TypeError, ValueError):
        return 1


def _visible_again(record: Any) -> bool:
    """Make a received message visible again now; False if that could not be done."""
    from botocore.exceptions import BotoCoreError, ClientError

    from chalicelib.store.aws import client

    queue_url = get_settings().queue_url
    if not queue_url:
        return False
    try:
        client("sqs").change_message_visibility(
            QueueUrl=queue_url,
            ReceiptHandle=record.receipt_handle,
            VisibilityTimeout=HAND_BACK_VISIBILITY_S,
        )
    except (BotoCoreError, ClientError) as exc:
        logger.warning(
            "could not make a handed-back message visible again", extra={"error": str(exc)}
        )
        return False
    return True
