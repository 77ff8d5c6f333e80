"""The OpenAPI 3.1 document of the REST API, and ``docs/api.md`` rendered from it.

The document is built from what each route declares (``chalicelib/declare.py``: role,
body, query, answers, errors), walking the routes the app really has. Request bodies are
the pydantic models that validate requests (``domain/spec.py``); answers are the models
below. The functional tests check every JSON answer against the model its route
declared, and refuse fields a model does not list (``response_drift``), so a view that
grows a field fails a test until its model documents it. ``python -m chalicelib.openapi``
rewrites ``docs/api.md``; a test fails when the committed page is out of date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from chalicelib import declare
from chalicelib.domain import spec

__all__ = [
    "build_document",
    "document",
    "answer_model",
    "response_drift",
    "undeclared",
    "render_markdown",
    "main",
]

API_VERSION = "1.0.0"
Instant = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
RunStatus = Literal[
    "queued", "running", "succeeded", "failed", "skipped", "refused", "budget_exceeded", "lost"
]
Surface = Literal["schedule", "event", "manual", "backfill"]


class _Out(BaseModel):
    """Responses may grow fields: clients must ignore the ones they do not know."""

    model_config = ConfigDict(extra="allow")


class ErrorDetail(_Out):
    code: str = Field(description="Machine-readable: bad_request, unauthorized, not_found...")
    message: str
    field: str | None = Field(default=None, description="Dotted path of the field at fault")


class ErrorOut(_Out):
    """Every 4xx and 5xx answer."""

    error: ErrorDetail


class LastRunOut(_Out):
    id: str | None
    status: str | None
    finished_at: Instant | None
    error: str | None


class TriggerOut(_Out):
    """A trigger as the API shows it (never a secret)."""

    id: str
    workflow: str
    title: str | None
    display_name: str
    tags: list[str]
    kind: Literal["cron", "interval", "at", "event"]
    cadence: str = Field(description='Human-readable, e.g. "Every 2 hours"')
    schedule: dict[str, Any] | None
    event: dict[str, Any] | None
    payload: Any = None
    backfill: str
    serialize_key: str | None
    secret_scope: str | None
    limits: dict[str, Any] | None
    overlap: Literal["skip", "buffer_one", "allow"]
    concurrency: int
    allow_destructive: bool
    enabled: bool
    status: Literal["active", "disabled"]
    disabled_reason: str | None = Field(
        description="null, manual, failures, expired, max_runs, budget, refused, creator_gone, "
        "workflow_missing, source_gone"
    )
    disabled_note: str | None = Field(default=None, description="Why it was paused (a person's)")
    disabled_by: str | None = Field(default=None, description="The key that paused it")
    disabled_at: Instant | None = None
    budget: dict[str, Any] | None = Field(
        default=None,
        description="With `limits.max_usd`: `{max_usd, budget_period, period, spent_usd, "
        "reserved_usd}` of the newest budget period",
    )
    next_fire_at: Instant | None
    consecutive_failures: int
    run_count: int
    last_run: LastRunOut | None
    webhook_url: str | None = None
    created_by: str | None
    created_at: Instant | None
    updated_at: Instant | None
    version: int = Field(description="Send it back in a PATCH for optimistic locking")
    warnings: list[Any]
    state: dict[str, Any] | None = Field(default=None, description="On single-trigger answers only")


class WebhookOnce(_Out):
    url: str | None = None
    secret: str | None = Field(default=None, description="Shown only in this answer")


class TriggerCreated(TriggerOut):
    """The trigger, plus (event triggers) its webhook URL and secret, shown once."""

    webhook: WebhookOnce | None = None
    outbound_secret: str | None = Field(
        default=None,
        description="An `http:` target's signing secret (Standard Webhooks): shown only here",
    )


class TriggerPage(_Out):
    items: list[TriggerOut]
    next_cursor: str | None


class RunOut(_Out):
    id: str
    trigger_id: str
    surface: Surface
    status: RunStatus
    workflow: str | None = None
    scheduled_for: Instant | None
    started_at: Instant | None
    finished_at: Instant | None
    lateness_ms: int | None
    error: str | None
    cost_usd: float
    event_id: str | None
    attempt: int
    output: Any = Field(default=None, description="What the workflow returned, clipped to 4 KB")


class RunPage(_Out):
    items: list[RunOut]
    next_cursor: str | None


class RunStarted(_Out):
    run_id: str


class DstMarkOut(_Out):
    """A fire, or a missing fire, that a DST transition decided, and the policy that did."""

    at: Instant = Field(description="The fire; for a skipped one, the instant the clock jumped")
    change: Literal["shifted", "repeated", "skipped"]
    policy: Literal["shift", "skip", "once", "both"] = Field(
        description="dst.skipped or dst.repeated for a fixed-time cron; a wildcard cron "
        "follows the wall clock (skip, both)"
    )


class ReplayStarted(_Out):
    event_id: str
    run_id: str


class PreviewOut(_Out):
    fires: list[Instant]
    dst: list[DstMarkOut] = Field(
        default_factory=list, description="One entry per fire (or missing fire) DST decided"
    )
    cadence: str | None = None


class SecretOut(_Out):
    secret: str = Field(description="Shown only in this answer")
    previous_valid_until: Instant | None = Field(
        default=None, description="Until when the previous secret still verifies"
    )
    previous_secrets_valid_until: list[Instant] = Field(
        default_factory=list,
        description="Every older secret that still verifies, newest first, and until when",
    )


class EventOut(_Out):
    """A received webhook (never its body here; the run gets it)."""

    id: str
    trigger_id: str
    status: str = Field(description="pending, running, succeeded, failed, skipped")
    run_id: str | None
    attempt: int
    source: str | None
    event_type: str | None
    dedupe_key: str | None
    received_at: Instant | None
    retry_at: Instant | None
    finished_at: Instant | None
    body_size: int
    headers: dict[str, Any] = Field(description="Clipped, without credentials")


class EventPage(_Out):
    items: list[EventOut]
    next_cursor: str | None


class HookAnswer(_Out):
    event_id: str | None = None
    run_id: str | None = None
    duplicate: bool | None = Field(default=None, description="Seen before: the original ids")
    ignored: str | None = Field(default=None, description="filter, or source_gone")
    challenge: str | None = Field(default=None, description="Slack's url_verification")


class ChallengeAnswer(_Out):
    """LinkedIn's endpoint validation: the code, and its HMAC-SHA256 under the client secret."""

    challengeCode: str  # noqa: N815 (LinkedIn's own field names)
    challengeResponse: str  # noqa: N815


