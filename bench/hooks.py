"""Botocore event hooks on every AWS client cronhook uses: boto3's and pynamodb's own.

pynamodb builds its DynamoDB client from its own botocore session, so registering on
``chalicelib.store.aws.client(...)`` alone would miss every table call. While ``hooked``
is active, the handlers are registered on every client that exists already (the cached
boto3 clients and each model's pynamodb connection) and on every client botocore
creates meanwhile; on exit they are unregistered again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import botocore.session

__all__ = ["hooked", "Handlers"]

# What a registrar returns for a client: the (event name, handler) pairs to register.
Handlers = list[tuple[str, Callable[..., Any]]]
Registrar = Callable[[Any], Handlers]

_lock = threading.Lock()
_registrars: list[Registrar] = []
_registered: dict[int, list[tuple[Any, str, Callable[..., Any]]]] = {}
_original_create_client = botocore.session.Session.create_client


def _attach(register: Registrar, client: Any) -> None:
    for name, handler in register(client):
        client.meta.events.register(name, handler)
        _registered.setdefault(id(register), []).append((client, name, handler))


def _create_client(self: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
    client = _original_create_client(self, *args, **kwargs)
    with _lock:
        for register in list(_registrars):
            _attach(register, client)
    return client


def _existing_clients() -> list[Any]:
    from chalicelib.store import aws
    from chalicelib.store.tables import ALL_MODELS

    clients = list(aws._clients.values())
    for model in ALL_MODELS:
        table = model._connection
        found = getattr(getattr(table, "connection", None), "_client", None)
        if found is not None:
            clients.append(found)
    return list({id(c): c for c in clients}.values())


@contextlib.contextmanager
def hooked(register: Registrar) -> Iterator[None]:
    """Register ``register(client)``'s handlers on every client while the block runs."""
    with _lock:
        _registrars.append(register)
        botocore.session.Session.create_client = _create_client  # type: ignore[method-assign]
        for client in _existing_clients():
            _attach(register, client)
    try:
        yield
    finally:
        with _lock:
            _registrars.remove(register)
            for client, name, handler in _registered.pop(id(register), []):
                client.meta.events.unregister(name, handler)
            if not _registrars:
                botocore.session.Session.create_client = _original_create_client  # type: ignore[method-assign]
