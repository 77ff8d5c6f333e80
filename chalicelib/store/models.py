"""Table and index definitions: the one place they exist.

The AWS template (``infra/``) and the local stack are both checked against these models
by a test. Instants are stored as epoch milliseconds (``*_ms`` numbers) so that index
ranges compare numerically; the API turns them into ISO-8601 UTC.

Cost rule from DESIGN.md: the trigger item that the heartbeat and runner rewrite on every
fire stays well under 1 KB. ``state`` lives in its own table, written only when it
changes; indexes are KEYS_ONLY or project a few small attributes.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    IncludeProjection,
    KeysOnlyProjection,
)
from pynamodb.models import Model

from chalicelib.settings import Settings

__all__ = [
    "TriggerModel",
    "StateModel",
    "RunModel",
    "EventModel",
    "LedgerModel",
    "AuditModel",
    "KeyModel",
    "LockModel",
    "DeliveryModel",
    "HeartbeatModel",
    "ALL_MODELS",
    "TTL_ATTRIBUTES",
    "configure_models",
    "create_tables",
    "table_definition",
]


class _Base(Model):
    class Meta:
        abstract = True
        region = "us-east-1"
        billing_mode = "PAY_PER_REQUEST"
        max_retry_attempts = 3


class DueIndex(GlobalSecondaryIndex):
    """Sparse, sharded: only triggers with something to look at (a slot or a lease)."""

    class Meta:
        index_name = "due"
        projection = IncludeProjection(["next_fire_at", "sched"])

    due_shard = UnicodeAttribute(hash_key=True)
    due_at = NumberAttribute(range_key=True)


class TriggersByTenant(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_tenant"
        projection = KeysOnlyProjection()

    tenant = UnicodeAttribute(hash_key=True)
    created_ms = NumberAttribute(range_key=True)


class TriggerModel(_Base):
    """The hot item: claimed, started and settled on every fire."""

    class Meta(_Base.Meta):
        table_name = "triggers"

    id = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    workflow = UnicodeAttribute()
    kind = UnicodeAttribute()
    spec = UnicodeAttribute()  # compact JSON of the user's settings (never secrets)
    sched = UnicodeAttribute(null=True)  # compact JSON of the schedule, projected into `due`
    status = UnicodeAttribute(default="active")
    disabled_reason = UnicodeAttribute(null=True)
    due_shard = UnicodeAttribute(null=True)
    due_at = NumberAttribute(null=True)
    next_fire_at = NumberAttribute(null=True)
    in_flight = MapAttribute(default=dict)
    consecutive_failures = NumberAttribute(default=0)
    run_count = NumberAttribute(default=0)
    last_run = MapAttribute(null=True)
    created_by = UnicodeAttribute(null=True)
    created_ms = NumberAttribute()
    updated_ms = NumberAttribute()
    version = NumberAttribute(default=1)
    webhook_token = UnicodeAttribute(null=True)
    secret_sealed = UnicodeAttribute(null=True)
    secret_prev_sealed = UnicodeAttribute(null=True)
    secret_prev_until = NumberAttribute(null=True)
    # Older secrets still in their grace, JSON [[sealed, until_ms], ...] (rare: a rotation
    # during another's grace), so a second rotation does not end the first one's grace.
    secret_older = UnicodeAttribute(null=True)
    outbound_secret_sealed = UnicodeAttribute(null=True)
    # Who paused the trigger, when, and why (a person's note); cleared on enable.
    disabled_note = UnicodeAttribute(null=True)
    disabled_by = UnicodeAttribute(null=True)
    disabled_ms = NumberAttribute(null=True)
    # Slots of a backfill still to run (the slots themselves are in the states table):
    # a settle that sees it starts the next slot (services/backfill.py).
    backfill_left = NumberAttribute(null=True)

    due = DueIndex()
    by_tenant = TriggersByTenant()


class StateModel(_Base):
    """A trigger's JSON state, compare-and-set on ``version``."""

    class Meta(_Base.Meta):
        table_name = "states"

    trigger_id = UnicodeAttribute(hash_key=True)
    state = UnicodeAttribute(default="{}")
    version = NumberAttribute(default=0)


