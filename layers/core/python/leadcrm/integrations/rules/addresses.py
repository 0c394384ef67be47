"""Where a webhook may go: an HTTPS URL whose every address is public (issue 25: "so the feature cannot be
used to reach our own network").

Refused: private (RFC 1918), loopback, link-local (169.254/16 with the metadata service, fe80::/10), CGNAT
(100.64/10), multicast, unspecified, reserved and documentation ranges, IPv6 unique-local (fc00::/7) and
IPv4-mapped forms of any of those. The allow-list (`WEBHOOK_ALLOW_PRIVATE_HOSTS`, comma-separated addresses
or networks, e.g. `127.0.0.1` or `127.0.0.0/8`; empty in AWS) lets the local stack and tests reach a receiver
on this machine; a URL whose addresses are all allow-listed may also be plain http.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_URL_LENGTH = 2048
CGNAT = ipaddress.ip_network("100.64.0.0/10")

# Refusal codes (the API's 400 codes, and the reason an endpoint is disabled at send time).
URL_INVALID = "WEBHOOK_URL_INVALID"
URL_NOT_HTTPS = "WEBHOOK_URL_NOT_HTTPS"
URL_UNRESOLVABLE = "WEBHOOK_URL_UNRESOLVABLE"
ADDRESS_NOT_PUBLIC = "WEBHOOK_ADDRESS_NOT_PUBLIC"


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with its query


class Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def parse_allow_list(text: str | None) -> tuple[Network, ...]:
    """`127.0.0.1, ::1, 10.1.0.0/16` -> networks; an entry that is not an address is ignored."""
    networks: list[Network] = []
    for part in (text or "").split(","):
        try:
            networks.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            continue
    return tuple(networks)


def parse_url(url: str) -> Target:
    """The parts of a webhook URL; http is refused later unless its addresses are allow-listed."""
    if len(url) > MAX_URL_LENGTH or any(c.isspace() or ord(c) < 32 for c in url):
        raise Refused(URL_INVALID, "The URL is not a valid absolute URL.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused(URL_INVALID, "The URL is not a valid absolute URL.") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise Refused(URL_NOT_HTTPS, "The URL must be https://.")
    if parts.username is not None or parts.password is not None:
        raise Refused(URL_INVALID, "The URL must not carry credentials.")
    default_port = 443 if parts.scheme == "https" else 80
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname.lower().rstrip("."), port or default_port, path)


def is_public(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            return is_public(mapped)
    if isinstance(address, ipaddress.IPv4Address) and address in CGNAT:
        return False
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_unspecified
        or address.is_reserved
        or not address.is_global
    )


def check_addresses(target: Target, addresses: Iterable[str], allow: Sequence[Network]) -> list[Address]:
    """The addresses to connect to, all public or allow-listed (every one of a name's addresses is checked:
    one private answer among public ones is refused, so a name cannot be made to point inward)."""
    parsed = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]
    if not parsed:
        raise Refused(URL_UNRESOLVABLE, f"{target.host} does not resolve to an address.")
    allowed = [a for a in parsed if any(a in network for network in allow)]
    for address in parsed:
        if address not in allowed and not is_public(address):
            raise Refused(
                ADDRESS_NOT_PUBLIC,
                "The URL must point at a public address (not private, loopback, link-local or reserved).",
            )
    if target.scheme != "https" and len(allowed) != len(parsed):
        raise Refused(URL_NOT_HTTPS, "The URL must be https://.")
    return parsed
