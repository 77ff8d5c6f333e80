"""The error family of cronhook: each error carries the HTTP status it maps to.

Handlers only raise; the API layer turns any ``CronhookError`` into the contract's
error body ``{"error": {"code", "message", "field"?}}`` with ``STATUS_CODE``.
"""

from __future__ import annotations

__all__ = [
    "CronhookError",
    "BadRequest",
    "Unauthorized",
    "InvalidSignature",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "Gone",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "ValidationError",
    "Throttled",
    "QuotaExceeded",
    "ServiceUnavailable",
]


class CronhookError(Exception):
    """Base of every error a client can be shown."""

    STATUS_CODE = 500
    CODE = "internal"

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.CODE = code

    def to_body(self) -> dict:
        """The contract's error body."""
        error: dict = {"code": self.CODE, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


class BadRequest(CronhookError):
    """The request could not be parsed (e.g. malformed JSON)."""

    STATUS_CODE = 400
    CODE = "bad_request"


class Unauthorized(CronhookError):
    """No key, or a key that is not known."""

    STATUS_CODE = 401
    CODE = "unauthorized"


class InvalidSignature(CronhookError):
    """Webhook token unknown or signature missing, wrong or stale: one answer for all."""

    STATUS_CODE = 401
    CODE = "invalid_signature"

    def __init__(self, message: str = "signature missing or invalid"):
        super().__init__(message)


class Forbidden(CronhookError):
    """The key's role is too low for this action."""

    STATUS_CODE = 403
    CODE = "forbidden"


class NotFound(CronhookError):
    """No such resource (also for another tenant's resources)."""

    STATUS_CODE = 404
    CODE = "not_found"


class MethodNotAllowed(CronhookError):
    """The route exists but not with this method."""

    STATUS_CODE = 405
    CODE = "method_not_allowed"


class Conflict(CronhookError):
    """A stale version or a state that does not allow the action."""

    STATUS_CODE = 409
    CODE = "conflict"


class Gone(CronhookError):
    """The trigger is disabled or expired."""

    STATUS_CODE = 410
    CODE = "gone"


class PayloadTooLarge(CronhookError):
    """The body or a field is over its size limit."""

    STATUS_CODE = 413
    CODE = "too_large"


class UnsupportedMediaType(CronhookError):
    """The content type is not accepted here."""

    STATUS_CODE = 415
    CODE = "unsupported_media_type"


class ValidationError(CronhookError):
    """A value is invalid; ``field`` names it (dotted path)."""

    STATUS_CODE = 422
    CODE = "invalid"


class Throttled(CronhookError):
    """Too many requests."""

    STATUS_CODE = 429
    CODE = "throttled"


class QuotaExceeded(Throttled):
    """A quota is reached; ``retry_after_s`` (the Retry-After header) where waiting helps."""

    CODE = "quota"

    def __init__(self, message: str, *, retry_after_s: int | None = None, **kwargs: str | None):
        super().__init__(message, **kwargs)
        self.retry_after_s = retry_after_s


class ServiceUnavailable(CronhookError):
    """Triggers are switched off, or a dependency is down."""

    STATUS_CODE = 503
    CODE = "unavailable"
