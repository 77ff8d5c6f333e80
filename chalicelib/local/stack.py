"""The local stack behind ``make run``: embedded AWS, the API, a heartbeat timer, a runner pool.

- AWS is a moto server in a process of its own (``embedded_aws``: it does not share the
  interpreter lock with the runners) on ``CRONHOOK_AWS_PORT`` (4566), so ``aws
  --endpoint-url http://127.0.0.1:4566`` and boto3 drive it; tables, queue (+DLQ),
  bucket and KMS key are created from the same definitions as production. It stops
  with the stack (Ctrl-C, SIGTERM, or the stack's death).
- The Chalice app is served over HTTP through Chalice's own local gateway, with a
  request handler that also reads chunked bodies (``chalice local`` drops them).
- The heartbeat is called every ``CRONHOOK_HEARTBEAT_S``, on the period's boundary.
- ``CRONHOOK_MAX_CONCURRENCY`` runner threads poll SQS like Lambda's event source
  mapping (batches of 10, a visibility timeout) and share the ceiling fairly among
  tenants as SQS fair queues do (``fairness``): each runs one message at a time, the
  oldest of the tenant with the fewest runs in progress.
- Triggers survive a restart: the embedded AWS saves the tables to
  ``$CRONHOOK_DATA_DIR/tables.json`` after every tick (asked by a signal, off the tick's
  path) and as it stops, and the stack loads them on start. Queued messages do not survive;
  claims that were in flight are released (not started) or recorded ``lost`` (started).
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chalicelib.local.fairness import FairBuffer

__all__ = ["LocalStack", "main"]


@dataclass
class StackConfig:
    port: int = 8000
    host: str = "127.0.0.1"
    aws_port: int = 4566
    smtp_port: int = 2525
    heartbeat_s: int = 60
    max_concurrency: int = 5
    min_interval_s: int = 60
    data_dir: Path = Path(".cronhook")
    api_key: str | None = None
    persist: bool = True

    @classmethod
    def from_env(cls) -> StackConfig:
        env = os.environ.get
        return cls(
            port=int(env("CRONHOOK_PORT") or 8000),
            aws_port=int(env("CRONHOOK_AWS_PORT") or 4566),
            smtp_port=int(env("CRONHOOK_SMTP_PORT") or 2525),
            heartbeat_s=int(env("CRONHOOK_HEARTBEAT_S") or 60),
            max_concurrency=int(env("CRONHOOK_MAX_CONCURRENCY") or 5),
            min_interval_s=int(env("CRONHOOK_MIN_INTERVAL_S") or 60),
            data_dir=Path(env("CRONHOOK_DATA_DIR") or ".cronhook"),
            api_key=env("CRONHOOK_API_KEY") or None,
        )


class LocalStack:
    """Everything ``make run`` starts, as one object with ``start`` and ``stop``."""

    def __init__(self, config: StackConfig):
        self.config = config
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []
        self.aws: Any = None
        self.mail: Any = None
        self.ingest_url = ""
        self.http: Any = None
        self.api_key = ""
        self.queue_url = ""
        self.fair = FairBuffer(ceiling=max(1, config.max_concurrency))
        self.dlq_url = ""

    # -- embedded AWS -------------------------------------------------------------

    def _start_aws(self) -> None:
        from chalicelib.local.embedded_aws import EmbeddedAws

        self.aws = EmbeddedAws(
            host="127.0.0.1",
            port=self.config.aws_port,
            save_to=self._state_file() if self.config.persist else None,
            keyring=self.config.data_dir if self.config.persist else None,
            table_prefix="cronhook-local-",
        )
        self.aws.start()
        atexit.register(self.aws.stop)  # a crash of this process must not orphan it
        endpoint = self.aws.endpoint
        os.environ.update(
            {
                "AWS_ACCESS_KEY_ID": "local",
                "AWS_SECRET_ACCESS_KEY": "local",
                "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
                "CRONHOOK_AWS_ENDPOINT": endpoint,
                "CRONHOOK_STAGE": "local",
                "CRONHOOK_TABLE_PREFIX": "cronhook-local-",
                "CRONHOOK_PUBLIC_URL": f"http://{self.config.host}:{self.config.port}",
                "CRONHOOK_MIN_INTERVAL_S": str(self.config.min_interval_s),
                "CRONHOOK_MAX_CONCURRENCY": str(self.config.max_concurrency),
                "CRONHOOK_HEARTBEAT_S": str(self.config.heartbeat_s),
                "CRONHOOK_LOOKAHEAD_S": str(self.config.heartbeat_s),
            }
        )
        os.environ.pop("AWS_PROFILE", None)
        from chalicelib.settings import reset_settings
        from chalicelib.store.aws import client, reset_clients

        reset_settings()
        reset_clients()
        sqs = client("sqs")
        self.dlq_url = sqs.create_queue(QueueName="cronhook-fires-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=self.dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.queue_url = sqs.create_queue(
            QueueName="cronhook-fires",
            Attributes={
                "VisibilityTimeout": "360",
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}
                ),
            },
        )["QueueUrl"]
        client("s3").create_bucket(Bucket="cronhook-local-payloads")
        if self.config.persist:
            # The embedded AWS made the key with the material kept in the data dir (the
            # same key as before a restart: secrets sealed then still open).
            from chalicelib.local.keyring import saved_key_id

            key_id = saved_key_id(self.config.data_dir)
        else:
            key_id = client("kms").create_key(Description="cronhook local secrets")["KeyMetadata"][
                "KeyId"
            ]
        os.environ.update(
            {
                "CRONHOOK_QUEUE_URL": self.queue_url,
                "CRONHOOK_BUCKET": "cronhook-local-payloads",
                "CRONHOOK_KMS_KEY_ID": key_id,
            }
        )
        os.environ.update(self._start_sources_aws())
        # Claimer threads overlap network waits; here "DynamoDB" is one moto process that
        # serialises every write (moto_atomic): extra claimers only queue behind each
        # other and compete with the runners for this process. One unless told otherwise.
        os.environ.setdefault("CRONHOOK_HEARTBEAT_WORKERS", "1")
        # echo, fail and sleep, for trying things out (off in deployed stages).
        os.environ.setdefault("CRONHOOK_BUILTIN_WORKFLOWS", "1")
        self._ensure_api_key()
        reset_settings()
        from chalicelib import wiring
        from chalicelib.store.models import create_tables

        wiring.ready()
        create_tables(wait=False)
        self._load()
        self._rewire_sources()

    def _start_sources_aws(self) -> dict[str, str]:
        """The ingest queue, mail bucket and topic, and SES rule set of the delivered sources."""
        from chalicelib.store.aws import client

        sqs = client("sqs")
        self.ingest_url = sqs.create_queue(
            QueueName="cronhook-ingest", Attributes={"VisibilityTimeout": "60"}
        )["QueueUrl"]
        ingest_arn = sqs.get_queue_attributes(
            QueueUrl=self.ingest_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        client("s3").create_bucket(Bucket="cronhook-local-mail")
        sns = client("sns")
        topic = sns.create_topic(Name="cronhook-local-mail")["TopicArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=ingest_arn)
        ses = client("ses")
        ses.create_receipt_rule_set(RuleSetName="cronhook-local")
        ses.set_active_receipt_rule_set(RuleSetName="cronhook-local")
        return {
            "CRONHOOK_INGEST_QUEUE_URL": self.ingest_url,
            "CRONHOOK_INGEST_QUEUE_ARN": ingest_arn,
            "CRONHOOK_MAIL_BUCKET": "cronhook-local-mail",
            "CRONHOOK_MAIL_TOPIC_ARN": topic,
            "CRONHOOK_SES_RULE_SET": "cronhook-local",
            # The embedded AWS's buckets are the stack's own: a trigger may wire them.
            "CRONHOOK_WIRE_BUCKETS": "1",
        }

    def _rewire_sources(self) -> None:
        """Rules and receipt rules live in the embedded AWS, not the tables: make them again."""
        from chalicelib.sources.wiring import rewire_all

        for trigger_id, problem in rewire_all():
            print(
                f"trigger {trigger_id}: its event source is not wired: {problem}", file=sys.stderr
            )

    def _ensure_api_key(self) -> None:
        key = self.config.api_key
        key_file = self.config.data_dir / "api_key"
        if not key:
            if key_file.exists():
                key = key_file.read_text().strip()
            else:
                key = "chr_" + secrets.token_urlsafe(24)
                self.config.data_dir.mkdir(parents=True, exist_ok=True)
                key_file.write_text(key + "\n")
                key_file.chmod(0o600)
        self.api_key = key
        os.environ["CRONHOOK_API_KEY"] = key

    # -- persistence ------------------------------------------------------------------

    def _state_file(self) -> Path:
        return self.config.data_dir / "tables.json"

    def save(self) -> None:
        """Ask the embedded AWS to write every table to the data dir (it saves; no wait here)."""
        if self.aws is not None:
            self.aws.request_save()

    def _load(self) -> None:
        if not self.config.persist or not self._state_file().exists():
            return
        from chalicelib.local.embedded_aws import item_for_boto3
        from chalicelib.store.aws import client

        ddb = client("dynamodb")
        data = json.loads(self._state_file().read_text())
        existing = set(ddb.list_tables()["TableNames"])
        for name, items in data.get("tables", {}).items():
            if name not in existing:
                print(f"not loading {name}: no such table any more", file=sys.stderr)
                continue
            for start in range(0, len(items), 25):
                chunk = [
                    {"PutRequest": {"Item": item_for_boto3(it)}} for it in items[start : start + 25]
                ]
                ddb.batch_write_item(RequestItems={name: chunk})
        self._recover_claims()

    def _recover_claims(self) -> None:
        """After a restart the queue is empty: release unstarted claims, reap started ones."""
        from chalicelib.assembly import reap_expired
        from chalicelib.services.heartbeat import refresh_due
        from chalicelib.settings import get_settings
        from chalicelib.store import dynamo
        from chalicelib.store.models import TriggerModel

        now = datetime.now(UTC)
        # The heartbeat's cursors say which slots were sent; the messages died with the
        # old queue, so forget them: the first tick sends every due slot again.
        for shard in range(get_settings().due_shards):
            cursor = dynamo.get_cursor(str(shard))
            if cursor is not None:
                dynamo.advance_cursor(str(shard), expected=cursor, cursor_ms=None)
        for item in TriggerModel.scan():
            in_flight = dynamo.in_flight_of(item)
            if not in_flight:
                continue
            for run_id, entry in in_flight.items():
                if not int(entry.get("s", 0)):
                    slot = entry.get("t") if entry.get("k", "s") == "s" else None
                    dynamo.release_claim(
                        item.id,
                        run_id=run_id,
                        slot_ms=int(slot) if slot is not None else None,
                        shard=dynamo.shard_of(item.id, get_settings().due_shards),
                    )
            fresh = dynamo.get_trigger(item.id)
            if fresh is not None:
                # Every run that had started died with the old process.
                reap_expired(fresh, now=now, reap_all=True)
                refresh_due(dynamo.get_trigger(item.id), now=now)

    # -- the API ---------------------------------------------------------------------

    def _start_http(self) -> None:
        from chalicelib.local.http import serve

        self.http = serve(self.config.host, self.config.port)
        thread = threading.Thread(target=self.http.serve_forever, name="http", daemon=True)
        thread.start()
        self.threads.append(thread)

    # -- heartbeat and runners ---------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        from chalicelib import wiring

        period = max(1, self.config.heartbeat_s)
        while not self.stop_event.is_set():
            # Tick on the period's boundary (on the minute for 60 s), like EventBridge.
            wait = period - (time.time() % period)
            if self.stop_event.wait(wait):
                break
            try:
                wiring.heartbeat_once()
            except Exception as exc:  # keep ticking; the next tick retries
                print(f"heartbeat failed: {exc!r}", file=sys.stderr)
            # Off the tick's path: a signal; the embedded AWS snapshots its own tables.
            self.save()

    def _poller_loop(self) -> None:
        """Receive fire messages into the fair buffer, as Lambda's pollers do in AWS."""
        from chalicelib.settings import get_settings
        from chalicelib.store.aws import client

        sqs = client("sqs")
        visibility = get_settings().runner_timeout_s + 60
        fair = self.fair
        while not self.stop_event.is_set():
            for held in fair.to_extend(every_s=visibility / 2):
                self._set_visibility(sqs, held.message, visibility)
            if fair.full():
                fair.wait(_IDLE_POLL_S)
                continue
            try:
                answer = sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=0,
                    VisibilityTimeout=visibility,
                    AttributeNames=["All"],
                )
            except Exception as exc:
                if self.stop_event.is_set():
                    break
                print(f"receive failed: {exc!r}", file=sys.stderr)
                time.sleep(1)
                continue
            messages = answer.get("Messages", [])
            for message in messages:
                fair.add(_tenant_of(message), message)
            if not messages:
                self.stop_event.wait(_IDLE_POLL_S)

    def _runner_loop(self) -> None:
        """One runner of the pool: one message at a time, the fairest one waiting.

        The next message is the oldest of the tenant with the fewest runs in progress
        (``local/fairness.py``), as SQS fair queues do in AWS.
        """
        from chalicelib import wiring
        from chalicelib.settings import get_settings
        from chalicelib.store.aws import client

        sqs = client("sqs")
        timeout_s = get_settings().runner_timeout_s
        fair = self.fair
        while not self.stop_event.is_set():
            held = fair.take()
            if held is None:
                fair.wait(_IDLE_POLL_S)
                continue
            message = held.message
            event = {"Records": [_lambda_record(message, self.queue_url)]}
            try:
                result = wiring.handle_sqs_batch(event, InvocationContext(timeout_s))
                failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            except Exception as exc:
                print(f"runner batch failed: {exc!r}", file=sys.stderr)
                failed = {message["MessageId"]}
            finally:
                fair.done(held.tenant)
            if message["MessageId"] not in failed:
                try:
                    sqs.delete_message(
                        QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
                except Exception as exc:  # delivered again later; the start fence drops it
                    print(f"delete failed: {exc!r}", file=sys.stderr)

    def _set_visibility(self, sqs: Any, message: dict, seconds: int) -> None:
        try:
            sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=seconds,
            )
        except Exception as exc:  # it comes back when its visibility timeout ends
            print(f"extending a held message failed: {exc!r}", file=sys.stderr)

    def _ingest_loop(self) -> None:
        """The ingest queue's consumer, as Lambda's event source mapping would run it."""
        from chalicelib import wiring
        from chalicelib.store.aws import client

        sqs = client("sqs")
        while not self.stop_event.is_set():
            try:
                answer = sqs.receive_message(
                    QueueUrl=self.ingest_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
                )
            except Exception as exc:
                if self.stop_event.is_set():
                    break
                print(f"ingest receive failed: {exc!r}", file=sys.stderr)
                self.stop_event.wait(1)
                continue
            messages = answer.get("Messages", [])
            if not messages:
                self.stop_event.wait(_IDLE_POLL_S)
                continue
            event = {"Records": [_lambda_record(m, self.ingest_url) for m in messages]}
            try:
                result = wiring.handle_ingest_batch(event)
                failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            except Exception as exc:
                print(f"ingest batch failed: {exc!r}", file=sys.stderr)
                failed = {m["MessageId"] for m in messages}
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                sqs.delete_message_batch(
                    QueueUrl=self.ingest_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                        for i, m in enumerate(done)
                    ],
                )

    def _watch_loop(self) -> None:
        from chalicelib.local.watch import run_watches

        run_watches(self.config.data_dir, self.stop_event)

    def _start_mail(self) -> None:
        from chalicelib.local.smtp import MailListener

        try:
            self.mail = MailListener("127.0.0.1", self.config.smtp_port)
            self.mail.start()
        except Exception as exc:
            self.mail = None
            raise RuntimeError(
                f"cannot listen for mail on 127.0.0.1:{self.config.smtp_port} ({exc});"
                " set CRONHOOK_SMTP_PORT to a free port"
            ) from None

    def start(self) -> None:
        """Start AWS, the API, the heartbeat timer and the runner pool."""
        self._start_aws()
        self._start_mail()
        self._start_http()
        for target, name in ((self._ingest_loop, "ingest"), (self._watch_loop, "watch")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self.threads.append(thread)
        beat = threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True)
        beat.start()
        self.threads.append(beat)
        poller = threading.Thread(target=self._poller_loop, name="runner-poller", daemon=True)
        poller.start()
        self.threads.append(poller)
        for n in range(self.config.max_concurrency):
            worker = threading.Thread(target=self._runner_loop, name=f"runner-{n}", daemon=True)
            worker.start()
            self.threads.append(worker)

    def stop(self) -> None:
        """Stop everything and save the tables."""
        self.stop_event.set()
        if self.http is not None:
            self.http.shutdown()
            self.http.server_close()
        if self.mail is not None:
            self.mail.stop()
        # One shared deadline: a runner in the middle of a run gets a few seconds to
        # settle; whatever is still running after that is recorded lost on the next start.
        deadline = time.monotonic() + 10
        for thread in self.threads:
            if thread.name.startswith(("runner", "heartbeat", "ingest", "watch")):
                thread.join(timeout=max(0.1, deadline - time.monotonic()))
        # The embedded AWS saves the tables as it stops (SIGTERM), after the runners settled.
        if self.aws is not None:
            self.aws.stop()


