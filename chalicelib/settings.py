"""The one reader of environment variables.

Settings are built lazily and cached: ``chalice.test.Client`` sets config env vars only
during each call, so nothing here may run at import time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "Settings",
    "get_settings",
    "reset_settings",
    "queue_visibility_s",
    "claim_lease_s",
    "default_lookahead_s",
]

# The fire queue's visibility timeout and a claim's lease, from one setting: the runner's
# timeout (docs/deploy.md, "The queue's visibility timeout and the lease"). The
# visibility outlasts a run (a message is never delivered twice while its run is live;
# AWS refuses a mapping whose queue's visibility is below the function's timeout); a
# message whose invocation died before starting it (crash, throttle) comes back while its
# claim still holds, so the retry runs instead of being reaped as lost.
VISIBILITY_MARGIN_S = 30


def queue_visibility_s(runner_timeout_s: int) -> int:
    """The fire queue's visibility timeout: the runner's timeout plus a margin."""
    return runner_timeout_s + VISIBILITY_MARGIN_S


# How far past one heartbeat period a tick sends slots (``default_lookahead_s``).
LOOKAHEAD_MARGIN_S = 30


def default_lookahead_s(heartbeat_s: int) -> int:
    """A tick sends the slots up to this far ahead: one heartbeat period and a margin.

    With the lookahead equal to the period, a slot just after a tick is sent by that tick,
    after its reads and the sends before it, and a tick that comes late (EventBridge's
    ``rate(1 minute)`` fires somewhere within the minute) leaves a gap of slots sent
    after their second. With the period plus a margin (30 s, or the period if that is
    shorter), each slot in steady state was sent by the tick before, at least the margin
    before its second (60 s heartbeat: 90 s, a slot sent 30 to 90 s early).
    """
    period = max(1, heartbeat_s)
    return period + min(LOOKAHEAD_MARGIN_S, period)


def claim_lease_s(runner_timeout_s: int, lookahead_s: int) -> int:
    """How long a claim is owned: the longest a message waits (its delay, up to the
    lookahead), one delivery that dies un-started (the visibility), then the margin."""
    return lookahead_s + queue_visibility_s(runner_timeout_s) + VISIBILITY_MARGIN_S


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def _flag(name: str, default: bool) -> bool:
    raw = (os.environ.get(name) or "").strip().lower()
    if not raw:
        return default
    return raw in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    """Everything cronhook reads from its environment."""

    stage: str = "local"
    region: str = "us-east-1"
    endpoint_url: str | None = None
    lambda_endpoint_url: str | None = None  # lambda: targets (tests: a local Invoke API)
    table_prefix: str = "cronhook-local-"
    queue_url: str | None = None
    bucket: str | None = None
    kms_key_id: str | None = None
    root_key: str | None = None
    root_key_param: str | None = None
    switch_param: str | None = None
    public_url: str = "http://127.0.0.1:8000"
    min_interval_s: int = 60
    # Standing rows in the due index (store/triggers.py, rules.stands): on by default;
    # CRONHOOK_STANDING_ROWS=0 keys every schedule on its next slot (docs/architecture.md).
    standing_rows: bool = True
    max_concurrency: int = 5
    heartbeat_s: int = 60
    lookahead_s: int = 90  # default_lookahead_s(heartbeat_s)
    runner_timeout_s: int = 300
    due_shards: int = 4
    # Threads claiming due rows in one tick (a claim is one conditional write round trip).
    heartbeat_workers: int = 8
    run_retention_days: int = 30
    event_retention_days: int = 7
    inline_body_limit: int = 100_000
    # Modules of the team's own workflows, imported before any workflow is looked up:
    # dotted names or paths of .py files (CRONHOOK_WORKFLOW_MODULES, comma-separated).
    workflow_modules: tuple[str, ...] = ()
    # Events of one trigger waiting for a slot; a delivery past it is 429 quota, not stored.
    max_waiting_events: int = 1000
    # Delivered event sources (chalicelib/sources): where EventBridge rules send, where
    # SES stores mail and notifies, and whether the API may wire a bucket (local stack).
    ingest_queue_arn: str | None = None
    ingest_queue_url: str | None = None
    mail_bucket: str | None = None
    mail_topic_arn: str | None = None
    ses_rule_set: str | None = None
    wire_buckets: bool = False
    # http: targets may reach private addresses and plain http (local and test stages only).
    allow_private_targets: bool = False
    # The built-in echo/fail/sleep workflows (on in the local stack and tests only).
    builtin_workflows: bool = False
    # Per-tenant quotas (429 quota): triggers, API keys, and the sum of its triggers'
    # concurrency (the most runs it can have in flight at once).
    quota_triggers: int = 500
    quota_keys: int = 50
    quota_runs_in_flight: int = 1000
    # lambda: targets are invoked under this role, assumed with the tenant as a session tag
    # (the template sets it; the local and test stages default to a name in the embedded AWS).
    target_role_arn: str | None = None
    # Local gateway: /hooks requests per source IP per minute (0: no limit; AWS: WAF).
    hooks_per_ip_per_min: int = 0
    # Heartbeat fan-out (services/heartbeat/fanout.py): from this many due shards up, the
    # heartbeat sends one message per shard to the tick queue and an enqueuer reads each
    # (0: never; every shard is read in the heartbeat's own invocation).
    fanout_shards: int = 0
    tick_queue_url: str | None = None
    # sqs:/sns:/states:/events: targets beyond the tenant's own cronhook-<stage>-<tenant>-*
    # resources: the stack parameter TargetArns (ARNs, "*" allowed), CRONHOOK_TARGET_ARNS.
    target_arns: tuple[str, ...] = ()
    # github: targets: the REST API's base URL (tests: a local fake), how long a dispatch
    # may take to show up as a run, and how often to look.
    github_api_url: str = "https://api.github.com"
    github_confirm_s: float = 60.0
    github_poll_s: float = 2.0
    # Alerts (services/alerts): the queue that carries transitions off the fire path, the
    # bus lifecycle events go to, the SES sender, the SNS topics a channel may name
    # (empty: any; the template lists them), and where local email is written.
    alerts_queue_url: str | None = None
    lifecycle_bus: str = "default"
    alert_sender: str | None = None
    alert_topic_arns: tuple[str, ...] = ()
    outbox_dir: str = ".cronhook/outbox"
    # The local stack's own log, as JSON lines (``GET /v1/runs/{id}/logs`` reads it there).
    log_file: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def lease_s(self) -> int:
        """How long a claim is owned (``claim_lease_s``: one derivation with the queue)."""
        return claim_lease_s(self.runner_timeout_s, self.lookahead_s)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Read the environment once (per process, or until ``reset_settings``)."""
    env = os.environ.get
    heartbeat_s = _int("CRONHOOK_HEARTBEAT_S", 60)
    return Settings(
        stage=env("CRONHOOK_STAGE", "local"),
        region=env("AWS_REGION") or env("AWS_DEFAULT_REGION") or "us-east-1",
        endpoint_url=env("CRONHOOK_AWS_ENDPOINT") or None,
        lambda_endpoint_url=env("CRONHOOK_LAMBDA_ENDPOINT") or None,
        table_prefix=env("CRONHOOK_TABLE_PREFIX", "cronhook-local-"),
        queue_url=env("CRONHOOK_QUEUE_URL") or None,
        bucket=env("CRONHOOK_BUCKET") or None,
        kms_key_id=env("CRONHOOK_KMS_KEY_ID") or None,
        root_key=env("CRONHOOK_API_KEY") or None,
        root_key_param=env("CRONHOOK_ROOT_KEY_PARAM") or None,
        switch_param=env("CRONHOOK_SWITCH_PARAM") or None,
        public_url=env("CRONHOOK_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/"),
        min_interval_s=_int("CRONHOOK_MIN_INTERVAL_S", 60),
        standing_rows=env("CRONHOOK_STANDING_ROWS") not in ("0", "false", "no", "off"),
        max_concurrency=_int("CRONHOOK_MAX_CONCURRENCY", 5),
        heartbeat_s=heartbeat_s,
        lookahead_s=_int("CRONHOOK_LOOKAHEAD_S", default_lookahead_s(heartbeat_s)),
        runner_timeout_s=_int("CRONHOOK_RUNNER_TIMEOUT_S", 300),
        due_shards=_int("CRONHOOK_DUE_SHARDS", 4),
        heartbeat_workers=max(1, _int("CRONHOOK_HEARTBEAT_WORKERS", 8)),
        run_retention_days=_int("CRONHOOK_RUN_RETENTION_DAYS", 30),
        event_retention_days=_int("CRONHOOK_EVENT_RETENTION_DAYS", 7),
        workflow_modules=tuple(
            m.strip() for m in env("CRONHOOK_WORKFLOW_MODULES", "").split(",") if m.strip()
        ),
        max_waiting_events=max(1, _int("CRONHOOK_MAX_WAITING_EVENTS", 1000)),
        ingest_queue_arn=env("CRONHOOK_INGEST_QUEUE_ARN") or None,
        ingest_queue_url=env("CRONHOOK_INGEST_QUEUE_URL") or None,
        mail_bucket=env("CRONHOOK_MAIL_BUCKET") or None,
        mail_topic_arn=env("CRONHOOK_MAIL_TOPIC_ARN") or None,
        ses_rule_set=env("CRONHOOK_SES_RULE_SET") or None,
        wire_buckets=env("CRONHOOK_WIRE_BUCKETS") == "1",
        allow_private_targets=_flag("CRONHOOK_ALLOW_PRIVATE_TARGETS", False),
        builtin_workflows=_flag(
            "CRONHOOK_BUILTIN_WORKFLOWS", env("CRONHOOK_STAGE", "local") in ("local", "test")
        ),
        quota_triggers=_int("CRONHOOK_QUOTA_TRIGGERS", 500),
        quota_keys=_int("CRONHOOK_QUOTA_KEYS", 50),
        quota_runs_in_flight=_int("CRONHOOK_QUOTA_RUNS_IN_FLIGHT", 1000),
        target_role_arn=env("CRONHOOK_TARGET_ROLE_ARN") or _local_target_role(),
        hooks_per_ip_per_min=max(0, _int("CRONHOOK_HOOKS_PER_IP_PER_MIN", 0)),
        fanout_shards=max(0, _int("CRONHOOK_FANOUT_SHARDS", 0)),
        tick_queue_url=env("CRONHOOK_TICK_QUEUE_URL") or None,
        target_arns=tuple(
            a.strip() for a in env("CRONHOOK_TARGET_ARNS", "").split(",") if a.strip()
        ),
        github_api_url=env("CRONHOOK_GITHUB_API_URL", "https://api.github.com").rstrip("/"),
        github_confirm_s=float(env("CRONHOOK_GITHUB_CONFIRM_S") or 60),
        github_poll_s=float(env("CRONHOOK_GITHUB_POLL_S") or 2),
        **_alert_settings(),
        log_file=env("CRONHOOK_LOG_FILE") or None,
    )


