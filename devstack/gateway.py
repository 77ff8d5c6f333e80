"""Chalice's local gateway, answering what API Gateway answers by itself as AWS does here.

Chalice's ``LocalGateway`` runs the app's authorizer before a route, as API Gateway does,
but answers a refusal with API Gateway's *default* bodies, and lets an exception from the
authorizer escape. ``ContractGateway`` maps each of those to the ``GatewayResponse`` the
deployed API has (``chalicelib/gateway.py``), so the local stack and the in-process test
client give the same status and body as AWS:

- no ``Authorization`` header, or the authorizer raised ``AuthorizerRefused`` → 401;
- the authorizer failed (DynamoDB unreachable...) → 503, never a route run unauthenticated;
- an unknown path → 404 (API Gateway's ``MISSING_AUTHENTICATION_TOKEN``);
- with ``CRONHOOK_HOOKS_PER_IP_PER_MIN`` set, a source address past that many requests to
  ``/hooks/...`` in the last minute → 429 with ``Retry-After``, before the route runs (so
  nothing is stored): what the optional WAF rule does in AWS (``infra/waf.py``).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from chalice.local import (
    ForbiddenError,
    InvalidAuthorizerError,
    LambdaContext,
    LocalGateway,
    LocalGatewayAuthorizer,
    LocalGatewayException,
    NotAuthorizedError,
)

from chalicelib.gateway import GATEWAY_RESPONSES, AuthorizerRefused, GatewayAnswer
from chalicelib.settings import get_settings

__all__ = [
    "ContractGateway",
    "GatewayAnswered",
    "PerSourceLimit",
    "per_thread_requests",
    "contract_client",
]


def per_thread_requests(app: Any) -> Any:
    """Give ``app`` one ``current_request`` (and ``lambda_context``) per thread.

    Chalice keeps the request being handled in an attribute of the app, which is right in
    Lambda (one request per process at a time) and wrong in a threaded server: a second
    request would replace the first one's while its route still reads it (its body, its
    headers). The local stack serves requests on threads, so the app's class is swapped
    for a subclass whose two attributes are thread-local. Idempotent.
    """
    if getattr(type(app), "_per_thread_requests", False):
        return app
    local = threading.local()

    def attribute(name: str) -> property:
        def get(self: Any) -> Any:
            return getattr(local, name, None)

        def set_(self: Any, value: Any) -> None:
            setattr(local, name, value)

        return property(get, set_)

    app.__class__ = type(
        type(app).__name__,
        (type(app),),
        {
            "_per_thread_requests": True,
            "current_request": attribute("current_request"),
            "lambda_context": attribute("lambda_context"),
        },
    )
    return app


class GatewayAnswered(LocalGatewayException):
    """API Gateway answered by itself (one of ``GATEWAY_RESPONSES``)."""

    def __init__(self, response_type: str, answer: GatewayAnswer, status: int, message: str = ""):
        self.response_type = response_type
        self.CODE = status
        super().__init__(
            {"Content-Type": "application/json", "x-amzn-ErrorType": response_type},
            json.dumps(answer.body(message)).encode(),
        )


def _answer(response_type: str, default_status: int, message: str = "") -> GatewayAnswered:
    answer = GATEWAY_RESPONSES[response_type]
    return GatewayAnswered(response_type, answer, answer.status or default_status, message)


class _Authorizer(LocalGatewayAuthorizer):
    def authorize(
        self, raw_path: str, lambda_event: Any, lambda_context: LambdaContext
    ) -> tuple[Any, LambdaContext]:
        try:
            return super().authorize(raw_path, lambda_event, lambda_context)
        except LocalGatewayException:
            raise
        except AuthorizerRefused:
            raise _answer("UNAUTHORIZED", 401) from None
        except Exception:  # wiring.authorize logged it
            raise _answer("AUTHORIZER_FAILURE", 500) from None


class PerSourceLimit:
    """At most ``limit`` requests per source address in any ``window_s`` (a sliding window).

    Like WAF's rate-based rule: a sender over the limit is refused until its oldest counted
    request leaves the window; refused requests are not counted. Memory is one timestamp
    per counted request, and an address with none left is forgotten.
    """

    def __init__(self, *, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def retry_after_s(self, source: str, *, limit: int) -> int | None:
        """Count a request from ``source``; None if it may pass, else seconds to wait."""
        now = self._clock()
        with self._lock:
            for address in [a for a, q in self._seen.items() if q[-1] <= now - self.window_s]:
                del self._seen[address]  # nothing of theirs in the window any more
            seen = self._seen.setdefault(source, deque())
            while seen and seen[0] <= now - self.window_s:
                seen.popleft()
            if len(seen) >= limit:
                return max(1, math.ceil(seen[0] + self.window_s - now))
            seen.append(now)
            return None


def _is_hooks_path(path: str) -> bool:
    return unquote(urlsplit(path).path).startswith("/hooks/")


class ContractGateway(LocalGateway):
    """``LocalGateway`` whose own answers are the deployed API's gateway responses."""

    def __init__(self, app_object: Any, config: Any) -> None:
        super().__init__(per_thread_requests(app_object), config)
        self._authorizer = _Authorizer(app_object)
        self.hooks_limit = PerSourceLimit()

    def _limit_hooks(self, path: str, source_ip: str) -> None:
        limit = get_settings().hooks_per_ip_per_min
        if limit <= 0 or not _is_hooks_path(path):
            return
        wait_s = self.hooks_limit.retry_after_s(source_ip, limit=limit)
        if wait_s is not None:
            answered = _answer("THROTTLED", 429)
            answered.headers["Retry-After"] = str(wait_s)
            raise answered

    def handle_request(
        self,
        method: str,
        path: str,
        headers: dict,
        body: bytes | None,
        *,
        source_ip: str = "127.0.0.1",
    ) -> dict[str, Any]:
        self._limit_hooks(path, source_ip)
        try:
            return super().handle_request(method=method, path=path, headers=headers, body=body)
        except GatewayAnswered:
            raise
        except NotAuthorizedError:
            raise _answer("UNAUTHORIZED", 401) from None
        except InvalidAuthorizerError:
            raise _answer("AUTHORIZER_CONFIGURATION_ERROR", 500) from None
        except ForbiddenError as exc:
            # Chalice raises it for an unknown path (API Gateway: "Missing Authentication
            # Token") and for a policy that does not allow the route (AccessDenied).
            if exc.headers.get("x-amzn-ErrorType") == "AccessDeniedException":
                raise _answer("ACCESS_DENIED", 403) from None
            raise _answer("MISSING_AUTHENTICATION_TOKEN", 403) from None


def contract_client(app: Any, **kwargs: Any) -> Any:
    """``chalice.test.Client`` whose HTTP calls go through ``ContractGateway``.

    The in-process API tests then see the authorizer and the gateway responses exactly as
    the local stack and AWS do.
    """
    from chalice.test import Client, TestHTTPClient

    class _Client(Client):
        @property
        def http(self) -> TestHTTPClient:
            if self._http_client is None:
                http = TestHTTPClient(self._app, self._chalice_config)
                http._local_gateway = ContractGateway(self._app, self._chalice_config)
                self._http_client = http
            return self._http_client

    return _Client(app, **kwargs)