class RunsByTenant(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_tenant"
        projection = AllProjection()

    tenant = UnicodeAttribute(hash_key=True)
    sort_key = UnicodeAttribute(range_key=True)


class RunModel(_Base):
    """One fire's record; run ids are time-ordered within a trigger."""

    class Meta(_Base.Meta):
        table_name = "runs"

    trigger_id = UnicodeAttribute(hash_key=True)
    run_id = UnicodeAttribute(range_key=True)
    tenant = UnicodeAttribute()
    sort_key = UnicodeAttribute()
    surface = UnicodeAttribute()
    status = UnicodeAttribute()
    workflow = UnicodeAttribute(null=True)
    scheduled_for = NumberAttribute(null=True)
    started_at = NumberAttribute(null=True)
    finished_at = NumberAttribute(null=True)
    lateness_ms = NumberAttribute(null=True)
    error = UnicodeAttribute(null=True)
    cost_usd = NumberAttribute(default=0)
    event_id = UnicodeAttribute(null=True)
    attempt = NumberAttribute(default=1)
    output = UnicodeAttribute(null=True)
    expires = NumberAttribute(null=True)

    by_tenant = RunsByTenant()


class EventsByTrigger(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_trigger"
        projection = KeysOnlyProjection()

    trigger_id = UnicodeAttribute(hash_key=True)
    received_sk = UnicodeAttribute(range_key=True)


class PendingByTrigger(GlobalSecondaryIndex):
    """Sparse: events of one trigger still waiting for a run slot, the longest-ready first."""

    class Meta:
        index_name = "pending_by_trigger"
        projection = KeysOnlyProjection()

    pending_trigger = UnicodeAttribute(hash_key=True)
    pending_sk = UnicodeAttribute(range_key=True)


class PendingAll(GlobalSecondaryIndex):
    """Sparse, sharded: every event whose bookkeeping is not over, for the heartbeat's sweep.

    An event enters it on arrival and leaves it only when it ends (terminal): it stays
    in while it runs, so that the sweep also finds a running event whose run ended but
    whose own bookkeeping did not (see ``events.sweep``). Keeping the entry through the
    start costs nothing: the start no longer deletes it, the end does instead.
    """

    class Meta:
        index_name = "pending_all"
        projection = KeysOnlyProjection()

    pending_shard = UnicodeAttribute(hash_key=True)
    pending_sk = UnicodeAttribute(range_key=True)


class EventModel(_Base):
    """A received webhook; its id is derived from the dedupe key, so the put is the dedupe."""

    class Meta(_Base.Meta):
        table_name = "events"

    id = UnicodeAttribute(hash_key=True)
    trigger_id = UnicodeAttribute()
    tenant = UnicodeAttribute()
    received_ms = NumberAttribute()
    received_sk = UnicodeAttribute()
    status = UnicodeAttribute(default="pending")
    run_id = UnicodeAttribute()
    attempt = NumberAttribute(default=0)
    source = UnicodeAttribute()
    event_type = UnicodeAttribute(null=True)
    dedupe_key = UnicodeAttribute(null=True)
    body = UnicodeAttribute(null=True)
    body_s3_key = UnicodeAttribute(null=True)
    body_size = NumberAttribute(default=0)
    headers = UnicodeAttribute(default="{}")
    pending_trigger = UnicodeAttribute(null=True)
    pending_shard = UnicodeAttribute(null=True)
    # "<ready ms:013d>#<run id>" while pending or running (ready = received, or retry_at
    # for a retry; a start keeps it as it was); the run id inside lets the KEYS_ONLY
    # pending indexes build a fire message alone. Removed when the event ends.
    pending_sk = UnicodeAttribute(null=True)
    retry_at = NumberAttribute(null=True)
    dedupe_until = NumberAttribute(null=True)  # epoch ms; the same key is a duplicate until then
    finished_ms = NumberAttribute(null=True)
    # Set by the start of each attempt (in the same write): when it started and the lease
    # of its run. The sweep uses them to tell a run that ended without its bookkeeping
    # from one still going, and which run record belongs to this attempt.
    started_ms = NumberAttribute(null=True)
    lease_ms = NumberAttribute(null=True)
    expires = NumberAttribute(null=True)
    surface = UnicodeAttribute(default="event")

    by_trigger = EventsByTrigger()
    pending_by_trigger = PendingByTrigger()
    pending_all = PendingAll()


class LedgerModel(_Base):
    """Spend per trigger per budget period: atomic ADD, reserve then reconcile."""

    class Meta(_Base.Meta):
        table_name = "ledger"

    trigger_id = UnicodeAttribute(hash_key=True)
    period = UnicodeAttribute(range_key=True)
    spent_usd = NumberAttribute(default=0)
    reserved_usd = NumberAttribute(default=0)
    # spent + reserved, kept as one number: a DynamoDB condition cannot add two attributes.
    committed_usd = NumberAttribute(default=0)
    last_cost_usd = NumberAttribute(null=True)
    holds = MapAttribute(default=dict)  # run_id -> the estimate that run reserved
    expires = NumberAttribute(null=True)


class AuditModel(_Base):
    """Who changed what; never secrets."""

    class Meta(_Base.Meta):
        table_name = "audit"

    tenant = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    at_ms = NumberAttribute()
    actor = UnicodeAttribute()
    action = UnicodeAttribute()
    trigger_id = UnicodeAttribute(null=True)
    detail = UnicodeAttribute(default="{}")
    expires = NumberAttribute(null=True)


class KeysByTenant(GlobalSecondaryIndex):
    class Meta:
        index_name = "by_tenant"
        projection = AllProjection()

    tenant = UnicodeAttribute(hash_key=True)
    created_ms = NumberAttribute(range_key=True)


class KeyModel(_Base):
    """An API key: only its SHA-256 is stored; the id is part of the key itself."""

    class Meta(_Base.Meta):
        table_name = "keys"

    id = UnicodeAttribute(hash_key=True)
    tenant = UnicodeAttribute()
    role = UnicodeAttribute()
    key_hash = UnicodeAttribute()
    created_ms = NumberAttribute()
    created_by = UnicodeAttribute(null=True)
    revoked = BooleanAttribute(default=False)

    by_tenant = KeysByTenant()


class LockModel(_Base):
    """A fenced lease on a serialize_key: one run at a time across triggers."""

    class Meta(_Base.Meta):
        table_name = "locks"

    key = UnicodeAttribute(hash_key=True)
    owner = UnicodeAttribute(null=True)
    lease_until = NumberAttribute(null=True)
    waiters = MapAttribute(default=dict)


class DeliveryModel(_Base):
    """One webhook delivery to a known token, accepted or rejected, kept 7 days (TTL).

    ``sk`` is ``"<received ms:013d>#<id>"`` for a delivery. The same partition holds one
    counter per hour (``sk = "#n#<hour>"``, sorting before every delivery) that bounds how
    many rejected deliveries are recorded (``services/deliveries.py``).
    """

    class Meta(_Base.Meta):
        table_name = "deliveries"

    trigger_id = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute(null=True)
    received_ms = NumberAttribute(null=True)
    outcome = UnicodeAttribute(null=True)
    detail = UnicodeAttribute(null=True)
    status = NumberAttribute(null=True)
    event_id = UnicodeAttribute(null=True)
    size = NumberAttribute(null=True)
    headers = UnicodeAttribute(null=True)
    n = NumberAttribute(null=True)  # counters only: deliveries seen this hour
    expires = NumberAttribute(null=True)


class HeartbeatModel(_Base):
    """When the last finished heartbeat tick started (one item, rewritten each tick)."""

    class Meta(_Base.Meta):
        table_name = "heartbeats"

    name = UnicodeAttribute(hash_key=True)
    at_ms = NumberAttribute()


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
)

# Tables whose items expire, and the attribute DynamoDB's TTL reads.
TTL_ATTRIBUTES: dict[str, str] = {
    "runs": "expires",
    "events": "expires",
    "ledger": "expires",
    "audit": "expires",
    "deliveries": "expires",
}

_BASE_NAMES = {m: m.Meta.table_name for m in ALL_MODELS}


def base_name(model: type[Model]) -> str:
    """The table's name without the stage prefix (``triggers``, ``runs``...)."""
    return _BASE_NAMES[model]


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
    schema = model._get_schema()
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
