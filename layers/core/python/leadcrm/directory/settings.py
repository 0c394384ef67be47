"""An organization's settings as its owners and admins change them (PATCH …/settings).

Who owns which field (directory.rules.SHARED_SETTINGS):
- name, timezone, country, locale are shared with the platform's organization.* events: each write stamps
  the field's instant in `organizations.settings_changed_at` (the route's instant: the clock's),
  and a change older than the field's stamp is not applied (`settings_to_apply`), whichever side made it;
- features are the platform's alone (plans): read here, never written;
- the default assignee is LeadCRM's alone: written through directory.default_assignee, as PUT
  …/default-assignee does.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from leadcrm.directory.default_assignee import set_default_assignee
from leadcrm.directory.queries import SETTINGS_COLUMNS, read_settings, settings_view
from leadcrm.directory.rules import SHARED_SETTINGS, Actor, settings_to_apply
from leadcrm.directory.tables import organizations
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork

DEFAULT_ASSIGNEE = "default_assignee_user_id"
SETTINGS = frozenset({*SHARED_SETTINGS, DEFAULT_ASSIGNEE})


def update_settings(uow: UnitOfWork, actor: Actor, changes: dict[str, Any]) -> dict[str, Any]:
    """Apply the settings sent (only those), and answer the settings as they now are.

    The organization's row is locked while the shared fields' stamps are read and written, so a platform
    event applied at the same time is judged against this change, or this change against it."""
    unknown = set(changes) - SETTINGS
    if unknown:
        raise ValueError(f"not organization settings: {sorted(unknown)}")
    conn = uow.connection
    if DEFAULT_ASSIGNEE in changes:
        set_default_assignee(uow, actor, changes[DEFAULT_ASSIGNEE])  # 400 ASSIGNEE_NOT_STAFF
    shared = {field: value for field, value in changes.items() if field in SHARED_SETTINGS}
    if not shared:
        return read_settings(conn, actor.organization_id)
    this_organization = organizations.c.id == actor.organization_id
    current = conn.execute(
        select(organizations.c.settings_changed_at, sql_now().label("now")).where(this_organization).with_for_update()
    ).one()
    applied = settings_to_apply(shared, current.now, current.settings_changed_at or {})
    if not applied:  # the platform changed every one of them at a later instant: its values stand
        return read_settings(conn, actor.organization_id)
    stamps = {**(current.settings_changed_at or {}), **{field: current.now.isoformat() for field in applied}}
    row = (
        conn.execute(
            update(organizations)
            .where(this_organization)
            .values(**applied, settings_changed_at=stamps, updated_at=sql_now())
            .returning(*SETTINGS_COLUMNS)
        )
        .mappings()
        .one()
    )
    return settings_view(row)
