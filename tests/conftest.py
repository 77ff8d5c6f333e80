"""Shared fixtures: the moto **server** (never the in-process mock, which double-claims under threads) and helpers."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest

from tests.ports import free_port

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

import logging

logging.getLogger("werkzeug").setLevel(logging.WARNING)

ROOT_KEY = "chr_test_root_key"
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


# A port no other xdist worker is handed (``make test`` runs the suite on two workers).
_free_port = free_port


def _defer_kms_private_keys() -> None:
    """moto makes an RSA-2048 private key for every KMS key, symmetric ones too, and every
    test makes a key: 0.1-0.4 s of CPU each. Make it on first use (Sign, Verify,
    GetPublicKey) instead; nothing else changes."""
    from moto.kms import models

    make_now = models.generate_private_key
    if getattr(make_now, "_deferred", False):
        return

    class _Deferred:
        def __init__(self, key_spec: str):
            self._key_spec = key_spec
            self._key: Any = None

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_"):  # copy/pickle probing a bare instance
                raise AttributeError(name)
            if self._key is None:
                self._key = make_now(self._key_spec)
            return getattr(self._key, name)

    def deferred(key_spec: str) -> Any:
        return _Deferred(key_spec)

    deferred._deferred = True  # type: ignore[attr-defined]
    models.generate_private_key = deferred


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """One moto server for the session; each test resets it."""
    from devstack.keep_alive import KeepAliveMotoServer
    from devstack.moto_atomic import make_dynamodb_atomic

    make_dynamodb_atomic()
    _defer_kms_private_keys()
    port = _free_port()
    server = KeepAliveMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@dataclass
class Aws:
    """The AWS resources of one test, on the moto server."""

    endpoint: str
    queue_url: str
    dlq_url: str
    bucket: str
    kms_key_id: str
    sent: list = field(default_factory=list)

    def sqs(self) -> Any:
        from chalicelib.store.aws import client

        return client("sqs")

    def receive(self, *, max_messages: int = 10, visibility: int = 600) -> list[dict]:
        """Receive up to 10 messages (ignores DelaySeconds: tests drive time explicitly)."""
        answer = self.sqs().receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=max_messages,
            VisibilityTimeout=visibility,
            AttributeNames=["All"],
        )
        return answer.get("Messages", [])

    def delete(self, messages: list[dict]) -> None:
        for m in messages:
            self.sqs().delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])

    def purge_delays(self, now: datetime | None = None) -> None:
        """Make delayed messages visible now: moto honours DelaySeconds in real time.

        With ``now`` (the test's clock), only messages due by then are made visible (a
        scheduled fire lands at most a second before its slot), as SQS would deliver
        them at that instant: a test never runs a fire ahead of its time.
        """
        from moto.sqs.models import sqs_backends

        due_ms = None if now is None else int(now.timestamp() * 1000) + 1000
        # The server runs in this process, so its backend is reachable directly.
        for backend in sqs_backends.values():
            for region_backend in backend.values():
                for queue in region_backend.queues.values():
                    for message in queue._messages:
                        if due_ms is not None:
                            try:
                                at = _due_ms_of(json.loads(message.body))
                            except ValueError:
                                at = None
                            if json.loads(message.body).get("k") == "schedule" and (
                                at is not None and int(at) > due_ms
                            ):
                                # Not due at the test's now: hidden, however long the
                                # test has taken in real time (moto's delay is real).
                                message.delayed_until = time.time() * 1000 + 3_600_000  # moto: ms
                                continue
                        message.delayed_until = 0

    def drain(self, runner: Any, *, rounds: int = 50) -> list[str]:
        """Run every queued message through ``runner``; returns the statuses."""
        from chalicelib.store.sqs import FireMessage

        statuses = []
        for _ in range(rounds):
            self.purge_delays(runner.clock())
            messages = self.receive()
            if not messages:
                break
            for m in messages:
                statuses.append(runner.handle(FireMessage.parse(m["Body"])))
            self.delete(messages)
        return statuses


def _due_ms_of(body: dict) -> int | None:
    """When a fire message is due: its slot, or (a jittered schedule) the slot's fire_at."""
    at = body.get("at")
    sched = body.get("s")
    if at is None or not sched or '"j":' not in sched:
        return at
    from chalicelib.domain import schedule
    from chalicelib.domain.codec import decode_schedule

    return schedule.fire_at_ms(body["t"], int(at), decode_schedule(sched))


