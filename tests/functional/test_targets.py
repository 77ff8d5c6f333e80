"""lambda: and http: targets end to end, over real HTTP connections.

moto cannot run Lambda code without Docker, so the Lambda target talks to a small local
server that speaks the Invoke API (``POST /2015-03-31/functions/{name}/invocations``),
with boto3's Lambda endpoint pointed at it (``CRONHOOK_LAMBDA_ENDPOINT``). The HTTP target
posts to a local server that checks the signature with the ``standardwebhooks`` package.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

import pytest
import standardwebhooks

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import keys, triggers
from chalicelib.services.auth import Principal
from chalicelib.settings import get_settings, reset_settings
from chalicelib.store import kms
from chalicelib.store import triggers as triggers_store
from chalicelib.store.triggers import TriggerModel
from chalicelib.workflows import remote
from chalicelib.workflows.remote import http_target, lambda_target
from tests.scenarios import fire_next

Handler = Callable[[str, dict, bytes], tuple[int, dict, bytes]]


class LocalServer:
    """A threaded HTTP server whose answers come from ``handle(path, headers, body)``."""

    def __init__(self, handle: Handler):
        self.requests: list[tuple[str, dict, bytes]] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.path, headers, body))
                status, extra, answer = handle(self.path, headers, body)
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LocalServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _json(status: int, doc: object, **headers: str) -> tuple[int, dict, bytes]:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(doc).encode()


def _fire_once(aws, clock, root, **body) -> tuple[str, list[str]]:
    body.setdefault("schedule", {"interval_s": 60})
    trigger_id = triggers.create_trigger(root, body, now=clock())["id"]
    clock.advance(60)
    assembly.tick(now=clock())
    return trigger_id, aws.drain(assembly.build_runner(clock=clock))


def _last_run(root, trigger_id) -> dict:
    return triggers.list_trigger_runs(root, trigger_id, {})["items"][0]


# -- lambda: ----------------------------------------------------------------------------

# A tenant's functions are named cronhook-<stage>-<tenant>-*: here stage test, tenant local.
FN = "cronhook-test-local-"


def _lambda_api(path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
    """The Invoke API: ok-fn, boom-fn, refuses-fn, flaky-fn; anything else does not exist."""
    prefix, suffix = "/2015-03-31/functions/", "/invocations"
    assert path.startswith(prefix) and path.endswith(suffix), path
    full = unquote(path[len(prefix) : -len(suffix)]).split(":function:")[-1].split(":")[0]
    name = re.sub(r"^cronhook-test-(local|acme)-", "", full)  # tenants local and acme
    fire = json.loads(body)
    if name == "ok-fn":
        count = (fire["state"] or {}).get("count", 0) + 1
        return _json(
            200,
            {"state": {"count": count}, "output": {"saw": fire["fire_id"]}, "cost_usd": 0.02},
        )
    if name == "boom-fn":
        error = {"errorMessage": "disk full", "errorType": "OSError", "stackTrace": []}
        return _json(200, error, **{"X-Amz-Function-Error": "Unhandled"})
    if name == "refuses-fn":
        return _json(200, {"error": "upstream said no", "state": {"partial": True}})
    if name == "flaky-fn":
        # Retryable for botocore; a retry of a function that did run would run it twice.
        return _json(500, {"Message": "try again"}, **{"x-amzn-ErrorType": "ServiceException"})
    return _json(
        404,
        {"Type": "User", "Message": f"Function not found: {name}"},
        **{"x-amzn-ErrorType": "ResourceNotFoundException"},
    )


@pytest.fixture
def lambda_api(aws, monkeypatch) -> Iterator[LocalServer]:
    with LocalServer(_lambda_api) as server:
        monkeypatch.setenv("CRONHOOK_LAMBDA_ENDPOINT", server.url)
        reset_settings()
        remote.reset_clients()
        yield server
    reset_settings()
    remote.reset_clients()


@pytest.mark.parametrize(
    "target",
    [
        f"lambda:{FN}ok-fn",
        f"lambda:{FN}ok-fn:live",
        f"lambda:arn:aws:lambda:us-east-1:123456789012:function:{FN}ok-fn",
    ],
)
def test_a_lambda_target_gets_the_fire_and_its_answer_becomes_the_result(
    aws, clock, root, lambda_api, target
):
    trigger_id, statuses = _fire_once(aws, clock, root, workflow=target, state={"count": 41})
    assert statuses == ["succeeded"]
    [(_, headers, body)] = lambda_api.requests
    fire = json.loads(body)
    assert fire["trigger_id"] == trigger_id and fire["surface"] == "schedule"
    assert fire["state"] == {"count": 41} and fire["allow_destructive"] is False
    assert fire["scheduled_for"] == "2026-11-30T12:01:00.000Z"
    assert headers["x-amz-invocation-type"] == "RequestResponse"
    run = _last_run(root, trigger_id)
    assert run["output"] == {"saw": fire["fire_id"]} and run["cost_usd"] == 0.02
    assert triggers.get_trigger_view(root, trigger_id)["state"] == {"count": 42}


@pytest.mark.parametrize(
    ("target", "error", "state"),
    [
        (f"lambda:{FN}boom-fn", f"lambda {FN}boom-fn failed: OSError: disk full", {}),
        (f"lambda:{FN}refuses-fn", "upstream said no", {"partial": True}),
        (
            f"lambda:{FN}gone-fn",
            f"lambda {FN}gone-fn: ResourceNotFoundException: Function not found: gone-fn",
            {},
        ),
        (f"lambda:{FN}flaky-fn", f"lambda {FN}flaky-fn: ServiceException: try again", {}),
    ],
)
def test_a_lambda_function_error_fails_the_run_with_its_message(
    aws, clock, root, lambda_api, target, error, state
):
    trigger_id, statuses = _fire_once(aws, clock, root, workflow=target)
    assert statuses == ["failed"]
    assert _last_run(root, trigger_id)["error"] == error
    assert triggers.get_trigger_view(root, trigger_id)["state"] == state
    assert len(lambda_api.requests) == 1  # not retried by botocore


@pytest.fixture
def sts_calls(monkeypatch) -> list[tuple[dict, dict]]:
    """Every AssumeRole call cronhook makes, as botocore sends it to the moto server, with its answer."""
    from botocore.client import BaseClient

    calls: list[tuple[dict, dict]] = []
    original = BaseClient._make_api_call

    def recording(client, operation, params):
        answer = original(client, operation, params)
        if client.meta.service_model.service_name == "sts" and operation == "AssumeRole":
            calls.append((dict(params), answer))
        return answer

    monkeypatch.setattr(BaseClient, "_make_api_call", recording)
    return calls


def _signed_with(headers: dict) -> str:
    """The access key id a SigV4 request was signed with."""
    return headers["authorization"].split("Credential=", 1)[1].split("/", 1)[0]


def test_a_lambda_target_is_invoked_with_a_session_of_the_target_role_tagged_with_its_tenant(
    aws, clock, root, lambda_api, sts_calls
):
    acme_key = keys.create_key(root, {"role": "operator", "tenant": "acme"}, now=clock())
    acme = Principal(acme_key["id"], "acme", "operator")
    trigger_id, statuses = _fire_once(aws, clock, acme, workflow="lambda:cronhook-test-acme-ok-fn")
    assert statuses == ["succeeded"]
    [(params, answer)] = sts_calls
    assert params == {
        "RoleArn": "arn:aws:iam::123456789012:role/cronhook-test-target-invoke",
        "RoleSessionName": "cronhook-acme",
        "DurationSeconds": 900,
        "Tags": [{"Key": "cronhook-tenant", "Value": "acme"}],
    }
    # The function was called with the session's credentials, not the runner's own.
    [(_, headers, _)] = lambda_api.requests
    assert _signed_with(headers) == answer["Credentials"]["AccessKeyId"] != "testing"
    assert _last_run(acme, trigger_id)["output"]["saw"].startswith(trigger_id)


def test_a_tenants_session_is_reused_within_its_lifetime_and_never_past_it(
    aws, clock, root, lambda_api, sts_calls, monkeypatch
):
    now_s = [1_000_000.0]
    monkeypatch.setattr(lambda_target, "_clock", lambda: now_s[0])
    _fire_once(aws, clock, root, workflow=f"lambda:{FN}ok-fn")
    _, statuses = _fire_once(aws, clock, root, workflow=f"lambda:{FN}ok-fn")
    assert statuses == ["succeeded", "succeeded"]  # both triggers were due
    assert len(sts_calls) == 1 and len(lambda_api.requests) == 3  # one session, three runs
    assert {_signed_with(h) for _, h, _ in lambda_api.requests} == {
        sts_calls[0][1]["Credentials"]["AccessKeyId"]
    }
    # 900 s sessions are not used in their last 120 s: past 780 s, a new one.
    now_s[0] += 781
    _fire_once(aws, clock, root, workflow=f"lambda:{FN}ok-fn")
    assert len(sts_calls) == 2
    assert _signed_with(lambda_api.requests[-1][1]) == sts_calls[1][1]["Credentials"]["AccessKeyId"]


def test_a_trigger_holding_another_tenants_function_fails_its_run_and_calls_nothing(
    aws, clock, root, lambda_api, sts_calls
):
    # Created as the tenant's own function, then rewritten around the API (a trigger from
    # before the fence, a bad migration): the run refuses it before any call.
    trigger_id = triggers.create_trigger(
        root, {"workflow": f"lambda:{FN}ok-fn", "schedule": {"interval_s": 60}}, now=clock()
    )["id"]
    TriggerModel(trigger_id).update(
        actions=[TriggerModel.workflow.set("lambda:cronhook-test-acme-ok-fn")]
    )
    clock.advance(60)
    assembly.tick(now=clock())
    assert aws.drain(assembly.build_runner(clock=clock)) == ["failed"]
    error = _last_run(root, trigger_id)["error"]
    assert error.startswith("lambda target refused: a lambda target of tenant 'local' must be")
    assert sts_calls == [] and lambda_api.requests == []


@pytest.mark.parametrize(
    "target",
    [
        "cronhook-test-local-ok-fn",  # tenant local's function, named by tenant acme
        "arn:aws:lambda:us-east-1:123456789012:function:cronhook-test-local-ok-fn:live",
    ],
)
def test_a_tenant_cannot_create_a_trigger_on_another_tenants_function(aws, clock, root, target):
    acme_key = keys.create_key(root, {"role": "operator", "tenant": "acme"}, now=clock())
    acme = Principal(acme_key["id"], "acme", "operator")
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            acme, {"workflow": f"lambda:{target}", "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"
    assert "cronhook-test-acme-<name>" in str(caught.value)


def test_without_a_target_role_a_lambda_target_fails_its_run_naming_the_setting(
    aws, clock, root, lambda_api, sts_calls, monkeypatch
):
    monkeypatch.setattr(
        "chalicelib.workflows.remote.lambda_target.get_settings",
        lambda: dataclasses.replace(get_settings(), target_role_arn=None),
    )
    trigger_id, statuses = _fire_once(aws, clock, root, workflow=f"lambda:{FN}ok-fn")
    assert statuses == ["failed"]
    assert "CRONHOOK_TARGET_ROLE_ARN" in _last_run(root, trigger_id)["error"]
    assert sts_calls == [] and lambda_api.requests == []


# -- http: -----------------------------------------------------------------------------


class Receiver:
    """An HTTP endpoint that verifies Standard Webhooks signatures with the reference package."""

    def __init__(self) -> None:
        self.secret: str | None = None
        self.verified: list[dict] = []

    def __call__(self, path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        try:
            fire = standardwebhooks.Webhook(self.secret or "whsec_" + "A" * 44).verify(
                body, headers
            )
        except standardwebhooks.WebhookVerificationError:
            return _json(401, {"error": "bad signature"})
        self.verified.append(fire)
        if path == "/fail":
            return 500, {"Content-Type": "text/plain"}, b"database is down"
        if path == "/slow":
            time.sleep(1.5)
        if path == "/moved":
            return 302, {"Location": "/hook"}, b""
        if path == "/text":
            return 200, {"Content-Type": "text/plain"}, b"thanks"
        count = (fire["state"] or {}).get("count", 0) + 1
        return _json(200, {"state": {"count": count}, "output": {"ok": True}, "cost_usd": 0.5})


@pytest.fixture
def receiver(aws, monkeypatch) -> Iterator[tuple[Receiver, LocalServer]]:
    # The receiver is on this machine: a private address, allowed only by the setting.
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    reset_settings()
    kms.clear_cache()
    handler = Receiver()
    with LocalServer(handler) as server:
        yield handler, server


def _create_http(root, clock, server: LocalServer, path: str, **body) -> dict:
    body.setdefault("schedule", {"interval_s": 60})
    return triggers.create_trigger(
        root, {"workflow": f"http:{server.url}{path}", **body}, now=clock()
    )


def test_an_http_target_gets_a_signed_post_and_its_answer_becomes_the_result(
    aws, clock, root, receiver
):
    handler, server = receiver
    created = _create_http(root, clock, server, "/hook", state={"count": 1})
    secret = created["outbound_secret"]  # shown once, on create
    assert secret.startswith("whsec_")
    assert "outbound_secret" not in triggers.get_trigger_view(root, created["id"])
    assert secret not in triggers_store.get_trigger(created["id"]).outbound_secret_sealed
    handler.secret = secret
    assert fire_next(aws, clock, assembly.build_runner(clock=clock), keep_dropped=True) == [
        "succeeded"
    ]
    [fire] = handler.verified
    [(_, headers, _)] = server.requests
    assert headers["webhook-id"] == fire["fire_id"]  # stable per fire: the receiver dedupes
    assert fire["trigger_id"] == created["id"] and fire["state"] == {"count": 1}
    run = _last_run(root, created["id"])
    assert (run["output"], run["cost_usd"]) == ({"ok": True}, 0.5)
    assert triggers.get_trigger_view(root, created["id"])["state"] == {"count": 2}


def test_an_http_target_signed_with_another_secret_is_refused_by_the_receiver(
    aws, clock, root, receiver
):
    handler, server = receiver
    created = _create_http(root, clock, server, "/hook")
    handler.secret = _create_http(root, clock, server, "/hook")["outbound_secret"]
    assert sorted(fire_next(aws, clock, assembly.build_runner(clock=clock), keep_dropped=True)) == [
        "failed",
        "succeeded",
    ]
    assert _last_run(root, created["id"])["error"] == (
        'http target answered 401: {"error": "bad signature"}'
    )


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/fail", "http target answered 500: database is down"),
        ("/moved", "http target answered 302"),
        ("/slow", "http target did not answer within 0.5 s"),
    ],
)
def test_an_http_target_that_does_not_answer_2xx_in_time_fails_the_run(
    aws, clock, root, receiver, monkeypatch, path, error
):
    monkeypatch.setattr(http_target, "HTTP_TIMEOUT_S", 0.5)
    handler, server = receiver
    created = _create_http(root, clock, server, path)
    handler.secret = created["outbound_secret"]
    assert fire_next(aws, clock, assembly.build_runner(clock=clock), keep_dropped=True) == [
        "failed"
    ]
    assert _last_run(root, created["id"])["error"] == error
    assert server.url not in _last_run(root, created["id"])["error"]


def test_an_http_answer_that_is_not_json_is_kept_as_output(aws, clock, root, receiver):
    handler, server = receiver
    created = _create_http(root, clock, server, "/text")
    handler.secret = created["outbound_secret"]
    assert fire_next(aws, clock, assembly.build_runner(clock=clock), keep_dropped=True) == [
        "succeeded"
    ]
    assert _last_run(root, created["id"])["output"] == "thanks"


@pytest.mark.parametrize(
    "url",
    ["http://example.com/hook", "ftp://127.0.0.1/x", "https://", "http://10.0.0.1:80/hook"],
)
def test_http_targets_must_use_https_except_to_localhost_locally(aws, clock, root, url):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root, {"workflow": f"http:{url}", "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"


def test_outside_the_local_stack_loopback_and_metadata_addresses_are_refused(monkeypatch):
    monkeypatch.setenv("CRONHOOK_STAGE", "prod")
    reset_settings()
    try:
        assert remote.check_http_url("https://93.184.215.14/hook") is None
        assert remote.check_http_url("http://127.0.0.1:8080/hook") is not None
        assert remote.check_http_url("https://127.0.0.1/hook") is not None
        assert remote.check_http_url("https://169.254.169.254/latest/meta-data") is not None
        assert remote.check_http_url("https://localhost/hook") is not None
    finally:
        reset_settings()
