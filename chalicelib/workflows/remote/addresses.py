"""The address policy of ``http:`` targets: one policy in every stage.

Applied to the address the request actually connects to: the host is resolved once,
every address it resolves to must be allowed, and the connection goes to one of those
addresses (TLS still verified for the host name, with SNI). A DNS answer that changes
between the check and the request (rebinding) cannot move the request inside: there is
no second resolution.

Addresses are judged as addresses, never as strings: every form a resolver or a socket
accepts for one address (``0``, ``127.1``, ``2130706433``, ``0x7f.1``, ``0177.0.0.1``,
``[::ffff:7f00:1]``, a zone id, a trailing dot) is parsed to the address it reaches
(``parse_address``) before a rule looks at it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

from chalicelib.settings import get_settings

__all__ = [
    "TargetRefused",
    "address_refused",
    "parse_address",
    "reaches_this_machine",
    "allow_private",
    "resolve_target",
    "check_http_url",
]

_LOCAL_STAGES = ("local", "test")

_REFUSED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT (shared address space)
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local: 169.254.169.254 is the instance metadata service
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
        "::/128",
        "::1/128",
        "100::/64",  # discard
        "2001:db8::/32",  # documentation
        "fc00::/7",  # unique local: fd00:ec2::254 is the IPv6 instance metadata service
        "fe80::/10",
        "ff00::/8",
    )
)
# Addresses refused even where private targets are allowed (tests, a local receiver):
# the instance metadata services.
_ALWAYS_REFUSED = tuple(
    ipaddress.ip_network(n) for n in ("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128")
)
# IPv6 forms that carry an IPv4 address: the embedded address is what gets reached.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# "This host on this network": connecting to 0.0.0.0 (or ::) reaches this machine.
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
# inet_aton's shorthands: one to four parts, each decimal, octal (leading 0) or hex (0x).
_IPV4_SHORTHAND = re.compile(r"(?:0[xX][0-9a-fA-F]+|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]+|[0-9]+)){0,3}")


class TargetRefused(Exception):
    """The target's address is not one cronhook may connect to (the message names no URL)."""


_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _embedded_v4(address: _Address) -> _Address:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
        if int(address) >> 32 == 0 and int(address) > 1:  # ::a.b.c.d (IPv4-compatible)
            return ipaddress.IPv4Address(int(address))
    return address


def parse_address(text: str) -> _Address | None:
    """The IP address ``text`` names, in any form a socket accepts; None for a host name.

    Brackets, an IPv6 zone id (``%eth0``, ``%25eth0``) and trailing dots are dropped;
    IPv4 shorthands (``0``, ``127.1``, ``2130706433``, ``0x7f000001``, ``0177.0.0.1``)
    mean what ``inet_aton`` makes of them, which is where a connection would go.
    """
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.split("%", 1)[0].rstrip(".")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if _IPV4_SHORTHAND.fullmatch(text) is None:
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def reaches_this_machine(address: _Address) -> bool:
    """Whether a connection to ``address`` (parsed) stays on this machine."""
    candidate = _embedded_v4(address)
    return candidate.is_loopback or candidate.is_unspecified or candidate in _THIS_NETWORK


def address_refused(text: str, *, allow_private: bool = False) -> bool:
    """Whether an http target may not connect to the IP address ``text`` (any form)."""
    address = parse_address(text)
    if address is None:
        return True
    # An IPv6 form carrying an IPv4 address reaches that IPv4 address: judge that one.
    for candidate in (_embedded_v4(address),):
        if any(candidate in net for net in _ALWAYS_REFUSED if net.version == candidate.version):
            return True
        if allow_private:
            continue
        if any(candidate in net for net in _REFUSED_NETWORKS if net.version == candidate.version):
            return True
        if candidate.is_private or candidate.is_multicast or candidate.is_reserved:
            return True
    return False


def allow_private() -> bool:
    settings = get_settings()
    # The escape hatch exists for tests and a receiver on the developer's own machine: it
    # is honoured only in the local and test stages, never in a deployed one.
    return settings.allow_private_targets and settings.stage in _LOCAL_STAGES


def _aws_endpoint() -> tuple[str, int] | None:
    """The embedded AWS endpoint's host and port (local stack): never a target."""
    endpoint = get_settings().endpoint_url
    if not endpoint:
        return None
    parts = urlsplit(endpoint)
    try:
        return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (one lookup)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _addresses_of(host: str, port: int) -> list[str]:
    """The addresses a connection to ``host`` may go to: an address literal (any form) is
    itself, parsed here; only a host name is looked up."""
    literal = parse_address(host)
    if literal is not None:
        return [str(literal)]
    try:
        return _resolve(host, port)
    except (OSError, UnicodeError):
        raise TargetRefused("its host name does not resolve") from None


def _reaches_aws_endpoint(addresses: list[str], port: int) -> bool:
    """Whether any of ``addresses`` on ``port`` is the local stack's embedded AWS.

    Compared as addresses: any address that stays on this machine (loopback, 0.0.0.0,
    ::, and their IPv4-mapped forms) reaches a server listening on loopback, so all of
    them are the endpoint, and so are the addresses its own host resolves to.
    """
    aws = _aws_endpoint()
    if aws is None or port != aws[1]:
        return False
    try:
        endpoint = {parse_address(a) for a in _resolve(aws[0], aws[1])}
    except (OSError, UnicodeError):
        endpoint = set()
    endpoint = {_embedded_v4(a) for a in endpoint if a is not None}
    for text in addresses:
        address = parse_address(text)
        if address is None or reaches_this_machine(address) or _embedded_v4(address) in endpoint:
            return True
    return False


def resolve_target(host: str, port: int) -> list[str]:
    """The addresses to connect to for ``host``; TargetRefused if any of them is refused."""
    private_ok = allow_private()
    addresses = _addresses_of(host, port)
    if not addresses:
        raise TargetRefused("its host name does not resolve")
    # All, not any: a name that answers one public and one private address is refused,
    # whichever of them a connection would pick.
    if any(address_refused(a, allow_private=private_ok) for a in addresses):
        raise TargetRefused(
            "its host resolves to a private, loopback, link-local or reserved address"
        )
    if _reaches_aws_endpoint(addresses, port):
        raise TargetRefused("it points at the stack's own AWS endpoint")
    return addresses


def check_http_url(url: str) -> str | None:
    """Why ``url`` may not be an http target (naming the host), or None if it may."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "the http target's URL is not valid"
    if parts.scheme not in ("https", "http") or not host:
        return "the http target's URL is not valid"
    if parts.username is not None or parts.password is not None:
        return "the http target's URL may not carry a user name or password"
    if parts.scheme == "http" and not allow_private():
        return "http targets must use https (plain http only with CRONHOOK_ALLOW_PRIVATE_TARGETS)"
    try:
        resolve_target(host, port or (443 if parts.scheme == "https" else 80))
    except TargetRefused as exc:
        return f"the http target's host {host!r} is refused: {exc}"
    return None