# The empty tables as create_tables made them on this worker's moto server (the first
# ``aws`` of the worker creates them through the API). Every later test gets its fresh
# tables as copies of these, put into the freshly reset backend: the same tables (keys,
# indexes, TTL), without the 15 CreateTable and UpdateTimeToLive calls per test (about
# a second of a loaded worker's time each). The server runs in this process.
_EMPTY_TABLES: dict[str, Any] = {}


def _dynamodb_backend() -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][os.environ["AWS_DEFAULT_REGION"]]


def _snapshot_tables() -> None:
    import copy

    tables = _dynamodb_backend().tables
    _EMPTY_TABLES.clear()
    _EMPTY_TABLES.update({name: copy.deepcopy(table) for name, table in tables.items()})


def _restore_tables() -> bool:
    """Put copies of the empty tables into the reset backend; False if there are none yet."""
    import copy

    if not _EMPTY_TABLES:
        return False
    tables = _dynamodb_backend().tables
    assert not tables, "the moto server was not reset"
    tables.update({name: copy.deepcopy(table) for name, table in _EMPTY_TABLES.items()})
    return True


@pytest.fixture
def aws(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """Fresh tables, queue, bucket and key on the moto server, and settings pointing at them."""
    import requests

    from chalicelib.services import offpath

    # A refused delivery of the previous test may still be on its way to the store
    # (recorded off the response's path): it lands before the reset, not in this test.
    offpath.refusals.flush(timeout_s=30)
    requests.post(f"{moto_server}/moto-api/reset", timeout=10)
    monkeypatch.setenv("CRONHOOK_AWS_ENDPOINT", moto_server)
    monkeypatch.setenv("CRONHOOK_STAGE", "test")
    monkeypatch.setenv("CRONHOOK_TABLE_PREFIX", "cronhook-test-")
    monkeypatch.setenv("CRONHOOK_API_KEY", ROOT_KEY)
    monkeypatch.setenv("CRONHOOK_MIN_INTERVAL_S", "60")
    # One claimer per tick: the order of AWS calls (and of injected faults) is then the
    # same on every run; test_heartbeat_workers.py runs ticks on several workers.
    monkeypatch.setenv("CRONHOOK_HEARTBEAT_WORKERS", "1")
    monkeypatch.setenv("CRONHOOK_PUBLIC_URL", "http://127.0.0.1:8000")
    from chalicelib.settings import reset_settings
    from chalicelib.store.aws import client

    # Cached boto3 clients are kept across tests (same endpoint): building one costs ~0.2 s.
    reset_settings()
    sqs = client("sqs")
    dlq = sqs.create_queue(QueueName="cronhook-fires-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue = sqs.create_queue(
        QueueName="cronhook-fires",
        Attributes={
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})
        },
    )["QueueUrl"]
    client("s3").create_bucket(Bucket="cronhook-test-payloads")
    key_id = client("kms").create_key(Description="test")["KeyMetadata"]["KeyId"]
    monkeypatch.setenv("CRONHOOK_QUEUE_URL", queue)
    monkeypatch.setenv("CRONHOOK_BUCKET", "cronhook-test-payloads")
    monkeypatch.setenv("CRONHOOK_KMS_KEY_ID", key_id)
    reset_settings()
    from chalicelib import wiring
    from chalicelib.observability import reset_metric_counts
    from chalicelib.store.tables import create_tables

    wiring.ready()
    if not _restore_tables():
        # create_tables builds a boto3 client per call (~0.2 s of CPU): hand it the cached
        # one, which points at the same endpoint.
        with mock.patch("boto3.client", lambda *args, **kwargs: client("dynamodb")):
            create_tables()
        _snapshot_tables()
    # Fresh tables hold no row: record the shard count the first tick would probe for
    # (about 1 s of queries per test otherwise). Tests of the probe delete the item.
    from chalicelib.settings import get_settings
    from chalicelib.store import shard_registry

    shard_registry.record_fresh(get_settings().due_shards)
    reset_metric_counts()
    yield Aws(
        endpoint=moto_server,
        queue_url=queue,
        dlq_url=dlq,
        bucket="cronhook-test-payloads",
        kms_key_id=key_id,
    )
    reset_settings()


