"""Lazily built, cached boto3 clients pointed at the configured endpoint (moto locally)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

from chalicelib.settings import get_settings

__all__ = ["client", "reset_clients"]

_lock = threading.Lock()
_clients: dict[tuple[str, str | None, str], Any] = {}


def client(service: str) -> Any:
    """A boto3 client for ``service`` (built once per endpoint; boto3 clients are thread-safe)."""
    settings = get_settings()
    key = (service, settings.endpoint_url, settings.region)
    found = _clients.get(key)
    if found is not None:
        return found
    with _lock:
        found = _clients.get(key)
        if found is None:
            found = boto3.session.Session().client(
                service,
                region_name=settings.region,
                endpoint_url=settings.endpoint_url,
                config=Config(
                    retries={"max_attempts": 3, "mode": "standard"},
                    connect_timeout=5,
                    read_timeout=30,
                ),
            )
            _clients[key] = found
    return found


def reset_clients() -> None:
    """Forget cached clients (after the endpoint changes)."""
    with _lock:
        _clients.clear()
