"""Lead versions (issue 26): a person's write may name the version of the lead it read, and is refused when
someone wrote the lead since.

PostgreSQL keeps `leads.version` (migration 0026): a trigger bumps it once per transaction that writes the
lead row, and the placement triggers touch the row, so every write to the lead, its placements or its
follow-up counts, whatever use case made it. This module only checks: `require_version` takes the lead's row
lock (FOR UPDATE, the lock every lead write takes first) and compares, so between the check and the commit no
other writer can change the lead: the check and the write are atomic. A write without a version (API clients,
automations) is not checked, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, select

from leadcrm.leads.tables import LEAD_COLUMNS, leads
from leadcrm.platform.errors import Conflict, NotFound

LEAD_VERSION_CONFLICT = "LEAD_VERSION_CONFLICT"


class LeadVersionConflict(Conflict):
    """409: the lead is no longer at the version the caller read. `lead` is the lead now (LEAD_COLUMNS), which
    the API puts in the error body so that the screen can show what changed."""

    def __init__(self, lead: Mapping[str, Any], expected: int) -> None:
        super().__init__(
            "Someone changed this lead since you read it: review it and try again.",
            code=LEAD_VERSION_CONFLICT,
            expectedVersion=expected,
            currentVersion=lead["version"],
        )
        self.lead = dict(lead)


def is_stale(current: int, expected: int | None) -> bool:
    """Whether a write that read `expected` must be refused on a lead now at `current` (None: not checked)."""
    return expected is not None and expected != current


def require_version(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, expected: int | None
) -> dict[str, Any] | None:
    """With `expected`: takes the lead's row lock and refuses (409) a lead at any other version; the lead
    (LEAD_COLUMNS). Without: nothing (no statement). 404 LEAD_NOT_FOUND for another organization's lead."""
    if expected is None:
        return None
    row = (
        conn.execute(
            select(*LEAD_COLUMNS)
            .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
            .with_for_update()
        )
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    if is_stale(row["version"], expected):
        raise LeadVersionConflict(row, expected)
    return dict(row)