@pytest.fixture(params=["standing", "keyed"])
def row_form(request: pytest.FixtureRequest, aws: Aws, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both forms of a schedule's due row: standing (the default) and keyed
    (``CRONHOOK_STANDING_ROWS=0``), for tests whose heartbeat figures differ by form."""
    from chalicelib.settings import reset_settings

    monkeypatch.setenv("CRONHOOK_STANDING_ROWS", "1" if request.param == "standing" else "0")
    reset_settings()
    return str(request.param)


class Clock:
    """A clock tests move by hand."""

    def __init__(self, at: datetime = T0):
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> datetime:
        from datetime import timedelta

        self.at = self.at + timedelta(seconds=seconds)
        return self.at


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def root():
    """The root principal (admin of tenant ``local``)."""
    from chalicelib.services.auth import Principal

    return Principal("root", "local", "admin")


# -- pytest-xdist ----------------------------------------------------------------------
# ``make test`` runs on two workers (``-n 2 --dist loadgroup``). A test is sent to any
# worker, except that the tests sharing one of our fixtures wider than a test (a local
# stack per session, a browser per module, infra's package-once deployment) are kept on
# one worker, so that fixture is built once, as in a serial run. The moto server is one
# per worker by design (each worker's tests reset their own).
_PER_WORKER_FIXTURES = {"moto_server"}


def _shared_fixtures(item: pytest.Item) -> set[tuple[str, str]]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    shared = set()
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if (
                fixturedef.scope != "function"
                and fixturedef.baseid.startswith("tests")
                and name not in _PER_WORKER_FIXTURES
            ):
                shared.add((fixturedef.baseid, name))
    return shared


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each set of tests that share a wide fixture with one ``xdist_group``."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(key: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    uses = [(item, sorted(_shared_fixtures(item))) for item in items]
    for _item, fixtures in uses:
        for other in fixtures[1:]:
            parent[find(other)] = find(fixtures[0])
    for item, fixtures in uses:
        if fixtures:
            baseid, name = find(fixtures[0])
            item.add_marker(pytest.mark.xdist_group(f"{baseid}::{name}"))


# -- wide fixtures end with their last test ---------------------------------------------
# A session fixture of ours (a local stack, the cookbook's stack) holds processes that tick
# and poll while they live. pytest keeps it until the session ends, so a worker that has
# run the stack's tests would carry an idle stack through all the tests after them. It is
# torn down instead right after the last test that uses it (in the order the tests run
# here: xdist sends a group to one worker, in collection order). A later test that asked
# for it again would get a fresh one; none does.
_LAST_USER: dict[tuple[str, str], str] = {}


def _session_fixturedefs(item: pytest.Item) -> list[Any]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    found = []
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if (
                fixturedef.scope == "session"
                and fixturedef.baseid.startswith("tests")
                and name not in _PER_WORKER_FIXTURES
            ):
                found.append(fixturedef)
    return found


def pytest_collection_finish(session: pytest.Session) -> None:
    _LAST_USER.clear()
    for item in session.items:
        for fixturedef in _session_fixturedefs(item):
            _LAST_USER[(fixturedef.baseid, fixturedef.argname)] = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    result = yield
    if nextitem is not None:  # (after the last test, pytest ends them all anyway)
        for fixturedef in _session_fixturedefs(item):
            key = (fixturedef.baseid, fixturedef.argname)
            if _LAST_USER.get(key) == item.nodeid and fixturedef.cached_result is not None:
                fixturedef.finish(item._request)  # type: ignore[attr-defined]
    return result
