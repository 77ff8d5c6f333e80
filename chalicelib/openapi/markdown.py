"""``docs/api.md``, rendered from the OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path

DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "api.md"


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