# Short polls, not long polls: moto's long poll wakes for a new message but not for a
# delayed one becoming visible, so a fire sent with DelaySeconds would wait out the poll
# (up to a second or two late). AWS's long poll does wake; Lambda's pollers do it there.
_IDLE_POLL_S = 0.2


def _tenant_of(message: dict) -> str:
    """The tenant a received fire message belongs to (its message group)."""
    group = (message.get("Attributes") or {}).get("MessageGroupId")
    if group:
        return str(group)
    try:
        from chalicelib.store.sqs import FireMessage

        return FireMessage.parse(message["Body"]).tenant or ""
    except (KeyError, ValueError, TypeError):
        return ""


class InvocationContext:
    """The part of Lambda's context the runner reads: the time left in the invocation.

    Each batch gets the runner's timeout (``CRONHOOK_RUNNER_TIMEOUT_S``), as a Lambda
    invocation does, so a batch of slow workflows hands its later messages back to the
    queue here as it would in AWS (nothing kills a local batch that runs over, though).
    """

    def __init__(self, timeout_s: float, *, clock: Any = time.monotonic):
        self._clock = clock
        self._deadline = clock() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self._clock()) * 1000))


def _lambda_record(message: dict, queue_url: str) -> dict:
    """An SQS message in the shape Lambda's event source mapping delivers it."""
    attributes = message.get("Attributes", {})
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
            "SentTimestamp": attributes.get("SentTimestamp", "0"),
            "SenderId": attributes.get("SenderId", "local"),
            "ApproximateFirstReceiveTimestamp": attributes.get(
                "ApproximateFirstReceiveTimestamp", "0"
            ),
        },
        "messageAttributes": {},
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:" + queue_url.rsplit("/", 1)[-1],
        "awsRegion": "us-east-1",
    }


