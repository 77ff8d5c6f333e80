"""Request headers: names lower-cased, and what a workflow may see of them."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["SENSITIVE_HEADERS", "lower", "clip_headers"]

_HEADER_VALUE_MAX = 1024

# Headers that carry a credential or a signature: never shown to a workflow or logged.
SENSITIVE_HEADERS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "x-amz-security-token",
        "x-signature-256",
        "x-hub-signature",
        "x-hub-signature-256",
        "stripe-signature",
        "x-slack-signature",
        "webhook-signature",
        "x-shopify-hmac-sha256",
        "x-li-signature",
    }
)
# Defence in depth for headers we do not know by name (other providers, proxies).
_SENSITIVE_MARKERS = ("signature", "secret", "token", "hmac", "auth", "cookie", "api-key", "apikey")


def lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Header names lower-cased (HTTP names are case-insensitive); non-strings dropped."""
    if not isinstance(headers, Mapping):
        return {}
    return {
        name.lower(): value
        for name, value in headers.items()
        if isinstance(name, str) and isinstance(value, str)
    }


def _is_sensitive(name: str) -> bool:
    return name in SENSITIVE_HEADERS or any(marker in name for marker in _SENSITIVE_MARKERS)


def clip_headers(headers: Mapping[str, str], *, max_total: int = 4096) -> dict[str, str]:
    """What a workflow sees of request headers: lower-case, no credentials, size-capped."""
    clipped: dict[str, str] = {}
    total = 0
    for name, value in lower(headers).items():
        if _is_sensitive(name):
            continue
        value = value[:_HEADER_VALUE_MAX]
        size = len(name) + len(value)
        # Skip what does not fit rather than stop: a later short header may still fit.
        if total + size > max_total:
            continue
        clipped[name] = value
        total += size
    return clipped
