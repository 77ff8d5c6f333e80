"""Chalice's local gateway, answering what API Gateway answers by itself as AWS does here.

Chalice's ``LocalGateway`` runs the app's authorizer before a route, as API Gateway does,
but answers a refusal with API Gateway's *default* bodies, and lets an exception from the
authorizer escape. ``ContractGateway`` maps each of those to the ``GatewayResponse`` the
deployed API has (``chalicelib/gateway.py``), so the local stack and the in-process test
client give the same status and body as AWS:

- no ``Authorization`` header, or the authorizer raised ``AuthorizerRefused`` → 401;
- the authorizer failed (DynamoDB unreachable...) → 503, never a route run unauthenticated;
- an unknown path → 404 (API Gateway's ``MISSING_AUTHENTICATION_TOKEN``).
"""

from __future__ import annotations

import json
import threading
from typing import Any

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

__all__ = ["ContractGateway", "GatewayAnswered", "per_thread_requests", "contract_client"]


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


class ContractGateway(LocalGateway):
    """``LocalGateway`` whose own answers are the deployed API's gateway responses."""

    def __init__(self, app_object: Any, config: Any) -> None:
        super().__init__(per_thread_requests(app_object), config)
        self._authorizer = _Authorizer(app_object)

    def handle_request(
        self, method: str, path: str, headers: dict, body: bytes | None
    ) -> dict[str, Any]:
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
