"""The address policy of ``http:`` targets: one policy in every stage.

Applied to the address the request actually connects to: the host is resolved once,
every address it resolves to must be allowed, and the connection goes to one of those
addresses (TLS still verified for the host name, with SNI). A DNS answer that changes
between the check and the request (rebinding) cannot move the request inside: there is
no second resolution.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from chalicelib.settings import get_settings

__all__ = [
    "TargetRefused",
    "address_refused",
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


def address_refused(text: str, *, allow_private: bool = False) -> bool:
    """Whether an http target may not connect to the IP address ``text``."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
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


def resolve_target(host: str, port: int) -> list[str]:
    """The addresses to connect to for ``host``; TargetRefused if any of them is refused."""
    private_ok = allow_private()
    try:
        addresses = _resolve(host, port)
    except (OSError, UnicodeError):
        raise TargetRefused("its host name does not resolve") from None
    if not addresses:
        raise TargetRefused("its host name does not resolve")
    # All, not any: a name that answers one public and one private address is refused,
    # whichever of them a connection would pick.
    if any(address_refused(a, allow_private=private_ok) for a in addresses):
        raise TargetRefused(
            "its host resolves to a private, loopback, link-local or reserved address"
        )
    aws = _aws_endpoint()
    if aws is not None and port == aws[1]:
        try:
            endpoint_addresses = set(_resolve(aws[0], aws[1]))
        except OSError:
            endpoint_addresses = set()
        if endpoint_addresses & set(addresses):
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
