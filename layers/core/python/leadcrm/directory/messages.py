"""What the directory tells the capabilities above it, in the same transaction (platform.messagebus).

Each message is published by a directory sync use case and answered by the subscribers `leadcrm.wiring` lists.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leadcrm.platform.db.uow import UnitOfWork


@dataclass(frozen=True)
class MembershipLeftStaff:
    """A membership that was active staff no longer is (a platform event changed its status or role, or
    deleted it). Answered by deals: the member's open work goes to the default assignee.

    `source_key` names the platform's change, so a redelivery hands nothing over twice (None: unnamed)."""

    uow: UnitOfWork
    organization_id: uuid.UUID
    membership_id: uuid.UUID
    user_id: uuid.UUID
    source_key: str | None


@dataclass(frozen=True)
class HeldEventsReleased:
    """Events another capability held until a membership was active (directory.held) are due: the composition
    root applies each as if it had just arrived, in this transaction."""

    organization_id: uuid.UUID
    membership_id: uuid.UUID
    events: Sequence[tuple[str, dict[str, Any]]]
