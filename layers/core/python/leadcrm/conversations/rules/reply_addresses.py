"""Signed addresses: the Reply-To every outbound mail carries, and the unsubscribe token of a bulk mail.

A reply lands on `contact+<tag>.<signature>@<inbound domain>`:

- `<conversation id>` (32 hex digits): a 1:1 thread (spec G9/G10);
- `ol-<lead id>`: a bulk mail's lead-keyed address; the thread is found or created on the first reply
  (spec "Bulk email is broadcast-on-send, thread-on-reply").

The signature is an HMAC-SHA256 over the purpose and the id, truncated to 80 bits and written in lowercase
base32 (mail systems may lowercase a local part). Without the key nobody can address a reply into a thread
or a lead they were not mailed from; the check is constant-time. The longest local part (`contact+ol-` +
32 + 1 + 16 = 60 characters) stays inside RFC 5321's 64.

Pure: the keys come from the caller (`platform.mail_keys`). Several keys may be given to verify (the first
signs): that is how a key is rotated without breaking replies to mail sent before.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

REPLY_LOCAL_PART = "contact"
LEAD_TAG_PREFIX = "ol-"
SIGNATURE_BYTES = 10  # 80 bits, 16 base32 characters
SIGNATURE_LENGTH = 16


class AddressKind(StrEnum):
    CONVERSATION = "conversation"
    LEAD = "lead"


@dataclass(frozen=True)
class AddressTarget:
    """What a recipient address points at; the service resolves it to rows (and their organization)."""

    kind: AddressKind
    id: uuid.UUID


def signature(key: bytes, purpose: str, target_id: uuid.UUID) -> str:
    digest = hmac.new(key, f"{purpose}:{target_id.hex}".encode(), hashlib.sha256).digest()
    return base64.b32encode(digest[:SIGNATURE_BYTES]).decode().lower()


def signature_matches(keys: Sequence[bytes], purpose: str, target_id: uuid.UUID, given: str) -> bool:
    """Constant-time against each key (each comparison is; the number of keys is not a secret)."""
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(signature(key, purpose, target_id), given)
    return matched


def reply_address(key: bytes, target: AddressTarget, domain: str) -> str:
    tag = target.id.hex if target.kind is AddressKind.CONVERSATION else f"{LEAD_TAG_PREFIX}{target.id.hex}"
    return f"{REPLY_LOCAL_PART}+{tag}.{signature(key, target.kind.value, target.id)}@{domain}"


def parse_reply_address(address: str, keys: Sequence[bytes], domain: str) -> AddressTarget | None:
    """The target of a reply address of ours with a valid signature; None for anything else.

    Case-insensitive (a local part may come back lowercased or uppercased); an address on another domain,
    a malformed tag or a wrong signature is None, never an error.
    """
    local, at, address_domain = address.strip().strip("<>").lower().rpartition("@")
    if not at or address_domain != domain.lower():
        return None
    prefix = f"{REPLY_LOCAL_PART}+"
    if not local.startswith(prefix):
        return None
    tag, dot, given = local[len(prefix) :].rpartition(".")
    if not dot or len(given) != SIGNATURE_LENGTH:
        return None
    kind = AddressKind.CONVERSATION
    if tag.startswith(LEAD_TAG_PREFIX):
        kind, tag = AddressKind.LEAD, tag[len(LEAD_TAG_PREFIX) :]
    if len(tag) != 32:
        return None
    try:
        target_id = uuid.UUID(hex=tag)
    except ValueError:
        return None
    if not signature_matches(keys, kind.value, target_id, given):
        return None
    return AddressTarget(kind=kind, id=target_id)


# -- unsubscribe tokens (the bulk mail's link and List-Unsubscribe) -----------------------------------------

UNSUBSCRIBE_PURPOSE = "unsubscribe"


def unsubscribe_token(key: bytes, lead_id: uuid.UUID) -> str:
    return f"{lead_id.hex}.{signature(key, UNSUBSCRIBE_PURPOSE, lead_id)}"


def parse_unsubscribe_token(token: str, keys: Sequence[bytes]) -> uuid.UUID | None:
    """The lead id of a token we issued; None when it is malformed or its signature does not match."""
    tag, dot, given = token.strip().lower().partition(".")
    if not dot or len(tag) != 32 or len(given) != SIGNATURE_LENGTH:
        return None
    try:
        lead_id = uuid.UUID(hex=tag)
    except ValueError:
        return None
    return lead_id if signature_matches(keys, UNSUBSCRIBE_PURPOSE, lead_id, given) else None
