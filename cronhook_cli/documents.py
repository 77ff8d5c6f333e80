"""The files ``cronhook apply``, ``diff`` take: YAML or JSON, one file or a folder of them.

Each document is a create body plus ``key`` (``kind: trigger``, the default). Everything
a file can get wrong without asking the server is refused here, before anything is sent,
naming the file, the document and the field:

- a document that is not a mapping, has no valid ``key``, or an unknown ``kind``;
- two documents with one key (both named);
- a field the create body does not have, or a value it does not take (the request
  model itself says so: ``domain/spec``);
- a provider secret written as a literal: secrets are references, ``{"env": "NAME"}``,
  resolved here from the environment (an unset variable leaves the secret out: an update
  keeps the one the trigger has; a create that needs one is refused by the server).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.trigger_keys import check_key
from cronhook_cli.alert_documents import ALERT_KIND, check_alert, resolve_alert_secrets

__all__ = ["Document", "DocumentError", "load_documents", "SUFFIXES"]

SUFFIXES = (".yaml", ".yml", ".json")
_KINDS = ("trigger", ALERT_KIND)
# Set by the tool, never by a file.
_TOOL_FIELDS = ("managed_by",)


class DocumentError(click.ClickException):
    """A document refused before anything is sent: exit 1, naming where."""

    exit_code = 1


@dataclass
class Document:
    """One trigger document: where it is, its key, and the create body to send."""

    path: str
    number: int
    key: str
    body: dict
    missing_env: list[str] = field(default_factory=list)
    kind: str = "trigger"

    @property
    def where(self) -> str:
        named = f"alert {self.key}" if self.kind == ALERT_KIND else f"key {self.key}"
        return f"{self.path}, document {self.number} ({named})"


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    if path.is_file():
        return [path]
    raise DocumentError(f"{path}: no such file or folder")


def _plain(value: Any) -> Any:
    """YAML's own types back to JSON's: an unquoted instant is a string again."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _raw_documents(path: Path) -> Iterator[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DocumentError(f"{path}: not JSON: {exc}") from exc
        yield from data if isinstance(data, list) else [data]
        return
    import yaml  # the CLI's dependency only: never on the Lambda path

    try:
        loaded = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise DocumentError(f"{path}: not YAML: {exc}") from exc
    for data in loaded:
        if data is None:  # an empty document (a trailing ---)
            continue
        yield from data if isinstance(data, list) else [data]


def _resolve_secret(doc: Document) -> None:
    """``event.secret``: a reference resolved from the environment, never a literal."""
    event = doc.body.get("event")
    if not isinstance(event, dict) or "secret" not in event:
        return
    ref = event["secret"]
    if isinstance(ref, dict) and set(ref) == {"env"} and isinstance(ref["env"], str):
        value = os.environ.get(ref["env"])
        if value is None:
            doc.missing_env.append(ref["env"])
            del event["secret"]
        else:
            event["secret"] = value
        return
    raise DocumentError(
        f"{doc.where}: field event.secret: a secret is never written in a file; give a "
        'reference instead: secret: {"env": "NAME"} (the variable holding it)'
    )


def _check_body(doc: Document) -> None:
    """The create body as the server's request model reads it (unknown fields, types)."""
    from chalicelib.domain.spec import TriggerIn, parse_model

    for name in _TOOL_FIELDS:
        if name in doc.body:
            raise DocumentError(f"{doc.where}: field {name}: set by the tool, not by a file")
    try:
        parse_model(TriggerIn, doc.body)
    except ValidationError as exc:
        where = f"field {exc.field}: " if exc.field else ""
        raise DocumentError(f"{doc.where}: {where}{exc.message}") from exc


def _document(path: Path, number: int, data: Any) -> Document:
    if not isinstance(data, dict):
        raise DocumentError(f"{path}, document {number}: not a mapping of fields")
    body = _plain(data)
    kind = body.pop("kind", "trigger")
    if kind not in _KINDS:
        raise DocumentError(
            f"{path}, document {number}: field kind: {kind!r} is not one of {', '.join(_KINDS)}"
        )
    if kind == ALERT_KIND:
        return _alert_document(path, number, body)
    try:
        key = check_key(body.pop("key", None))
    except ValidationError as exc:
        raise DocumentError(f"{path}, document {number}: field key: {exc.message}") from exc
    doc = Document(str(path), number, key, body)
    _resolve_secret(doc)
    _check_body(doc)
    return doc


def _alert_document(path: Path, number: int, body: dict) -> Document:
    """An alert policy, named by its ``name``."""
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DocumentError(f"{path}, document {number}: field name: an alert policy needs one")
    doc = Document(str(path), number, name, body, kind=ALERT_KIND)
    resolve_alert_secrets(doc.where, body, DocumentError)
    try:
        check_alert(body)
    except ValidationError as exc:
        where = f"field {exc.field}: " if exc.field else ""
        raise DocumentError(f"{doc.where}: {where}{exc.message}") from exc
    return doc


def load_documents(target: str) -> list[Document]:
    """Every document under ``target`` (a file or a folder), checked; in file order."""
    documents: list[Document] = []
    seen: dict[str, Document] = {}  # by kind and key
    for path in _files(Path(target)):
        for number, data in enumerate(_raw_documents(path), start=1):
            doc = _document(path, number, data)
            named = f"{doc.kind}:{doc.key}"
            if named in seen:
                field_name = "name" if doc.kind == ALERT_KIND else "key"
                raise DocumentError(
                    f"{doc.where}: field {field_name}: {doc.key!r} is also the {field_name} of "
                    f"{seen[named].where}; it names one {doc.kind}"
                )
            seen[named] = doc
            documents.append(doc)
    return documents
