"""An endpoint's addresses, resolved now and checked (rules.addresses): at save time in the API, and again
by the webhook_delivery function right before it connects (a name may point elsewhere by then).

No SQLAlchemy, no pydantic: the webhook_delivery function, outside the VPC, imports this module.
"""

from __future__ import annotations

import os
import socket

from leadcrm.integrations.rules.addresses import (
    URL_UNRESOLVABLE,
    Address,
    Network,
    Refused,
    Target,
    check_addresses,
    parse_allow_list,
    parse_url,
)

ALLOW_PRIVATE_HOSTS = "WEBHOOK_ALLOW_PRIVATE_HOSTS"


def allow_list() -> tuple[Network, ...]:
    """The addresses that may be private (`WEBHOOK_ALLOW_PRIVATE_HOSTS`; unset in AWS), read on each call."""
    return parse_allow_list(os.environ.get(ALLOW_PRIVATE_HOSTS))


def resolve(target: Target) -> list[str]:
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise Refused(URL_UNRESOLVABLE, f"{target.host} does not resolve to an address.") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def checked_target(url: str) -> tuple[Target, list[Address]]:
    """The URL's parts and its addresses, every one public or allow-listed; Refused otherwise."""
    target = parse_url(url)
    return target, check_addresses(target, resolve(target), allow_list())