class SkippedOut(_Out):
    id: str
    reason: str


class SwitchedOut(_Out):
    changed: int
    ids: list[str]
    skipped: list[SkippedOut] = Field(default_factory=list)


class BackfillPlan(_Out):
    """A dry run: what a backfill of the window would run."""

    slots: int
    first: Instant | None
    last: Instant | None
    estimated_usd: float = Field(description="Mean cost of recent runs times `slots`")
    estimate_from_runs: int = Field(description="How many recent runs the estimate uses")
    already_ran: int = Field(description="Slots in the window that ran already (not counted)")


class BackfillStarted(_Out):
    slots: int
    run_ids: list[str] = Field(description="In the order they run")


class WorkflowOut(_Out):
    name: str
    description: str | None
    state_schema: dict[str, Any] | None


class WorkflowPage(_Out):
    items: list[WorkflowOut]
    next_cursor: str | None


class DeletedOut(_Out):
    deleted: int


class AuditOut(_Out):
    id: str
    at: Instant
    actor: str = Field(description="Key id, root, or system")
    action: str = Field(
        description="create, update, delete, enable, disable, fire, rotate, replay, "
        "create_key, delete_key"
    )
    trigger_id: str | None
    detail: dict[str, Any] = Field(description="For update: the field diff; never a secret")


class AuditPage(_Out):
    items: list[AuditOut]
    next_cursor: str | None


class KeyOut(_Out):
    id: str
    tenant: str
    role: Literal["viewer", "operator", "admin"]
    created_at: Instant | None
    created_by: str | None


class KeyCreated(KeyOut):
    key: str = Field(description="The API key itself: shown only in this answer")


class KeyPage(_Out):
    items: list[KeyOut]
    next_cursor: str | None


class HealthOut(_Out):
    ok: bool


