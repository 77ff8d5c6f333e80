"""Target addresses are judged as addresses, in every form (issue 26, item 3).

A socket reaches the same address through many spellings: ``0``, ``127.1``,
``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``[::ffff:7f00:1]``, a zone id, a trailing
dot. Each form must meet the rule of the address it reaches: the local stack's embedded
AWS port is refused even with ``CRONHOOK_ALLOW_PRIVATE_TARGETS=1`` (one fire at
``/moto-api/reset`` wiped every tenant's tables), and so are the metadata services; in a
deployed stage every private, loopback and "this network" form is refused. These tests
use address literals only: no DNS is needed, except where ``_resolve`` plays a resolver.
"""

from __future__ import annotations

import ipaddress

import pytest

from chalicelib.settings import reset_settings
from chalicelib.workflows import remote
from chalicelib.workflows.remote import addresses

AWS_PORT = 4566

# Every spelling of "this machine" a URL may carry (the forms of the audit first).
THIS_MACHINE = [
    "0.0.0.0",
    "0",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "127.0.0.1",
    "127.1",
    "127.0.0.2",
    "2130706433",
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1",
    "017700000001",
    "127.0.0.1.",
    "0.0.0.0.",
    "[::]",
    "[::1]",
    "[::ffff:0.0.0.0]",
    "[::ffff:0:0]",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::1]",
    "[::1%25lo]",
    "localhost",
]

# Every spelling of the instance metadata services.
METADATA = [
    "169.254.169.254",
    "169.254.169.254.",
    "2852039166",
    "0xa9fea9fe",
    "0251.0376.0251.0376",
    "169.254.43518",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::1]",
    "[::169.254.169.254]",
    "[fd00:ec2::254]",
    "[fe80::1]",
    "[fe80::1%25eth0]",
]

# Private networks, spelled otherwise.
PRIVATE = [
    "10.0.0.1",
    "10.1",
    "167772161",
    "0xa000001",
    "012.0.0.1",
    "10.0.0.1.",
    "[::ffff:a00:1]",
    "[::ffff:10.0.0.1]",
    "192.168.1",
    "0xc0.0xa8.1.1",
    "[fd12::1]",
]


@pytest.fixture
def local_stack_with_private_targets(monkeypatch):
    """Settings as the local stack has them with CRONHOOK_ALLOW_PRIVATE_TARGETS=1."""
    monkeypatch.setenv("CRONHOOK_STAGE", "local")
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    monkeypatch.setenv("CRONHOOK_AWS_ENDPOINT", f"http://127.0.0.1:{AWS_PORT}")
    reset_settings()
    yield
    reset_settings()


@pytest.fixture
def deployed_stage(monkeypatch):
    """A deployed stage, where the private-targets setting is ignored."""
    monkeypatch.setenv("CRONHOOK_STAGE", "prod")
    monkeypatch.setenv("CRONHOOK_ALLOW_PRIVATE_TARGETS", "1")
    monkeypatch.delenv("CRONHOOK_AWS_ENDPOINT", raising=False)
    reset_settings()
    yield
    reset_settings()


@pytest.mark.parametrize("host", THIS_MACHINE)
def test_every_form_of_this_machine_on_the_embedded_aws_port_is_refused_with_private_targets_on(
    local_stack_with_private_targets, host
):
    problem = remote.check_http_url(f"http://{host}:{AWS_PORT}/moto-api/reset")
    assert problem is not None and "AWS endpoint" in problem, problem
    with pytest.raises(remote.TargetRefused):
        remote.resolve_target(host.strip("[]").replace("%25", "%"), AWS_PORT)


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "[::ffff:7f00:1]", "127.1", "10.0.0.1"])
def test_the_same_forms_on_another_port_are_allowed_with_private_targets_on(
    local_stack_with_private_targets, host
):
    assert remote.check_http_url(f"http://{host}:8080/hook") is None


@pytest.mark.parametrize("resolved", ["0.0.0.0", "::ffff:127.0.0.1", "::", "127.0.0.5"])
def test_a_host_name_resolving_to_this_machine_on_the_aws_port_is_refused(
    local_stack_with_private_targets, monkeypatch, resolved
):
    real = addresses._resolve
    monkeypatch.setattr(
        addresses,
        "_resolve",
        lambda host, port: [resolved] if host == "receiver.test" else real(host, port),
    )
    with pytest.raises(remote.TargetRefused, match="AWS endpoint"):
        remote.resolve_target("receiver.test", AWS_PORT)
    assert remote.resolve_target("receiver.test", 8080) == [resolved]


@pytest.mark.parametrize("host", METADATA)
def test_every_form_of_the_metadata_services_is_refused_with_private_targets_on(
    local_stack_with_private_targets, host
):
    assert remote.check_http_url(f"http://{host}/latest/meta-data") is not None


@pytest.mark.parametrize("host", METADATA + PRIVATE + THIS_MACHINE)
def test_every_form_of_a_refused_address_is_refused_in_a_deployed_stage(deployed_stage, host):
    assert remote.check_http_url(f"https://{host}/hook") is not None


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("0", "0.0.0.0"),
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("[::ffff:7f00:1]", "::ffff:7f00:1"),
        ("fe80::1%eth0", "fe80::1"),
        ("[fe80::1%25eth0]", "fe80::1"),
        ("93.184.215.14", "93.184.215.14"),
        ("example.com", None),
        ("example.com.", None),
        ("08.0.0.1", None),  # not octal: not an address, a (bad) host name
        ("1.2.3.4.5", None),
    ],
)
def test_an_address_is_parsed_from_every_form_a_socket_accepts(text, address):
    expected = ipaddress.ip_address(address) if address else None
    assert addresses.parse_address(text) == expected


@pytest.mark.parametrize("text", ["0", "127.1", "2130706433", "[::1]", "127.0.0.1.", "0x0a.1"])
def test_address_refused_reads_every_form(text):
    assert remote.address_refused(text)
    assert not remote.address_refused("93.184.215.14.")


def test_public_forms_stay_allowed_in_a_deployed_stage(deployed_stage):
    for host in ("93.184.215.14", "1572394766", "[::ffff:93.184.215.14]"):
        assert remote.check_http_url(f"https://{host}/hook") is None, host
