"""The address policy of http targets, the lambda name scope, and masked target URLs.

The connection tests talk to real servers on this machine (plain HTTP and TLS). The
name resolution is the network's, and this machine has no DNS: where a test needs a
host name (TLS is verified for a name; a rebinding attack is a name whose answers
change), it plays the resolver by replacing ``remote.addresses._resolve``, the one lookup an
http target makes per run.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from chalicelib import assembly
from chalicelib.domain.errors import ValidationError
from chalicelib.services import audit, triggers
from chalicelib.settings import reset_settings
from chalicelib.store import kms
from chalicelib.workflows import remote
from chalicelib.workflows.remote import addresses, http_target

# -- the policy, address by address ----------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "127.0.0.1",
        "127.8.8.8",
        "0.0.0.0",
        "169.254.169.254",  # instance metadata
        "100.64.0.1",  # carrier-grade NAT
        "224.0.0.1",  # multicast
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fc00::1",
        "fd00:ec2::254",  # IPv6 instance metadata
        "fe80::1",
        "ff02::1",
        "::ffff:10.0.0.1",  # IPv4-mapped private
        "::ffff:169.254.169.254",
        "::ffff:127.0.0.1",
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "not-an-address",
    ],
)
def test_private_loopback_link_local_cgnat_multicast_and_mapped_addresses_are_refused(address):
    assert remote.address_refused(address)


@pytest.mark.parametrize(
    "address", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "::ffff:93.184.215.14"]
)
def test_public_addresses_are_allowed(address):
    assert not remote.address_refused(address)


@pytest.mark.parametrize("address", ["169.254.169.254", "fd00:ec2::254", "fe80::1"])
def test_metadata_addresses_are_refused_even_where_private_targets_are_allowed(address):
    assert remote.address_refused(address, allow_private=True)
    assert not remote.address_refused("10.0.0.1", allow_private=True)


def test_the_private_targets_setting_is_ignored_in_a_deployed_stage(monkeypatch):
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    monkeypatch.setenv("CRONHOOK_STAGE", "prod")
    reset_settings()
    try:
        assert remote.check_http_url("https://127.0.0.1/hook") is not None
        assert remote.check_http_url("http://93.184.215.14/hook") is not None
        assert remote.check_http_url("https://93.184.215.14/hook") is None
    finally:
        reset_settings()


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("https://[fd00:ec2::254]/latest/meta-data", "fd00:ec2::254"),
        ("https://10.0.0.5/hook", "10.0.0.5"),
        ("https://[::ffff:192.168.0.1]/hook", "::ffff:192.168.0.1"),
        ("https://100.64.1.1/hook", "100.64.1.1"),
        ("https://no-such-host.invalid/hook", "no-such-host.invalid"),
    ],
)
def test_a_refused_target_is_a_422_on_create_naming_the_field_and_the_host(
    aws, clock, root, url, host
):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root, {"workflow": f"http:{url}", "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"
    assert repr(host) in caught.value.message


def test_the_stacks_own_aws_endpoint_is_never_a_target(aws, clock, root, monkeypatch):
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    reset_settings()
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root,
            {"workflow": f"http:{aws.endpoint}/moto-api/reset", "schedule": {"interval_s": 60}},
            now=clock(),
        )
    assert "AWS endpoint" in caught.value.message


# -- the connection goes to the address that was checked ----------------------------------------


class Server:
    """A local HTTP(S) server that answers every POST 200 and records what it saw."""

    def __init__(self, *, tls: ssl.SSLContext | None = None):
        self.posts: list[str] = []
        self.sni: list[str | None] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts.append(self.headers.get("Host", ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        if tls is not None:
            tls.sni_callback = lambda sock, name, ctx: self.sni.append(name)
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _certificate(tmp_path, name: str) -> tuple[str, str]:
    """A self-signed certificate for ``name``: (cert file, key file)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


class Resolver:
    """Plays the DNS: ``answers[host]`` is a list of answers, one per lookup (the last repeats)."""

    def __init__(self, answers: dict[str, list[list[str]]]):
        self.answers = answers
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.answers:  # an IP literal, or the AWS endpoint's host
            return [str(info[4][0]) for info in socket.getaddrinfo(host, port)]
        seen = self.answers[host]
        return seen.pop(0) if len(seen) > 1 else seen[0]


@pytest.fixture
def allow_private(aws, monkeypatch) -> Iterator[None]:
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    reset_settings()
    kms.clear_cache()
    yield
    reset_settings()


def _fire(aws, clock) -> list[str]:
    clock.advance(60)
    assembly.tick(now=clock())
    return aws.drain(assembly.build_runner(clock=clock))


def _last_error(root, trigger_id: str) -> str | None:
    return triggers.list_trigger_runs(root, trigger_id, {})["items"][0]["error"]


def test_tls_is_verified_for_the_host_name_on_the_address_that_was_resolved(
    aws, clock, root, allow_private, monkeypatch, tmp_path
):
    cert, key = _certificate(tmp_path, "receiver.test")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server = Server(tls=served)
    try:
        # No DNS knows receiver.test: the connection can only come from the one lookup.
        resolver = Resolver({"receiver.test": [["127.0.0.1"]], "impostor.test": [["127.0.0.1"]]})
        monkeypatch.setattr(addresses, "_resolve", resolver)
        monkeypatch.setattr(
            http_target, "_tls_context", lambda: ssl.create_default_context(cafile=cert)
        )
        good = triggers.create_trigger(
            root,
            {
                "workflow": f"http:https://receiver.test:{server.port}/hook",
                "schedule": {"interval_s": 60},
            },
            now=clock(),
        )
        bad = triggers.create_trigger(
            root,
            {
                "workflow": f"http:https://impostor.test:{server.port}/hook",
                "schedule": {"interval_s": 60},
            },
            now=clock(),
        )
        resolver.lookups.clear()
        assert sorted(_fire(aws, clock)) == ["failed", "succeeded"]
        # One lookup per run, and what it answered is where the request went.
        assert sorted(resolver.lookups) == ["impostor.test", "receiver.test"]
        assert server.posts == [f"receiver.test:{server.port}"]
        assert "receiver.test" in server.sni and "impostor.test" in server.sni
        assert _last_error(root, good["id"]) is None
        error = _last_error(root, bad["id"])
        assert error == (
            "http target's TLS certificate was refused: it is not valid for the target's host name"
        )
    finally:
        server.close()