class DeliveryOut(_Out):
    """One webhook delivery to a known token, accepted or rejected (kept 7 days)."""

    id: str
    received_at: Instant
    outcome: Literal[
        "accepted", "duplicate", "filtered", "invalid_signature", "stale", "too_large", "throttled"
    ]
    detail: str | None = Field(default=None, description="The finer cause of a rejection")
    status: int | None = Field(default=None, description="The HTTP status answered")
    event_id: str | None
    size: int = Field(description="Body size in bytes")
    headers: dict[str, str] = Field(description="Request headers, credentials left out")


class DeliveryPage(_Out):
    items: list[DeliveryOut]
    next_cursor: str | None


class HealthReport(_Out):
    """Is the scheduler ticking, how full are the queues, how late are the fires."""

    caller: dict[str, str] = Field(description="The key's `tenant` and `role`")
    last_tick_at: Instant | None = Field(description="Start of the last heartbeat tick that ended")
    heartbeat_s: int
    stale: bool = Field(description="No tick for more than two heartbeat periods")
    queue_depth: int | None = Field(description="Fire messages waiting, delayed or running")
    dlq_depth: int | None = Field(description="Messages in the dead-letter queue")
    lateness_p99_ms: int | None = Field(description="Scheduled runs of the last hour, p99")
    fires_last_hour: int = Field(description="The tenant's runs recorded in the last hour")
    fires_capped: bool = Field(description="fires_last_hour stopped counting at 5,000")


def _answer_models() -> dict[str, type[BaseModel]]:
    return {
        name: value
        for name, value in globals().items()
        if isinstance(value, type) and issubclass(value, _Out) and value is not _Out
    }


def _model(name: str) -> type[BaseModel]:
    """A declared model by name: an answer model here, or a request model in ``spec``."""
    found = _answer_models().get(name) or getattr(spec, name, None)
    if not (isinstance(found, type) and issubclass(found, BaseModel)):
        raise LookupError(f"a route declares an unknown model {name!r}")
    return found


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
    models = [(_model(n), "validation") for n in sorted(names)]
    _, top = models_json_schema(models, ref_template="#/components/schemas/{model}")
    return dict(sorted(top.get("$defs", {}).items()))


def _ref(model: type[BaseModel]) -> dict:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


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
    params = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
        }
        for name in _path_params(path)
    ]
    params += [
        {
            "name": q.name,
            "in": "query",
            "required": False,
            "schema": q.schema(),
            "description": q.description,
        }
        for q in op.query
    ]
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
    out["responses"] = responses
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


# -- docs/api.md ----------------------------------------------------------------------