def main() -> None:
    """``make run``: start the stack, print the key and a curl example, run until Ctrl-C."""
    config = StackConfig.from_env()
    stack = LocalStack(config)
    # The handler only records the signal: taking a lock in a signal handler (Event.set)
    # can deadlock with the same lock held by the interrupted main thread (Event.wait).
    stop_requested: list[int] = []

    def _stop(signum: int, frame: Any) -> None:
        stop_requested.append(signum)

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        stack.start()
    except BaseException:
        stack.stop()  # never leave the embedded AWS behind
        raise
    base = f"http://{config.host}:{config.port}"
    aws = f"http://127.0.0.1:{config.aws_port}"
    print(
        f"""
cronhook is running on {base}
  API key (root, tenant 'local'): {stack.api_key}
  data: {config.data_dir}/   heartbeat: every {config.heartbeat_s}s   runners: {config.max_concurrency}

Try it:
  export CRONHOOK_API_KEY={stack.api_key}
  curl -s -X POST {base}/v1/triggers -H "Authorization: Bearer $CRONHOOK_API_KEY" \\
       -H 'Content-Type: application/json' \\
       -d '{{"workflow": "echo", "schedule": {{"interval_s": 60}}, "state": {{"count": 0}}}}'
  curl -s {base}/v1/runs -H "Authorization: Bearer $CRONHOOK_API_KEY"

Inbound mail for email triggers: SMTP on 127.0.0.1:{config.smtp_port}
Embedded AWS (any credentials, region us-east-1): {aws}
  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_DEFAULT_REGION=us-east-1 \\
    aws --endpoint-url {aws} sqs list-queues

Ctrl-C stops it; triggers are kept in {config.data_dir}/tables.json.
""",
        flush=True,
    )
    while not stop_requested:
        time.sleep(0.2)
    print("stopping...", flush=True)
    stack.stop()
    print("stopped; state saved.", flush=True)


if __name__ == "__main__":
    main()
