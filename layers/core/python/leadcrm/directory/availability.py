"""Staff availability: when a staff member takes new leads from the assignment rules (leads.assignment).

`away_until`: an instant until which they are away (a holiday, sick leave); past it, they are back without
anyone touching the setting. `working_hours`: windows per ISO weekday ({"day": 1-7, "from": "HH:MM",
"to": "HH:MM"}) in the organization's timezone; a window whose end is before its start runs past midnight
and belongs to the day it starts on; none at all means any time. Kept per organization.

Staff read and set their own; an owner or admin anyone's on the staff (403 OWN_AVAILABILITY_ONLY for a coach
naming someone else, 404 STAFF_NOT_FOUND for someone who is not active staff here).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import STAFF_ROLES, Actor
from leadcrm.directory.staff import is_active_member
from leadcrm.directory.tables import staff_availability
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import Forbidden, NotFound


def _require_target(conn: Connection, actor: Actor, user_id: uuid.UUID) -> None:
    if user_id != actor.user_id and not actor.is_manager:
        raise Forbidden("Staff read and set only their own availability.", code="OWN_AVAILABILITY_ONLY")
    if not is_active_member(conn, actor.organization_id, user_id, STAFF_ROLES):
        raise NotFound("No such staff member in this organization.", code="STAFF_NOT_FOUND")


def read_availability(conn: Connection, actor: Actor, user_id: uuid.UUID) -> dict[str, Any]:
    _require_target(conn, actor, user_id)
    row = (
        conn.execute(
            select(
                staff_availability.c.away_until, staff_availability.c.working_hours, staff_availability.c.updated_at
            ).where(
                staff_availability.c.organization_id == actor.organization_id,
                staff_availability.c.user_id == user_id,
            )
        )
        .mappings()
        .first()
    )
    found = dict(row) if row is not None else {"away_until": None, "working_hours": [], "updated_at": None}
    return {"user_id": user_id, **found}


def set_availability(
    conn: Connection,
    actor: Actor,
    user_id: uuid.UUID,
    *,
    away_until: datetime | None,
    working_hours: list[dict[str, Any]],
) -> dict[str, Any]:
    """Replaces the person's availability (a PUT: the same body twice is the same state)."""
    _require_target(conn, actor, user_id)
    values = {"away_until": away_until, "working_hours": working_hours}
    conn.execute(
        pg_insert(staff_availability)
        .values(organization_id=actor.organization_id, user_id=user_id, **values)
        .on_conflict_do_update(index_elements=["organization_id", "user_id"], set_={**values, "updated_at": sql_now()})
    )
    return read_availability(conn, actor, user_id)
