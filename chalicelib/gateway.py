"""What API Gateway answers by itself, in the contract's error shape.

Some requests never reach a route: an unknown path, a missing or bad API key (the
authorizer refuses it), throttling. API Gateway answers those with its own bodies
(``{"message": "Missing Authentication Token"}`` with a 403 for an unknown path) unless
the API defines a ``GatewayResponse`` per response type. ``GATEWAY_RESPONSES`` is the one
table of those answers: ``infra/template.py`` turns it into ``AWS::ApiGateway::GatewayResponse``
resources, and the local gateway (``devstack/gateway.py``) answers from it, so a
client sees the same status and body locally and in AWS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["GatewayAnswer", "GATEWAY_RESPONSES", "AUTH_REFUSED", "AuthorizerRefused"]

# The exact message an authorizer raises for API Gateway to answer 401 (``UNAUTHORIZED``)
# rather than 500 (``AUTHORIZER_FAILURE``).
AUTH_REFUSED = "Unauthorized"


class AuthorizerRefused(Exception):
    """Raised by the authorizer for a missing or bad key: API Gateway answers 401."""

    def __init__(self) -> None:
        super().__init__(AUTH_REFUSED)


@dataclass(frozen=True)
class GatewayAnswer:
    """One gateway response: its status (``None``: keep API Gateway's), code and message.

    ``message`` is a literal, or ``None`` for API Gateway's own message
    (``$context.error.messageString``, already a quoted JSON string).
    """

    status: int | None
    code: str
    message: str | None

    def template(self) -> str:
        """The response template: ``{"error": {"code", "message"}}`` by simple substitution."""
        message = json.dumps(self.message) if self.message else "$context.error.messageString"
        return '{"error": {"code": "' + self.code + '", "message": ' + message + "}}"

    def body(self, fallback_message: str = "") -> dict:
        """The body a client receives (``fallback_message`` stands in for API Gateway's own)."""
        return {"error": {"code": self.code, "message": self.message or fallback_message}}


_BAD_KEY = "missing or invalid API key: send Authorization: Bearer <key>"

GATEWAY_RESPONSES: dict[str, GatewayAnswer] = {
    # The authorizer refused the key, or the Authorization header is missing.
    "UNAUTHORIZED": GatewayAnswer(401, "unauthorized", _BAD_KEY),
    # The authorizer's policy did not allow the route (ours allows every route; the route
    # itself answers 403 for a role that is too low).
    "ACCESS_DENIED": GatewayAnswer(403, "forbidden", "this key may not call this route"),
    # API Gateway's answer for a path or method the API does not have: the contract's 404.
    "MISSING_AUTHENTICATION_TOKEN": GatewayAnswer(404, "not_found", "no such route"),
    "RESOURCE_NOT_FOUND": GatewayAnswer(404, "not_found", "no such route"),
    "AUTHORIZER_FAILURE": GatewayAnswer(
        503, "unavailable", "the API key could not be checked just now; retry"
    ),
    "AUTHORIZER_CONFIGURATION_ERROR": GatewayAnswer(
        500, "internal", "the API's authorizer is misconfigured"
    ),
    "THROTTLED": GatewayAnswer(429, "throttled", "too many requests: slow down and retry"),
    "QUOTA_EXCEEDED": GatewayAnswer(429, "throttled", "request quota exceeded"),
    "REQUEST_TOO_LARGE": GatewayAnswer(413, "too_large", "the request is too large"),
    "UNSUPPORTED_MEDIA_TYPE": GatewayAnswer(415, "unsupported_media_type", None),
    "BAD_REQUEST_BODY": GatewayAnswer(400, "bad_request", None),
    "BAD_REQUEST_PARAMETERS": GatewayAnswer(400, "bad_request", None),
    "INTEGRATION_TIMEOUT": GatewayAnswer(504, "timeout", "the request timed out; retry"),
    "INTEGRATION_FAILURE": GatewayAnswer(502, "internal", "the API's function failed"),
    # Everything else API Gateway answers by itself, with its own status and message.
    "DEFAULT_4XX": GatewayAnswer(None, "rejected", None),
    "DEFAULT_5XX": GatewayAnswer(None, "internal", None),
}