def _alert_settings() -> dict:
    """The alerts' settings (``services/alerts``), read with the rest."""
    env = os.environ.get
    return {
        "alerts_queue_url": env("CRONHOOK_ALERTS_QUEUE_URL") or None,
        "lifecycle_bus": env("CRONHOOK_LIFECYCLE_BUS") or "default",
        "alert_sender": env("CRONHOOK_ALERT_SENDER") or None,
        "alert_topic_arns": tuple(
            a.strip() for a in env("CRONHOOK_ALERT_TOPIC_ARNS", "").split(",") if a.strip()
        ),
        "outbox_dir": os.path.join(env("CRONHOOK_DATA_DIR") or ".cronhook", "outbox"),
    }


def _local_target_role() -> str | None:
    """The target-invoke role in the embedded AWS (moto's account), for local and test."""
    stage = os.environ.get("CRONHOOK_STAGE", "local")
    if stage not in ("local", "test"):
        return None
    return f"arn:aws:iam::123456789012:role/cronhook-{stage}-target-invoke"


def reset_settings() -> None:
    """Forget the cached settings (tests, and the local stack after it sets endpoints)."""
    get_settings.cache_clear()


# Read when app.py is imported by `chalice package`: the runner's event source mapping
# gets it as ScalingConfig.MaximumConcurrency (the job ceiling). AWS's minimum is 2.
RUNNER_MAX_CONCURRENCY = max(2, int(os.environ.get("CRONHOOK_MAX_CONCURRENCY") or 5))

# The enqueuers' event source mapping (fan-out): one environment per due shard of a tick,
# up to the most shards a stack may name (infra/template.py, DueShards' MaxValue).
ENQUEUER_MAX_CONCURRENCY = 32