def _type(schema: dict) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "anyOf" in schema:
        return " \\| ".join(_type(s) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items') or {})}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    if kind == "string" and schema.get("format"):
        return f"string ({schema['format']})"
    if kind:
        return str(kind)
    return "any"


def _constraints(schema: dict) -> str:
    parts = []
    for key, label in (
        ("minimum", ">="),
        ("maximum", "<="),
        ("exclusiveMinimum", ">"),
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("maxItems", "max items"),
        ("pattern", "pattern"),
    ):
        if key in schema:
            value = schema[key]
            parts.append(f"{label} `{value}`" if key == "pattern" else f"{label} {value}")
    for sub in schema.get("anyOf") or []:
        extra = _constraints(sub)
        if extra:
            parts.append(extra)
    if "default" in schema and schema["default"] is not None:
        parts.append(f"default `{json.dumps(schema['default'])}`")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _schema_table(name: str, schema: dict) -> list[str]:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [schema["description"].strip(), ""]
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if not props:
        return [*lines, "Any JSON object.", ""]
    lines += ["| field | type | required | notes |", "|---|---|---|---|"]
    for prop, sub in props.items():
        notes = "; ".join(x for x in (_cell(sub.get("description", "")), _constraints(sub)) if x)
        lines.append(
            f"| `{prop}` | {_type(sub)} | {'yes' if prop in required else 'no'} | {notes} |"
        )
    extra = schema.get("additionalProperties")
    if extra is False:
        lines += ["", "Unknown fields are refused (422 naming them)."]
    return [*lines, ""]


_INTRO = """# cronhook REST API

<!-- Generated from chalicelib/openapi.py by `python -m chalicelib.openapi`; do not edit.
     tests/functional/test_api_http.py fails when this page is out of date. -->

The machine-readable document is served at `GET /v1/openapi.json` (no key needed):
OpenAPI 3.1, generated from the same pydantic models that validate requests.

- **JSON** in and out. Instants are ISO-8601 UTC with `Z`.
- **Auth**: `Authorization: Bearer <key>`. Roles: `viewer` reads; `operator` also
  writes, fires, enables, replays and rotates; `admin` also manages keys and reads the
  audit log. Another tenant's resources answer **404**, never 403, so ids cannot be
  probed; a role too low answers 403.
- **Errors**: `{"error": {"code": "...", "message": "...", "field": "schedule.cron"}}`,
  `field` when one field is at fault. 400 malformed JSON, 401 missing or bad key, 403
  role too low, 404 not found, 405 method, 409 version conflict, 413 too large, 415
  content type, 422 invalid value (unknown fields too), 429 throttled. A client never
  gets a 500 for what it sent.
- **Lists** answer `{"items": [...], "next_cursor": "..." | null}`, newest first. Pass
  `limit` (1-200, default 50) and `cursor` (the previous `next_cursor`); a cursor is
  opaque and only valid for the list and filters that issued it.
- **Run as creator**: a trigger runs with the authority of the key that created it
  (`created_by`). If that key is deleted or demoted below `operator`, the next fire is
  refused and the trigger is disabled with `disabled_reason: "creator_gone"`.
- **Audit**: creates, updates (with a field diff), deletes, enables, disables (also the
  automatic ones, actor `system`), manual fires, rotations, replays and key changes are
  logged with actor and time. Never a secret.

## Routes

| method and path | role | answer |
|---|---|---|
"""


def render_markdown(doc: dict) -> str:
    """``docs/api.md``: the routes, their parameters and answers, then the schemas."""
    lines = [_INTRO.rstrip("\n")]
    ops = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]
    for path, method, op in ops:
        ok = next(code for code in op["responses"] if code.startswith("2"))
        lines.append(
            f"| `{method.upper()} {path}` | {op['x-role']} | {ok} {_cell(op['summary'])} |"
        )
    lines.append("")
    for path, method, op in ops:
        lines += [
            f"### `{method.upper()} {path}`",
            "",
            f"{op['summary']}. Role: **{op['x-role']}**.",
            "",
        ]
        if op.get("description"):
            lines += [op["description"], ""]
        params = [p for p in op.get("parameters", []) if p["in"] == "query"]
        if params:
            lines += ["| query | type | notes |", "|---|---|---|"]
            for p in params:
                notes = "; ".join(
                    x for x in (p.get("description", ""), _constraints(p["schema"])) if x
                )
                lines.append(f"| `{p['name']}` | {_type(p['schema'])} | {notes} |")
            lines.append("")
        body = op.get("requestBody")
        if body:
            schema = next(iter(body["content"].values()))["schema"]
            types = ", ".join(f"`{t}`" for t in body["content"])
            lines += [f"Body ({types}): {_type(schema) if schema else 'any'}", ""]
        answers = []
        for code, response in op["responses"].items():
            content = (response.get("content") or {}).get("application/json")
            schema = _type(content["schema"]) if content else "no body"
            answers.append(f"{code} {schema}" if code.startswith("2") else code)
        lines += ["Answers: " + " · ".join(answers), ""]
    lines += ["## Schemas", ""]
    for name, schema in doc["components"]["schemas"].items():
        lines += _schema_table(name, schema)
    return "\n".join(lines).rstrip("\n") + "\n"


DOCS_PATH = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def main(argv: list[str] | None = None) -> int:
    """Rewrite ``docs/api.md`` (``--check``: exit 1 if it is out of date instead)."""
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, str(DOCS_PATH.parents[1]))
    import app as app_module

    text = render_markdown(build_document(app_module.app.routes))
    if "--check" in argv:
        current = DOCS_PATH.read_text() if DOCS_PATH.exists() else ""
        if current != text:
            print(f"{DOCS_PATH} is out of date: run python -m chalicelib.openapi", file=sys.stderr)
            return 1
        return 0
    DOCS_PATH.write_text(text)
    print(f"wrote {DOCS_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
