"""cronhook: Chalice wiring only. The authorizer, the routes' blueprints (one per resource,
``chalicelib/routes/``), the error-shape middleware, the heartbeat schedule, the queue
consumers and the CloudFormation trigger provider."""

from __future__ import annotations

from chalice import Chalice, Rate

from chalicelib import wiring
from chalicelib.routes import (
    alerts,
    audit,
    by_key,
    calendar,
    console,
    events,
    hooks,
    keys,
    runs,
    service,
    triggers,
    workflows,
)
from chalicelib.settings import ENQUEUER_MAX_CONCURRENCY, RUNNER_MAX_CONCURRENCY

app = Chalice(app_name="cronhook")
app.api.cors = False


@app.authorizer(name="authorizer", ttl_seconds=0)
def api_key(auth_request):
    """Every /v1 route but the OpenAPI document: ``Authorization: Bearer <key>``."""
    return wiring.authorize(auth_request)


# After the authorizer: each route with a role gets it (chalicelib/routes/resource.py).
BLUEPRINTS = (
    service,
    triggers,
    calendar,
    by_key,
    runs,
    workflows,
    audit,
    keys,
    hooks,
    events,
    console,
    alerts,
)
for resource in BLUEPRINTS:
    app.register_blueprint(resource.bp)


@app.middleware("http")
def contract_errors(event, get_response):
    return wiring.contract_error_shape(get_response(event))


@app.schedule(Rate(1, unit=Rate.MINUTES), name="heartbeat")
def heartbeat(event):
    wiring.heartbeat_once()


@app.on_sqs_message(
    queue="cronhook-fires", batch_size=10, name="runner", maximum_concurrency=RUNNER_MAX_CONCURRENCY
)
def runner(event):
    return wiring.handle_sqs_batch(event.to_dict(), event.context)


@app.on_sqs_message(
    queue="cronhook-ticks",
    batch_size=1,
    name="enqueuer",
    maximum_concurrency=ENQUEUER_MAX_CONCURRENCY,
)
def enqueuer(event):
    """A fanned-out heartbeat tick: one due shard per message (services/heartbeat/fanout.py)."""
    return wiring.handle_tick_batch(event.to_dict(), event.context)


@app.on_sqs_message(queue="cronhook-ingest", batch_size=10, name="ingest")
def ingest(event):
    """EventBridge rules (eventbridge, s3) and SES mail (email) deliver here."""
    return wiring.handle_ingest_batch(event.to_dict())


@app.on_sqs_message(queue="cronhook-alerts", batch_size=10, name="alerts")
def alerts_worker(event):
    """Lifecycle transitions, digest flushes and test sends (chalicelib/services/alerts)."""
    return wiring.handle_alerts_batch(event.to_dict())


@app.lambda_function(name="trigger_provider")
def trigger_provider(event, context):
    """``Custom::CronhookTrigger`` in any stack of the account (service token
    ``CronhookTriggerProvider``): create, update, delete a trigger; answer CloudFormation."""
    return wiring.handle_trigger_resource(event)
