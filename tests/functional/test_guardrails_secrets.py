"""fire.secrets through the runner on the moto server: scope fallback, both stores, no leaks."""

from __future__ import annotations

import hashlib

import pytest

from chalicelib import assembly
from chalicelib.services import keys, secrets, triggers
from chalicelib.services.auth import Principal
from chalicelib.store.aws import client
from chalicelib.workflows import Result, workflow

SCOPED = "scoped-token-1111"
UNSCOPED = "unscoped-token-2222"
GLOBAL_ONLY = "global-only-3333"
MANAGER = 'manager-pass"word-4444'


@workflow("test-secret-reader")
def secret_reader(fire):
    """Reads payload.names; keeps what it read in state, echoes it in output, may fail."""
    payload = fire.payload or {}
    seen = {name: fire.secrets.get(name) for name in payload.get("names", [])}
    if payload.get("fail"):
        raise RuntimeError(f"upstream rejected the token {seen[payload['fail']]}")
    # Which value was read, told without the value (the test compares digests).
    digests = {name: _digest(value) for name, value in seen.items()}
    return Result(
        state={"seen": seen, "digests": digests, "note": f"token={seen.get('API_TOKEN')}"},
        output={"seen": seen},
    )


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@pytest.fixture(autouse=True)
def fresh_secret_cache():
    secrets.clear_cache()
    yield
    secrets.clear_cache()


@pytest.fixture
def stored(aws):
    ssm = client("ssm")
    for name, value in (
        ("/cronhook/test/local/client-7/API_TOKEN", SCOPED),
        ("/cronhook/test/local/API_TOKEN", UNSCOPED),
        ("/cronhook/test/local/ONLY_GLOBAL", GLOBAL_ONLY),
    ):
        ssm.put_parameter(Name=name, Value=value, Type="SecureString")
    client("secretsmanager").create_secret(
        Name="cronhook/test/local/client-7/DB_PASSWORD", SecretString=MANAGER
    )


def _run_once(aws, clock, principal, **body):
    body.setdefault("workflow", "test-secret-reader")
    body.setdefault("schedule", {"interval_s": 60})
    trigger_id = triggers.create_trigger(principal, body, now=clock())["id"]
    clock.advance(60)
    assembly.tick(now=clock())
    statuses = aws.drain(assembly.build_runner(clock=clock))
    return trigger_id, statuses


def test_the_scoped_secret_wins_and_unscoped_names_are_the_fallback(aws, clock, root, stored):
    names = ["API_TOKEN", "ONLY_GLOBAL", "DB_PASSWORD"]
    trigger_id, statuses = _run_once(
        aws, clock, root, secret_scope="client-7", payload={"names": names}
    )
    assert statuses == ["succeeded"]
    view = triggers.get_trigger_view(root, trigger_id)
    assert view["state"]["digests"] == {
        "API_TOKEN": _digest(SCOPED),  # client-7/API_TOKEN, though API_TOKEN exists too
        "ONLY_GLOBAL": _digest(GLOBAL_ONLY),  # no client-7/ONLY_GLOBAL: the unscoped one
        "DB_PASSWORD": _digest(MANAGER),  # from Secrets Manager
    }
    # What the run recorded shows no value: not its output, not the state viewers read.
    [run] = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    assert run["output"] == {"seen": dict.fromkeys(names, "[secret]")}
    assert view["state"]["seen"] == dict.fromkeys(names, "[secret]")
    assert view["state"]["note"] == "token=[secret]"


def test_without_a_scope_only_the_unscoped_name_is_read(aws, clock, root, stored):
    trigger_id, statuses = _run_once(aws, clock, root, payload={"names": ["API_TOKEN"]})
    assert statuses == ["succeeded"]
    assert triggers.get_trigger_view(root, trigger_id)["state"]["digests"] == {
        "API_TOKEN": _digest(UNSCOPED)
    }


def test_a_missing_secret_fails_the_run_naming_it(aws, clock, root, stored):
    trigger_id, statuses = _run_once(
        aws, clock, root, secret_scope="client-7", payload={"names": ["NOPE"]}
    )
    assert statuses == ["failed"]
    [run] = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    assert run["error"] == (
        "SecretNotFound: secret 'NOPE' not found (looked for "
        "cronhook/test/local/client-7/NOPE, cronhook/test/local/NOPE in Parameter Store "
        "and Secrets Manager)"
    )


def test_a_secret_value_never_reaches_the_run_record_or_the_logs(
    aws, clock, root, stored, capsys, caplog
):
    trigger_id, statuses = _run_once(
        aws,
        clock,
        root,
        secret_scope="client-7",
        payload={"names": ["API_TOKEN", "DB_PASSWORD"], "fail": "API_TOKEN"},
    )
    assert statuses == ["failed"]
    view = triggers.get_trigger_view(root, trigger_id)
    [run] = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    assert run["error"] == "RuntimeError: upstream rejected the token [secret]"
    assert view["last_run"]["error"] == "RuntimeError: upstream rejected the token [secret]"
    captured = capsys.readouterr()
    everything = captured.out + captured.err + caplog.text + repr(run) + repr(view)
    for value in (SCOPED, MANAGER, UNSCOPED):
        assert value not in everything


def test_a_tenant_never_reads_another_tenants_secrets(aws, clock, root, stored):
    acme_key = keys.create_key(root, {"role": "operator", "tenant": "acme"}, now=clock())
    acme = Principal(acme_key["id"], "acme", "operator")
    trigger_id, statuses = _run_once(
        aws, clock, acme, secret_scope="client-7", payload={"names": ["API_TOKEN"]}
    )
    assert statuses == ["failed"]
    [run] = triggers.list_trigger_runs(acme, trigger_id, {})["items"]
    assert "cronhook/test/acme/client-7/API_TOKEN" in run["error"]


def test_secret_names_cannot_escape_their_path(aws, clock, root, stored):
    trigger_id, statuses = _run_once(aws, clock, root, payload={"names": ["../local/API_TOKEN"]})
    assert statuses == ["failed"]
    [run] = triggers.list_trigger_runs(root, trigger_id, {})["items"]
    assert run["error"].startswith("SecretNotFound: secret '../local/API_TOKEN'")


@pytest.mark.parametrize(
    "scope", ["..", "client-7/..", "./client-7", "a//b", "/client-7", "client-7/", "a/../b"]
)
def test_a_secret_scope_that_climbs_or_bends_the_path_is_a_422_naming_it(aws, clock, root, scope):
    from chalicelib.domain.errors import ValidationError

    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root,
            {"workflow": "echo", "schedule": {"interval_s": 60}, "secret_scope": scope},
            now=clock(),
        )
    assert caught.value.field == "secret_scope"
    created = triggers.create_trigger(
        root, {"workflow": "echo", "schedule": {"interval_s": 60}}, now=clock()
    )
    with pytest.raises(ValidationError) as caught:
        triggers.patch_trigger(root, created["id"], {"secret_scope": scope}, now=clock())
    assert caught.value.field == "secret_scope"


@pytest.mark.parametrize("name", ["..", "../API_TOKEN", "a/./b", "API_TOKEN/..", "a//b"])
def test_a_secret_name_with_a_dot_segment_is_refused_before_any_store_is_asked(aws, name):
    with pytest.raises(ValueError):
        secrets.secret_paths(name, tenant="local", scope=None)
