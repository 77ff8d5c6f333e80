"""The local stack behind ``make run``: embedded AWS, the API, a heartbeat timer, a runner pool.

- AWS is a moto server in a process of its own (``embedded_aws``: it does not share the
  interpreter lock with the runners) on ``CRONHOOK_AWS_PORT`` (4566), so ``aws
  --endpoint-url http://127.0.0.1:4566`` and boto3 drive it; tables, queue (+DLQ),
  bucket and KMS key are created from the same definitions as production. It stops
  with the stack (Ctrl-C, SIGTERM, or the stack's death).
- The Chalice app is served over HTTP through Chalice's own local gateway, with a
  request handler that also reads chunked bodies (``chalice local`` drops them).
- The heartbeat is called every ``CRONHOOK_HEARTBEAT_S``, half a period past its
  boundary (``ticks``: on :30 for 60 s).
- The runners run in a process of their own (``runner_process``: in AWS they are Lambda
  functions apart from the API, and here they no longer share an interpreter lock with
  the API server): ``CRONHOOK_MAX_CONCURRENCY`` runner threads poll SQS like Lambda's
  event source mapping (batches of 10, a visibility timeout) and share the ceiling
  fairly among tenants as SQS fair queues do (``fairness``): each runs one message at a
  time, the oldest of the tenant with the fewest runs in progress.
- With ``CRONHOOK_FANOUT_SHARDS`` set, the heartbeat fans out per shard to a local tick
  queue, and enqueuer threads of their own take its messages (``local/enqueuers.py``).
- Triggers survive a restart, and a kill -9: the embedded AWS journals every write before
  answering it (``journal``), snapshots the tables to ``$CRONHOOK_DATA_DIR/tables.json``
  after every tick (asked by a signal, off the tick's path) and as it stops, and folds the
  journal into the snapshot when it starts; the stack loads them on start. Queued messages
  do not survive; claims that were in flight are released (not started) or recorded
  ``lost`` (started), and the bookkeeping a kill cut short is finished (``restore``).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devstack import data_dir
from devstack.lambda_events import InvocationContext, lambda_record, tenant_of
from devstack.pool import IDLE_POLL_S, ingest_loop
from devstack.resources import (
    PAYLOAD_BUCKET,
    TABLE_PREFIX,
    create_fire_queues,
    create_sources,
    local_environment,
    resolve_api_key,
    rewire_sources,
)
from devstack.restore import load_objects, load_tables, recover_claims

__all__ = ["LocalStack", "StackConfig", "InvocationContext", "main"]

# The names the tests and the bench import from here (kept where they were).
_lambda_record = lambda_record
_tenant_of = tenant_of
_IDLE_POLL_S = IDLE_POLL_S


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
        self.alerts_url = ""
        self.http: Any = None
        self.api_key = ""
        self.queue_url = ""
        self.dlq_url = ""
        self.runners: subprocess.Popen | None = None

    # -- embedded AWS -------------------------------------------------------------

    def _start_aws(self) -> None:
        """Start the embedded AWS, make the stack's resources in it, load the saved tables."""
        from devstack.embedded_aws import EmbeddedAws

        persist = self.config.persist
        self.aws = EmbeddedAws(
            host="127.0.0.1",
            port=self.config.aws_port,
            save_to=self._state_file() if persist else None,
            keyring=self.config.data_dir if persist else None,
            table_prefix=TABLE_PREFIX,
        )
        self.aws.start()
        atexit.register(self.aws.stop)  # a crash of this process must not orphan it
        os.environ.update(
            local_environment(
                endpoint=self.aws.endpoint,
                public_url=f"http://{self.config.host}:{self.config.port}",
                heartbeat_s=self.config.heartbeat_s,
                min_interval_s=self.config.min_interval_s,
                max_concurrency=self.config.max_concurrency,
            )
        )
        os.environ.pop("AWS_PROFILE", None)
        if persist:  # its lines and its runners', for GET /v1/runs/{id}/logs
            data_dir.start_log(self.config.data_dir)
        from chalicelib.settings import reset_settings
        from chalicelib.store.aws import reset_clients

        reset_settings()
        reset_clients()
        self._create_resources()
        # Claimer threads overlap network waits; here "DynamoDB" is one moto process that
        # serialises every write (moto_atomic): extra claimers only queue behind each
        # other and compete with the runners for this process. One unless told otherwise.
        os.environ.setdefault("CRONHOOK_HEARTBEAT_WORKERS", "1")
        # echo, fail and sleep, for trying things out (off in deployed stages).
        os.environ.setdefault("CRONHOOK_BUILTIN_WORKFLOWS", "1")
        self.api_key = resolve_api_key(self.config.api_key, self.config.data_dir)
        os.environ["CRONHOOK_API_KEY"] = self.api_key
        reset_settings()
        from chalicelib import wiring
        from chalicelib.store.tables import create_tables

        wiring.ready()
        create_tables(wait=False)
        self._load()
        rewire_sources()

    def _create_resources(self) -> None:
        """Queues, payload bucket, KMS key and sources; their names into the environment."""
        from chalicelib.store.aws import client

        self.queue_url, self.dlq_url = create_fire_queues()
        client("s3").create_bucket(Bucket=PAYLOAD_BUCKET)
        if self.config.persist:
            # The embedded AWS made the key with the material kept in the data dir (the
            # same key as before a restart: secrets sealed then still open).
            from devstack.keyring import saved_key_id

            key_id = saved_key_id(self.config.data_dir)
        else:
            key_id = client("kms").create_key(Description="cronhook local secrets")["KeyMetadata"][
                "KeyId"
            ]
        os.environ.update(
            {
                "CRONHOOK_QUEUE_URL": self.queue_url,
                "CRONHOOK_BUCKET": PAYLOAD_BUCKET,
                "CRONHOOK_KMS_KEY_ID": key_id,
            }
        )
        if _fanout_on():
            from devstack.enqueuers import create_tick_queue

            os.environ["CRONHOOK_TICK_QUEUE_URL"] = create_tick_queue()
        sources = create_sources()
        self.ingest_url = sources["CRONHOOK_INGEST_QUEUE_URL"]
        os.environ.update(sources)
        from devstack.alerts import create_alerts_queue

        # Alerts: their queue, and email as .eml files under the data dir (outbox/).
        self.alerts_url = create_alerts_queue()
        os.environ["CRONHOOK_ALERTS_QUEUE_URL"] = self.alerts_url
        os.environ["CRONHOOK_DATA_DIR"] = str(self.config.data_dir)

    # -- persistence ------------------------------------------------------------------

    def _state_file(self) -> Path:
        return self.config.data_dir / "tables.json"

    def save(self) -> None:
        """Ask the embedded AWS to write every table to the data dir (it saves; no wait here)."""
        if self.aws is not None:
            self.aws.request_save()

    def _load(self) -> None:
        if not self.config.persist:
            return
        if self._state_file().exists():
            load_tables(self._state_file())
            load_objects(self._state_file())
            recover_claims(clean_stop=data_dir.take_stopped(self.config.data_dir))
        # The load and the recovery were journaled item by item: fold them into a snapshot.
        # A fresh data dir has nothing to lose either: from here a stop always saves.
        self.save()

    # -- the API ---------------------------------------------------------------------

    def _start_http(self) -> None:
        self.http = data_dir.serve_api(self.config.host, self.config.port)
        self._spawn(self.http.serve_forever, "http")

    # -- heartbeat and runners ---------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        from chalicelib import wiring
        from devstack.ticks import tick_wait_s

        period = max(1, self.config.heartbeat_s)
        while not self.stop_event.is_set():
            if self.stop_event.wait(tick_wait_s(time.time(), period)):
                break
            try:
                wiring.heartbeat_once()
            except Exception as exc:  # keep ticking; the next tick retries
                print(f"heartbeat failed: {exc!r}", file=sys.stderr)
            # Off the tick's path: a signal; the embedded AWS snapshots its own tables.
            self.save()

    def _watch_loop(self) -> None:
        from devstack.watch import run_watches

        run_watches(self.config.data_dir, self.stop_event)

    def _start_mail(self) -> None:
        from devstack.smtp import MailListener

        try:
            self.mail = MailListener("127.0.0.1", self.config.smtp_port)
            self.mail.start()
        except Exception as exc:
            self.mail = None
            raise RuntimeError(
                f"cannot listen for mail on 127.0.0.1:{self.config.smtp_port} ({exc});"
                " set CRONHOOK_SMTP_PORT to a free port"
            ) from None

    def _spawn(self, target: Any, name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def start(self) -> None:
        """Start AWS, the API, the heartbeat timer and the runner pool."""
        self._start_aws()
        self._start_mail()
        self._start_http()
        data_dir.mark_in_use(self.config)  # ``cronhook watch`` refuses a dir no stack uses
        self._spawn(ingest_loop, "ingest", self.ingest_url, self.stop_event)
        from devstack.alerts import alerts_loop

        self._spawn(alerts_loop, "alerts", self.alerts_url, self.stop_event)
        self._spawn(self._watch_loop, "watch")
        self._spawn(self._heartbeat_loop, "heartbeat")
        self._start_runners()
        if _fanout_on():
            from chalicelib.settings import get_settings
            from devstack.enqueuers import enqueuer_count, enqueuer_loop

            tick_queue = os.environ["CRONHOOK_TICK_QUEUE_URL"]
            for n in range(enqueuer_count(get_settings().due_shards)):
                self._spawn(enqueuer_loop, f"enqueuer-{n}", tick_queue, self.stop_event)

    def _start_runners(self) -> None:
        """The runner pool's process (``runner_process``), with this process's environment."""
        self.runners = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "devstack.runner_process",
                "--queue-url",
                self.queue_url,
                "--concurrency",
                str(max(1, self.config.max_concurrency)),
                "--grace",
                str(STOP_GRACE_S),
            ],
            env=dict(os.environ),
        )
        atexit.register(self._kill_runners)  # a crash of this process must not orphan it

    def _kill_runners(self) -> None:
        if self.runners is not None and self.runners.poll() is None:
            self.runners.kill()
            self.runners.wait()

    def stop(self) -> None:
        """Stop everything and save the tables."""
        self.stop_event.set()
        if self.runners is not None and self.runners.poll() is None:
            self.runners.send_signal(signal.SIGTERM)  # they stop receiving at once
        if self.http is not None:
            self.http.shutdown()
            self.http.server_close()
        if self.mail is not None:
            self.mail.stop()
        # One shared deadline: a runner in the middle of a run gets a few seconds to
        # settle; whatever is still running after that is recorded lost on the next start.
        deadline = time.monotonic() + STOP_GRACE_S
        for thread in self.threads:
            if thread.name.startswith(("heartbeat", "ingest", "alerts", "watch", "enqueuer")):
                thread.join(timeout=max(0.1, deadline - time.monotonic()))
        if self.runners is not None:
            try:
                self.runners.wait(timeout=max(0.1, deadline - time.monotonic()) + 2)
            except subprocess.TimeoutExpired:
                self._kill_runners()
        if self.aws is not None:
            data_dir.mark_stopped(self.config)
        # The embedded AWS saves the tables as it stops (SIGTERM), after the runners settled.
        if self.aws is not None:
            self.aws.stop()


# How long a stop gives the runs in hand to settle (the runners' process and the threads).
STOP_GRACE_S = 10


def _fanout_on() -> bool:
    """Whether the heartbeat fans out (``CRONHOOK_FANOUT_SHARDS`` > 0): then a tick queue."""
    return int(os.environ.get("CRONHOOK_FANOUT_SHARDS") or 0) > 0


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
    except RuntimeError as exc:
        # A port in use, a data dir that cannot be written...: one line naming the setting.
        stack.stop()
        print(f"cronhook: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
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
Alert email (one .eml file a message): {config.data_dir}/outbox/
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
