"""What each route declares about itself: role, body, query, answers, errors.

Every route is written with ``route(...)`` (``chalicelib/routes/resource.py``), which
declares it with ``declare``; ``chalicelib/openapi/`` builds the
OpenAPI document from these declarations and nothing else, and the functional tests
check every answer against the model its route declared (``tests/functional/
api_client.py``), so the document cannot drift from what the routes do.

Models are named, not imported: this module is plain data, so declaring a route costs
the Lambda's cold start nothing (the pydantic models load when the document is built).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Query",
    "Declared",
    "declare",
    "declared_of",
    "LIST_QUERY",
    "READ_ERRORS",
    "WRITE_ERRORS",
]

READ_ERRORS = (401, 403, 404, 422, 429)
WRITE_ERRORS = (400, 401, 403, 404, 413, 415, 422, 429)


@dataclass(frozen=True)
class Query:
    """One query parameter."""

    name: str
    description: str
    type: str = "string"  # string | integer
    enum: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None

    def schema(self) -> dict:
        """Its JSON schema."""
        out: dict = {"type": self.type}
        if self.enum:
            out["enum"] = list(self.enum)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


@dataclass(frozen=True)
class Declared:
    """A route's declaration (see ``declare``)."""

    summary: str
    role: str | None
    answers: dict[int, str | None]
    body: str | None = None
    optional_body: bool = False
    raw_body: bool = False
    query: tuple[Query, ...] = ()
    errors: tuple[int, ...] = ()
    description: str = ""
    # Answers that are not JSON (the console's HTML, CSS and JS): their media types.
    content_types: tuple[str, ...] = ()


LIST_QUERY = (
    Query("limit", "Page size (default 50)", type="integer", minimum=1, maximum=200),
    Query("cursor", "`next_cursor` of the previous page"),
)


def declare(
    summary: str,
    *,
    role: str | None,
    answers: dict[int, str | None],
    body: str | None = None,
    optional_body: bool = False,
    raw_body: bool = False,
    query: tuple[Query, ...] = (),
    errors: tuple[int, ...] = (),
    description: str = "",
    content_types: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Attach a route's declaration to its view (``chalicelib.routes.resource.route`` does).

    ``role`` None: no API key (public, or a signature). ``answers`` maps each success
    status to the name of its model in ``chalicelib/openapi.py`` (None: no JSON body or
    any JSON); ``body`` names the request model in ``chalicelib/domain/spec.py``.
    """
    declared = Declared(
        summary=summary,
        role=role,
        answers=dict(answers),
        body=body,
        optional_body=optional_body,
        raw_body=raw_body,
        query=tuple(query),
        errors=tuple(errors),
        description=description,
        content_types=tuple(content_types),
    )

    def mark(view: Callable[..., Any]) -> Callable[..., Any]:
        view.declared = declared  # type: ignore[attr-defined]
        return view

    return mark


def declared_of(view: Any) -> Declared | None:
    """The declaration of a view function, if it has one."""
    return getattr(view, "declared", None)
