"""What the leads capability tells the capabilities above it, in the same unit of work (platform.messagebus).

Each message is published by a leads use case and answered by the subscribers `leadcrm.wiring` lists.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leadcrm.directory.rules import Actor
from leadcrm.platform.db.uow import UnitOfWork


@dataclass(frozen=True)
class LeadCreated:
    """Intake is about to insert a lead (its id chosen): subscribers write what goes with it in the same
    statement. Answers: `CreationWrites` or None."""

    organization_id: uuid.UUID
    lead_id: uuid.UUID
    organization_timezone: str | None
    contact_task_title: str


@dataclass(frozen=True)
class CreationWrites:
    """What a subscriber writes with a new lead, in the lead's own INSERT (one round trip): values of the
        lead row's columns (SQL expressions allowed, which may read the CTEs), and data-modifying CTEs it carries
    (each named by its subscriber). Built
        so that they cannot fail (values valid by construction, conflicts ignored): a failure would fail the
        create, which they must never do."""

    lead_values: Mapping[str, Any] = field(default_factory=dict)
    statements: Sequence[Any] = ()


@dataclass(frozen=True)
class LeadsCreated:
    """Intake is about to insert many leads of one organization in one statement (`INSERT … SELECT … FROM`
    its rows; the ids chosen): subscribers write what goes with each in that statement. `lead_id` is the id
    column of those rows, for values correlated per lead. Answers: `CreationWrites` or None, as for
    `LeadCreated` (each lead value an expression over the row)."""

    organization_id: uuid.UUID
    organization_timezone: str | None
    contact_task_titles: Mapping[uuid.UUID, str]  # lead id -> its contact task's title
    lead_id: Any


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
