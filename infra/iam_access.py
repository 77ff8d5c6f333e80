"""What each Lambda function may touch: ``ACCESS``, one ``Access`` per function.

``infra/iam.py`` turns it into one least-privilege role per function
(``infra/iam_statements.py`` writes each role's statements); a new AWS call a function
makes needs its grant here, on that function, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Access", "ACCESS", "FUNCTIONS", "role_logical_id"]


@dataclass(frozen=True)
class Access:
    """What one function may touch."""

    read: tuple[str, ...] = ()  # table base names: read (and query every index)
    write: tuple[str, ...] = ()  # table base names: read and write
    send: bool = False  # sqs:SendMessage on the fire queue
    consume: bool = False  # the runner's event source mapping polls the queue (+ hand-backs)
    payloads: tuple[str, ...] = ()  # s3 actions on the payload bucket's objects
    kms: tuple[str, ...] = ()  # kms actions on the stack's key
    params: tuple[str, ...] = ()  # "switch", "root_key", "secrets"
    secrets_manager: bool = False
    invoke_workflows: bool = False  # lambda: targets, through the target-invoke role (below)
    queue_depths: bool = False  # sqs:GetQueueAttributes on the fire queue and its DLQ (health)
    source_rules: bool = False  # this stage's EventBridge rules and SES receipt rules
    ingest: bool = False  # consume the ingest queue, read inbound mail
    send_ticks: bool = False  # sqs:SendMessage on the tick queue (the heartbeat's fan-out)
    consume_ticks: bool = False  # the enqueuer's event source mapping polls the tick queue
    send_alerts: bool = False  # sqs:SendMessage on the alerts queue (transitions detected)
    alerts: bool = False  # the alerts worker: its queue, the bus, SES from the sender, SNS
    run_logs: bool = False  # Logs Insights on the runner's and the API's log groups


# Chalice's function names (config.json's lambda_functions keys) -> CloudFormation ids.
FUNCTIONS = {
    "api_handler": "APIHandler",
    "authorizer": "Authorizer",
    "heartbeat": "Heartbeat",
    "runner": "Runner",
    "enqueuer": "Enqueuer",
    "ingest": "Ingest",
    "trigger_provider": "TriggerProvider",
    "alerts": "Alerts",
}

ACCESS: dict[str, Access] = {
    # The REST API and the webhook ingress: everything a user can change, sealing/unsealing
    # webhook secrets, large bodies to S3, eager dispatch to the queue. Not the root key:
    # the authorizer checks keys.
    # Tenants' quota usage is an item in the ledger table (services/quotas.py).
    "api_handler": Access(
        read=("heartbeats",),  # health (a trigger view's budget reads the ledger, written below)
        write=(
            "triggers",
            "states",
            "runs",
            "events",
            "audit",
            "keys",
            "deliveries",
            "ledger",
            "alerts",
        ),
        send=True,
        send_alerts=True,  # a person's pause; a policy's test
        queue_depths=True,
        payloads=("s3:PutObject", "s3:DeleteObject"),  # a duplicate's body is deleted
        kms=("kms:Encrypt", "kms:Decrypt"),
        params=("switch",),
        source_rules=True,  # eventbridge/s3/email triggers: their rule, made on create
        run_logs=True,  # GET /v1/runs/{id}/logs: a Logs Insights query on the run's id
    ),
    # The API's custom authorizer: look a key up by id (its hash), or compare the root key.
    "authorizer": Access(read=("keys",), params=("root_key",)),
    # Find due, claim, enqueue, reap, sweep pending events. A reaped run's budget hold is
    # charged (ledger); never states, keys or the audit log.
    "heartbeat": Access(
        write=("triggers", "runs", "events", "ledger", "heartbeats"),
        send=True,
        send_alerts=True,  # a lost run; each tick's request for the alert sweep
        params=("switch",),
        send_ticks=True,
    ),
    # A fanned-out tick's shard: what the heartbeat does for one shard (find due, enqueue,
    # move the shard's cursor, reap); no sweep, no tick record (heartbeats).
    "enqueuer": Access(
        write=("triggers", "runs", "events", "ledger"),
        send=True,
        send_alerts=True,  # a lost run
        params=("switch",),
        consume_ticks=True,
    ),
    # Start, run, settle; budgets, locks, secrets for workflows, Lambda targets.
    "runner": Access(
        read=("keys",),
        write=("triggers", "states", "runs", "events", "ledger", "audit", "locks"),
        send=True,
        send_alerts=True,  # a run's transitions (failed, recovered, disabled, budget)
        consume=True,
        payloads=("s3:GetObject",),
        kms=("kms:Decrypt",),
        params=("switch", "secrets"),
        secrets_manager=True,
        invoke_workflows=True,
    ),
    # Custom::CronhookTrigger (services/trigger_resource.py): create, update and delete a
    # trigger through the API's code. The trigger and its key reservation, the first state,
    # the quota (ledger), the audit; sealing and reading a webhook secret; a first slot
    # inside a window the heartbeat already sent is enqueued. Not the delivered sources'
    # rules nor large payloads (S3): those are declared through the API or apply.
    "trigger_provider": Access(
        write=("triggers", "states", "audit", "ledger"),
        send=True,
        kms=("kms:Encrypt", "kms:Decrypt"),
    ),
    # Delivered events (EventBridge rules, SES mail): store, dedupe, dispatch, like ingress.
    "ingest": Access(
        write=("triggers", "events"),
        send=True,
        payloads=("s3:PutObject", "s3:DeleteObject"),  # a large event body, a duplicate's
        params=("switch",),
        ingest=True,
        send_alerts=True,  # an expired trigger, a source gone
    ),
    # Alerts, off the fire path: notifications, digests, the lifecycle bus.
    "alerts": Access(
        read=("triggers", "states", "events"),
        write=("alerts",),
        kms=("kms:Decrypt",),  # Slack URLs and webhook signing secrets
        alerts=True,
        send_alerts=True,  # a digest's flush, delayed to its minute's end
    ),
}


def role_logical_id(function: str) -> str:
    """``runner`` -> ``RunnerRole``."""
    return FUNCTIONS[function] + "Role"
