"""Glue between Chalice and the services: lazy setup, auth, JSON bodies, error mapping."""

from __future__ import annotations

import functools
import importlib
import math
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from chalice import AuthResponse, Response

from chalicelib.domain import strict_json
from chalicelib.domain.errors import BadRequest, CronhookError, Unauthorized, UnsupportedMediaType
from chalicelib.gateway import AuthorizerRefused
from chalicelib.observability import ID_KEYS, logger, traced
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
    "handle_tick_batch",
    "handle_trigger_resource",
    "handle_alerts_batch",
    "error_response",
    "contract_error_shape",
    "lazy_module",
]

_ready_for: Settings | None = None
_ready_lock = threading.Lock()


def ready(*, plugins: bool = True) -> Settings:
    """Point the models at this environment's tables (once per settings).

    Nothing registers itself any more (the run path is built in ``chalicelib.assembly``);
    ``plugins`` is kept for the callers that still pass it (the authorizer: ``False``).
    """
    global _ready_for
    settings = get_settings()
    if _ready_for is settings:
        return settings
    with _ready_lock:
        if _ready_for is not settings:
            from chalicelib.store.tables import configure_models

            configure_models(settings)
            _ready_for = settings
    return settings


class _LazyModule:
    """A module imported on its first attribute access (``importlib.import_module``: the
    import lock makes it safe from threads). The routes name their services this way, so
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
    headers: dict[str, str | list[str]] = {"Content-Type": "application/json"}
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
        # Strict: a repeated key (400) or a number beyond a double (422) names its field.
        return strict_json.loads(raw)
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
    from chalicelib import assembly
    from chalicelib.services import switch

    now = now or now_utc()
    if not switch.triggers_enabled(now=now):
        logger.info("triggers are switched off; heartbeat does nothing")
        return None
    report = assembly.tick(now=now)
    _note_tick(now=now)
    return report


def _note_tick(*, now: datetime) -> None:
    """For ``GET /v1/health``: the start of the last tick that ended (never fails the tick)."""
    from chalicelib.services import health

    try:
        health.record_tick(now=now)
    except Exception:  # noqa: BLE001
        logger.warning("the heartbeat's tick time could not be recorded", exc_info=True)


@traced
def handle_sqs_batch(
    event: dict, context: Any = None, *, runner: Any = None, concurrency: int | None = None
) -> dict:
    """The runner's Lambda: a batch of fire messages, run concurrently (``fire_batch``)."""
    ready()
    from chalicelib import fire_batch

    return fire_batch.run_batch(event, context, runner=runner, concurrency=concurrency)


@traced
def handle_tick_batch(event: dict, context: Any = None) -> dict:
    """The enqueuer's Lambda: a fanned-out tick's shard per message (heartbeat/enqueuer.py).

    Never a batch item failure: a tick message retried later than a tick period would be
    dropped anyway, and the next tick reads the shard again.
    """
    ready()
    from chalicelib import assembly
    from chalicelib.services import switch

    if not switch.triggers_enabled(now=now_utc()):
        logger.info("triggers are switched off; the enqueuer does nothing")
        return {"batchItemFailures": []}

    def remaining_s() -> float:
        if context is None or not hasattr(context, "get_remaining_time_in_millis"):
            return 60.0
        return context.get_remaining_time_in_millis() / 1000

    bodies = [record.get("body") or "" for record in event.get("Records", [])]
    assembly.tick_messages(bodies, clock=now_utc, remaining_s=remaining_s)
    return {"batchItemFailures": []}


def handle_trigger_resource(event: dict) -> dict:
    """The TriggerProvider's Lambda: a ``Custom::CronhookTrigger`` request, answered to
    CloudFormation (``services/trigger_resource.py``)."""
    ready()
    from chalicelib.services import trigger_resource

    return trigger_resource.handle(event, now=now_utc())


def handle_ingest_batch(event: dict) -> dict:
    """The ingest queue's Lambda (chalicelib/sources/ingest.py): partial batch failures."""
    ready()
    from chalicelib.sources.ingest import handle_batch

    return handle_batch(event, now=now_utc())


def handle_alerts_batch(event: dict) -> dict:
    """The alerts queue's Lambda (chalicelib/services/alerts/worker.py): partial failures."""
    ready()
    from chalicelib.services.alerts.worker import handle_batch

    return handle_batch(event, now=now_utc())
