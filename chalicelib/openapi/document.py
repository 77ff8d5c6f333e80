"""The OpenAPI 3.1 document, built from what each route declares (``chalicelib/declare.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from chalicelib import declare
from chalicelib.openapi import (
    alert_models,  # noqa: F401  (registers the alert answers)
    time_models,  # noqa: F401  (registers previews, dry runs, simulations)
)
from chalicelib.openapi.models import API_VERSION, ErrorOut, _model

_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Malformed JSON",
    401: "Missing or bad API key (or signature)",
    403: "Role too low",
    404: "Not found (also another tenant's resource)",
    405: "Method not allowed",
    409: "Version conflict, or a state that does not allow it",
    410: "Trigger disabled or expired",
    413: "Too large",
    415: "Content type not accepted",
    422: "Invalid value; `field` names it",
    429: "Throttled",
    503: "Unavailable (switched off, or a dependency is down)",
}


def _schemas(ops: list[tuple[str, str, declare.Declared]]) -> dict:
    names = {"ErrorOut"}
    for _, _, op in ops:
        names |= {n for n in op.answers.values() if n}
        if op.body:
            names.add(op.body)
    mode: JsonSchemaMode = "validation"
    models = [(_model(n), mode) for n in sorted(names)]
    _, top = models_json_schema(models, ref_template="#/components/schemas/{model}")
    return dict(sorted(top.get("$defs", {}).items()))


def _ref(model: type[BaseModel]) -> dict:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _parameters(path: str, op: declare.Declared) -> list[dict]:
    return [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
        }
        for name in _path_params(path)
    ] + [
        {
            "name": q.name,
            "in": "query",
            "required": False,
            "schema": q.schema(),
            "description": q.description,
        }
        for q in op.query
    ]


def _responses(method: str, op: declare.Declared) -> dict:
    responses: dict = {}
    for status, name in sorted(op.answers.items()):
        entry: dict = {"description": _STATUS_TEXT.get(status, "OK")}
        if status != 204 and method != "HEAD" and op.content_types:
            entry["content"] = {ct: {"schema": {"type": "string"}} for ct in op.content_types}
        elif status != 204 and method != "HEAD":
            schema = {"type": "object"} if name is None else _ref(_model(name))
            entry["content"] = {"application/json": {"schema": schema}}
        responses[str(status)] = entry
    for status in sorted({*op.errors, 404, 405}) if op.role else sorted({*op.errors, 405}):
        responses.setdefault(
            str(status),
            {
                "description": _STATUS_TEXT.get(status, "Error"),
                "content": {"application/json": {"schema": _ref(ErrorOut)}},
            },
        )
    return responses


def _operation(method: str, path: str, op: declare.Declared) -> dict:
    out: dict = {
        "operationId": method.lower()
        + "_"
        + "_".join(p.strip("{}").replace("-", "_").replace(".", "_") for p in path.split("/") if p),
        "summary": op.summary,
        "x-role": op.role or "none",
    }
    if op.description:
        out["description"] = op.description
    out["security"] = [{"bearerAuth": []}] if op.role else []
    params = _parameters(path, op)
    if params:
        out["parameters"] = params
    if op.body is not None:
        content = {"application/json": {"schema": _ref(_model(op.body))}}
        if method == "PATCH":
            content["application/merge-patch+json"] = {"schema": _ref(_model(op.body))}
        out["requestBody"] = {"required": not op.optional_body, "content": content}
    elif op.raw_body:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {}}, "*/*": {"schema": {}}},
        }
    out["responses"] = _responses(method, op)
    return out


def _declared_routes(routes: Any) -> list[tuple[str, str, declare.Declared]]:
    """``(METHOD, path, declaration)`` of every route that declares itself.

    A route without ``@declare`` is left out of the document (serving the rest beats a
    500), and ``undeclared`` names it: a functional test fails until it is declared.
    """
    found = []
    for path, methods in routes.items():
        for method, entry in methods.items():
            declared = declare.declared_of(entry.view_function)
            if declared is not None:
                found.append((method.upper(), path, declared))
    return sorted(found, key=lambda r: (r[1], r[0]))


def undeclared(routes: Any) -> list[str]:
    """``METHOD path`` of each route that has no ``@declare`` (so no place in the document)."""
    return sorted(
        f"{method} {path}"
        for path, methods in routes.items()
        for method, entry in methods.items()
        if declare.declared_of(entry.view_function) is None
    )


def answer_model(routes: Any, method: str, path: str, status: int) -> type[BaseModel] | None:
    """The model a route declared for ``status`` (``ErrorOut`` for an error), or None."""
    for m, p, op in _declared_routes(routes):
        if (m, p) == (method.upper(), path):
            if status >= 400:
                return ErrorOut
            name = op.answers.get(status)
            if status not in op.answers:
                raise LookupError(f"{method} {path} answered {status}, which it does not declare")
            return _model(name) if name else None
    raise LookupError(f"{method} {path} declares nothing (chalicelib/declare.py)")


def response_drift(model: type[BaseModel], body: Any) -> list[str]:
    """Where ``body`` strays from ``model``: invalid values, or fields the model lacks.

    Answer models accept unknown fields (clients must ignore them); the tests do not, so
    a field a view adds is documented before it ships.
    """
    from pydantic import ValidationError as PydanticValidationError

    try:
        parsed = model.model_validate(body)
    except PydanticValidationError as exc:
        return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    problems: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, BaseModel):
            for extra in sorted(value.model_extra or {}):
                problems.append(f"{where}{extra}: not in {type(value).__name__}")
            for name in type(value).model_fields:
                walk(getattr(value, name), f"{where}{name}.")
        elif isinstance(value, list):
            for n, sub in enumerate(value):
                walk(sub, f"{where}{n}.")

    walk(parsed, "")
    return problems


def build_document(routes: Any) -> dict:
    """The OpenAPI 3.1 document for the routes the app registered, from their declarations."""
    ops = _declared_routes(routes)
    paths: dict = {}
    for method, path, op in ops:
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "cronhook",
            "version": API_VERSION,
            "description": "Workflow triggers for AWS: cron, intervals, one-time instants "
            "and signed webhooks. JSON in and out; instants are ISO-8601 UTC with `Z`.",
        },
        "servers": [{"url": "/"}],
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "`Authorization: Bearer <API key>`",
                }
            },
            "schemas": _schemas(ops),
        },
        "paths": dict(sorted(paths.items())),
    }


_cache: dict[frozenset, dict] = {}


def document(routes: Any) -> dict:
    """``build_document``, built once per set of routes."""
    key = frozenset((m, p) for p, methods in routes.items() for m in methods)
    if key not in _cache:
        _cache[key] = build_document(routes)
    return _cache[key]
