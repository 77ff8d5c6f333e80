"""Every table, and the one place they are created: the list, TTLs, CreateTable arguments.

The AWS template (``infra/``) and the local stack are both checked against these models
by a test. Instants are stored as epoch milliseconds (``*_ms`` numbers) so that index
ranges compare numerically; the API turns them into ISO-8601 UTC. Each table is defined
in the module of its aggregate; indexes are KEYS_ONLY or project a few small attributes.
"""

from __future__ import annotations

from typing import Any

from pynamodb.models import Model

from chalicelib.settings import Settings
from chalicelib.store.alerts import AlertModel
from chalicelib.store.audit import AuditModel
from chalicelib.store.deliveries import DeliveryModel
from chalicelib.store.events import EventModel
from chalicelib.store.heartbeats import HeartbeatModel
from chalicelib.store.keys import KeyModel
from chalicelib.store.ledger import LedgerModel
from chalicelib.store.locks import LockModel
from chalicelib.store.runs import RunModel
from chalicelib.store.state import StateModel
from chalicelib.store.triggers import TriggerModel

__all__ = [
    "ALL_MODELS",
    "TTL_ATTRIBUTES",
    "base_name",
    "table_name",
    "configure_models",
    "create_tables",
    "table_definition",
]

ALL_MODELS: tuple[type[Model], ...] = (
    TriggerModel,
    StateModel,
    RunModel,
    EventModel,
    LedgerModel,
    AuditModel,
    KeyModel,
    LockModel,
    DeliveryModel,
    HeartbeatModel,
    AlertModel,
)

# Tables whose items expire, and the attribute DynamoDB's TTL reads.
TTL_ATTRIBUTES: dict[str, str] = {
    "runs": "expires",
    "events": "expires",
    "ledger": "expires",
    "audit": "expires",
    "deliveries": "expires",
    "states": "expires",  # a run's detail item; a trigger's own items never expire
    "alerts": "expires",
}

_BASE_NAMES = {m: m.Meta.table_name for m in ALL_MODELS}


def base_name(model: type[Model]) -> str:
    """The table's name without the stage prefix (``triggers``, ``runs``...)."""
    return _BASE_NAMES[model]


def table_name(base: str) -> str:
    """The configured name (stage prefix included) of the table called ``base`` (``runs``)."""
    for model, name in _BASE_NAMES.items():
        if name == base:
            return str(model.Meta.table_name)
    raise KeyError(f"no table {base!r}")


def configure_models(settings: Settings) -> None:
    """Point every model at its table (prefix), region and endpoint; drop cached connections."""
    for model in ALL_MODELS:
        target = (
            settings.table_prefix + _BASE_NAMES[model],
            settings.region,
            settings.endpoint_url,
        )
        current = (model.Meta.table_name, model.Meta.region, getattr(model.Meta, "host", None))
        model.Meta.table_name, model.Meta.region, model.Meta.host = target
        if target != current:
            # A connection builds its own botocore session and client (~0.2 s each): keep
            # it while it still points at the same table, region and endpoint.
            model._connection = None


def table_definition(model: type[Model]) -> dict:
    """The boto3 ``CreateTable`` arguments for ``model`` (on demand), from its pynamodb schema."""
    schema: dict[str, Any] = dict(model._get_schema())
    definition: dict = {
        "TableName": model.Meta.table_name,
        "AttributeDefinitions": schema["attribute_definitions"],
        "KeySchema": schema["key_schema"],
        "BillingMode": "PAY_PER_REQUEST",
    }
    indexes = [
        {
            "IndexName": index["index_name"],
            "KeySchema": sorted(index["key_schema"], key=lambda k: k["KeyType"]),
            "Projection": index["projection"],
        }
        for index in schema["global_secondary_indexes"]
    ]
    if indexes:
        definition["GlobalSecondaryIndexes"] = indexes
    return definition


def create_tables(*, wait: bool = False) -> None:
    """Create every table that does not exist yet, with TTL where items expire (local stack, tests)."""
    import boto3

    first = ALL_MODELS[0].Meta
    client = boto3.client("dynamodb", region_name=first.region, endpoint_url=first.host)
    # One client and one ListTables: pynamodb would build a client and describe per model.
    existing: set[str] = set()
    for page in client.get_paginator("list_tables").paginate():
        existing.update(page.get("TableNames", []))
    for model in ALL_MODELS:
        if model.Meta.table_name not in existing:
            client.create_table(**table_definition(model))
            if wait:
                client.get_waiter("table_exists").wait(TableName=model.Meta.table_name)
        ttl_attr = TTL_ATTRIBUTES.get(_BASE_NAMES[model])
        if ttl_attr:
            client.update_time_to_live(
                TableName=model.Meta.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attr},
            )
