"""One route, written once: its path, method, role and declaration (``route``), on a
Chalice Blueprint per resource (``Resource``) that ``app.py`` registers.

``route`` is the only place a route's role is written. From it the route gets the app's
authorizer (a role) or none (public, or a signature), its handler gets the authenticated
principal with at least that role (401, then 403, before the handler runs), the OpenAPI
document gets ``x-role`` (``chalicelib/openapi``: it reads the declaration), and the role
table of ``tests/functional/test_api_routes.py`` reads it from the declaration too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chalice import Blueprint, Chalice
from chalice.app import ChaliceAuthorizer

from chalicelib import wiring
from chalicelib.declare import declare

__all__ = ["AUTHORIZER", "Resource", "DeclaredRoute", "route", "now_utc"]

# The name the app registers its authorizer under (``infra/``: the function and the
# integrations are named after it).
AUTHORIZER = "authorizer"
# A PATCH takes JSON Merge Patch too (the OpenAPI document says so from the method).
PATCH_TYPES = ("application/json", "application/merge-patch+json")


def now_utc() -> datetime:
    """The routes' clock, read once per request (a test sets its own clock here)."""
    return wiring.now_utc()


@dataclass(frozen=True)
class DeclaredRoute:
    """A route as ``route`` wrote it down, registered with the app by its ``Resource``."""

    path: str
    methods: tuple[str, ...]
    role: str | None
    view: Callable[..., Any]
    content_types: tuple[str, ...] = ()  # of the request; () is Chalice's (JSON)


def _authorizer_of(app: Chalice) -> ChaliceAuthorizer:
    found = app.handler_map.get(AUTHORIZER)
    if not isinstance(found, ChaliceAuthorizer):
        raise RuntimeError(
            f"register the app's authorizer (named {AUTHORIZER!r}) before its blueprints"
        )
    return found


class Resource(Blueprint):
    """A Chalice Blueprint whose routes are written with ``route``.

    They reach Chalice when the app registers the blueprint (``app.register_blueprint``),
    each with the app's authorizer when it has a role. A resource registers with one app.
    """

    def __init__(self, import_name: str) -> None:
        super().__init__(import_name)
        self.declared_routes: list[DeclaredRoute] = []

    def register(self, app: Chalice, options: dict[str, Any]) -> None:
        if self._current_app is not None:
            raise RuntimeError(f"{self._import_name} is already registered with an app")
        authorizer = _authorizer_of(app)
        for entry in self.declared_routes:
            kwargs: dict[str, Any] = {"methods": list(entry.methods)}
            if entry.role is not None:
                kwargs["authorizer"] = authorizer
            if entry.content_types:
                kwargs["content_types"] = list(entry.content_types)
            self.route(entry.path, **kwargs)(entry.view)
        super().register(app, options)

    # -- for the handlers ------------------------------------------------------------

    def json(self, *, required: bool = True) -> Any:
        """The request's JSON body (400 malformed, 415 not JSON; ``{}`` if optional and empty)."""
        return wiring.json_body(self.current_request, required=required)

    def params(self) -> dict:
        """The request's query parameters."""
        return dict(self.current_request.query_params or {})

    def now(self) -> datetime:
        """Now (``now_utc``)."""
        return now_utc()


def route(
    bp: Resource,
    path: str,
    method: str | tuple[str, ...],
    *,
    role: str | None,
    summary: str,
    answers: dict[int, str | None],
    static: bool = False,
    **declaration: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare and register a route of ``bp``.

    ``role`` None: no API key (a public route, or one a signature authenticates); else
    the handler is called with the principal, who has at least ``role``, then the path
    parameters. The rest is the route's declaration (``chalicelib.declare.declare``:
    ``body``, ``query``, ``errors``, ``description``...). Every handler runs under
    ``wiring.api`` (setup, errors to their status) but a ``static`` one (the console's
    files: no tables).
    """
    methods = (method,) if isinstance(method, str) else tuple(method)
    declared = declare(summary, role=role, answers=answers, **declaration)
    content_types: tuple[str, ...] = ()
    if declaration.get("raw_body"):
        content_types = ("*/*",)
    elif "PATCH" in methods and declaration.get("body"):
        content_types = PATCH_TYPES

    def decorate(handler: Callable[..., Any]) -> Callable[..., Any]:
        view = handler if role is None else _with_principal(bp, role, handler)
        view = declared(view if static else wiring.api(view))
        bp.declared_routes.append(DeclaredRoute(path, methods, role, view, content_types))
        return view

    return decorate


def _with_principal(bp: Resource, role: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(handler)
    def view(**path_params: Any) -> Any:
        return handler(wiring.caller(bp.current_request, role), **path_params)

    return view
