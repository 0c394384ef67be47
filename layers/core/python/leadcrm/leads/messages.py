"""What the leads capability tells the capabilities above it, in the same unit of work (platform.messagebus).

Each message is published by a leads use case and answered by the subscribers `leadcrm.wiring` lists.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leadcrm.directory.rules import Actor
from leadcrm.platform.db.uow import UnitOfWork


@dataclass(frozen=True)
class LeadCreated:
    """A lead row was just inserted by intake. Answers: the lead columns a subscriber wrote (the auto-task's
    statement also seeds the lead's follow-up), or None."""

    organization_id: uuid.UUID
    lead: Mapping[str, Any]
    contact_task_title: str


@dataclass(frozen=True)
class ScoringInputsChanged:
    """A write changed what a lead's score is computed from (its details, a touch). Answers: per lead id, the
    lead columns the subscriber rewrote (its score fields)."""

    organization_id: uuid.UUID
    lead_ids: Sequence[uuid.UUID]


@dataclass(frozen=True)
class LeadErasing:
    """A lead is about to be deleted (leads.erase), under its row lock. Subscribers make what they own forget
    the person or delete what must not outlive the lead. Answers: `ErasingAnswer` or None."""

    organization_id: uuid.UUID
    lead_id: uuid.UUID


@dataclass(frozen=True)
class ErasingAnswer:
    """What a subscriber did for an erase: the tasks it deleted, and the other leads that were the same
    person (duplicates merged into this one), whose stored answers must go too."""

    tasks_deleted: int = 0
    same_person_lead_ids: Sequence[uuid.UUID] = ()


@dataclass(frozen=True)
class LeadBecameMember:
    """A lead was attached to a membership (convert, link, self-signup)."""

    uow: UnitOfWork
    actor: Actor
    lead_id: uuid.UUID
    membership_id: uuid.UUID