def test_a_name_that_rebinds_to_a_private_address_after_create_fails_its_run_naming_no_url(
    aws, clock, root, monkeypatch
):
    server = Server()
    try:
        # Public when the trigger is created, private when the run connects: the run's own
        # lookup is the one checked, and nothing is sent.
        resolver = Resolver({"rebind.test": [["93.184.215.14"], ["127.0.0.1"]]})
        monkeypatch.setattr(addresses, "_resolve", resolver)
        created = triggers.create_trigger(
            root,
            {
                "workflow": f"http:https://rebind.test:{server.port}/hook?token=abc123",
                "schedule": {"interval_s": 60},
            },
            now=clock(),
        )
        assert _fire(aws, clock) == ["failed"]
        error = _last_error(root, created["id"])
        assert error == (
            "http target refused: its host resolves to a private, loopback, link-local or "
            "reserved address"
        )
        assert server.posts == []
    finally:
        server.close()


def test_a_name_with_one_public_and_one_private_answer_is_refused(aws, clock, root, monkeypatch):
    monkeypatch.setattr(
        addresses, "_resolve", Resolver({"mixed.test": [["93.184.215.14", "10.0.0.7"]]})
    )
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root,
            {"workflow": "http:https://mixed.test/hook", "schedule": {"interval_s": 60}},
            now=clock(),
        )
    assert "'mixed.test'" in caught.value.message


# -- lambda: targets are the tenant's own -----------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "lambda:cronhook-workflow-report",  # the old shared prefix
        "lambda:cronhook-test-acme-report",  # another tenant
        "lambda:cronhook-prod-local-report",  # another stage
        "lambda:cronhook-test-local-",  # the prefix alone
        "lambda:cronhook-test-runner",  # cronhook's own functions
        "lambda:arn:aws:lambda:us-east-1:123456789012:function:cronhook-test-acme-report",
        "lambda:arn:aws:s3:::cronhook-test-local-x",
        "lambda:cronhook-test-local-a:b:c",
        "lambda:cronhook-test-local-a/b",
    ],
)
def test_a_lambda_target_outside_the_tenants_prefix_is_a_422(aws, clock, root, target):
    with pytest.raises(ValidationError) as caught:
        triggers.create_trigger(
            root, {"workflow": target, "schedule": {"interval_s": 60}}, now=clock()
        )
    assert caught.value.field == "workflow"


def test_a_patch_cannot_point_a_trigger_at_another_tenants_function(aws, clock, root):
    created = triggers.create_trigger(
        root,
        {"workflow": "lambda:cronhook-test-local-report", "schedule": {"interval_s": 60}},
        now=clock(),
    )
    with pytest.raises(ValidationError) as caught:
        triggers.patch_trigger(
            root, created["id"], {"workflow": "lambda:cronhook-test-acme-report"}, now=clock()
        )
    assert caught.value.field == "workflow"


# -- query-string tokens are masked where people look -------------------------------------------


def test_query_values_of_an_http_target_are_masked_in_views_and_audit(aws, clock, root):
    url = "https://93.184.215.14/hook?token=s3cr3t-value&team=7"
    created = triggers.create_trigger(
        root, {"workflow": f"http:{url}", "schedule": {"interval_s": 60}}, now=clock()
    )
    masked = "http:https://93.184.215.14/hook?token=[masked]&team=[masked]"
    assert created["workflow"] == masked and created["display_name"] == masked
    listed = triggers.list_triggers(root, {})["items"]
    assert [t["workflow"] for t in listed] == [masked]
    # The masked form sent back (GET, edit, PATCH) leaves the real target as it was.
    triggers.patch_trigger(root, created["id"], {"workflow": masked, "title": "t"}, now=clock())
    from chalicelib.store import triggers as triggers_store

    assert triggers_store.get_trigger(created["id"]).workflow == f"http:{url}"
    entries = audit.list_audit(root, {"trigger_id": created["id"]})["items"]
    assert entries and "s3cr3t-value" not in json.dumps(entries)
    triggers.fire_now(root, created["id"], now=clock())  # a run in flight is listed too
    runs = triggers.list_trigger_runs(root, created["id"], {})["items"]
    assert runs and all(r["workflow"] == masked for r in runs)
    assert "s3cr3t-value" not in json.dumps(triggers.get_trigger_view(root, created["id"]))


@pytest.mark.parametrize(
    ("workflow", "shown"),
    [
        ("http:https://h.example/p", "http:https://h.example/p"),
        ("http:https://h.example/p?abc123", "http:https://h.example/p?[masked]"),
        ("http:https://h.example/p?a=1#frag", "http:https://h.example/p?a=[masked]#[masked]"),
        ("echo", "echo"),
        ("lambda:cronhook-test-local-x", "lambda:cronhook-test-local-x"),
    ],
)
def test_display_target_masks_query_values_and_fragments_only(workflow, shown):
    assert remote.display_target(workflow) == shown
