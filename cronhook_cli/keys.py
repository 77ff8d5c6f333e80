"""``cronhook keys ...``: create, list and delete API keys (admin)."""

from __future__ import annotations

from typing import Any

import click

from cronhook_cli.context import client_of, command, delete, id_path
from cronhook_cli.output import (
    Column,
    at,
    cell,
    emit_page,
    emit_secret,
    field,
    print_list,
    secret,
)

__all__ = ["ROLES", "keys", "print_keys"]

ROLES = ("viewer", "operator", "admin")


_KEY_COLUMNS = (
    Column("ID", field("id"), whole=True),
    Column("TENANT", field("tenant")),
    Column("ROLE", field("role")),
    Column("CREATED", at("created_at"), whole=True),
    Column("BY", field("created_by"), whole=True),
)


def print_keys(items: list[dict]) -> None:
    """The keys list (never the keys themselves: the API shows a key only on create)."""
    print_list(items, "No keys.", _KEY_COLUMNS)


@click.group()
def keys() -> None:
    """Create, list and delete API keys (admin)."""


@command(
    "create",
    click.option("--role", type=click.Choice(ROLES), required=True, help="Role of the new key."),
    click.option("--tenant", help="Tenant of the new key (only the root key may set it)."),
    group=keys,
)
def create_key(ctx: click.Context, role: str, tenant: str | None, as_json: bool) -> None:
    """Create an API key; the key itself is shown only this once."""
    body: dict[str, Any] = {"role": role}
    if tenant is not None:
        body["tenant"] = tenant
    answer = client_of(ctx).request("POST", "/v1/keys", body=body)
    emit_secret(
        ctx,
        answer,
        as_json,
        lambda: (
            [(name, cell(answer.get(name))) for name in ("id", "tenant", "role")]
            + [("key", secret(answer.get("key")))]
        ),
        what="the key",
    )


@command(
    "list", click.option("--tenant", help="Another tenant's keys (root key only)."), group=keys
)
def list_keys(ctx: click.Context, tenant: str | None, as_json: bool) -> None:
    """The tenant's API keys (never the keys themselves)."""
    items, _ = client_of(ctx).pages("/v1/keys", {"tenant": tenant})
    emit_page(ctx, items, None, as_json, print_keys)


@command("delete", click.argument("key_id", metavar="KEY_ID"), group=keys)
def delete_key(ctx: click.Context, key_id: str, as_json: bool) -> None:
    """Delete an API key (it stops working at once)."""
    delete(ctx, id_path("a key id", key_id, "/v1/keys"), key_id, as_json=as_json)
