"""Organizations as the platform sends them: `organization.created` / `.updated` / `.deleted`.
Platform ids are ours: `organizationId` is `organizations.id`.

Who owns what:
- `features` (the plan) is the platform's alone: each newer version replaces it;
- the shared settings (name, timezone, country, locale) may also be changed by LeadCRM's settings route:
  per field, the newer change wins, whoever made it (directory.rules.settings_to_apply on
  `settings_changed_at`, which both writers stamp). A country or locale the platform does not send is kept.
- `default_assignee_user_id` and `flags` are LeadCRM's alone: never touched here.

Order: a version applies only when newer than `platform_updated_at` (a replay or a late older one is a
no-op; a late `created` never regresses an `updated`). `organization.deleted` is a tombstone
(`deleted_at`, the earliest seen) that nothing clears: a deleted organization admits nobody
(directory.access.resolve_actor). A deletion before the creation is held and applied with it. The
organization's arrival inserts the memberships held for it, in the same transaction.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import insert, select, update

from leadcrm.directory import held
from leadcrm.directory.membership_sync import release_for_organization
from leadcrm.directory.rules import settings_to_apply
from leadcrm.directory.rules.sync import OrganizationDeletion, OrganizationState, earliest, is_newer
from leadcrm.directory.tables import organizations
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork

logger = logging.getLogger(__name__)

ORGANIZATION_CREATED = "organization.created"
ORGANIZATION_UPDATED = "organization.updated"
ORGANIZATION_DELETED = "organization.deleted"
DEFAULT_LOCALE = "en"


def apply_organization(uow: UnitOfWork, state: OrganizationState) -> bool:
    """An organization's version: inserted, or its fields updated when newer. True when anything was written."""
    conn = uow.connection
    held.serialize_sync(conn)
    row = conn.execute(
        select(organizations.c.platform_updated_at, organizations.c.settings_changed_at)
        .where(organizations.c.id == state.organization_id)
        .with_for_update()
    ).first()
    stamp = state.version.isoformat()
    if row is None:
        settings = state.settings()
        conn.execute(
            insert(organizations).values(
                id=state.organization_id,
                name=state.name,
                timezone=state.timezone,
                country_code=state.country_code,
                locale=state.locale or DEFAULT_LOCALE,
                features=_flags(state.features),
                settings_changed_at={field: stamp for field in settings},
                platform_updated_at=state.version,
                deleted_at=held.take_organization_deletion(conn, state.organization_id),
            )
        )
        release_for_organization(uow, state.organization_id)
        return True
    if not is_newer(state.version, row.platform_updated_at):
        return False
    last_changed: dict[str, Any] = dict(row.settings_changed_at or {})
    applied = settings_to_apply(state.settings(), state.version, last_changed)
    conn.execute(
        update(organizations)
        .where(organizations.c.id == state.organization_id)
        .values(
            **applied,
            settings_changed_at={**last_changed, **{field: stamp for field in applied}},
            features=_flags(state.features),
            platform_updated_at=state.version,
            updated_at=sql_now(),
        )
    )
    return True


def delete_organization(uow: UnitOfWork, deletion: OrganizationDeletion) -> bool:
    """The organization's tombstone (held when it is not here yet). True when anything was written."""
    conn = uow.connection
    held.serialize_sync(conn)
    row = conn.execute(
        select(organizations.c.deleted_at).where(organizations.c.id == deletion.organization_id).with_for_update()
    ).first()
    if row is None:
        return held.hold_organization_deletion(conn, deletion.organization_id, deletion.deleted_at)
    tombstone = earliest(row.deleted_at, deletion.deleted_at)
    if tombstone == row.deleted_at:
        return False
    conn.execute(
        update(organizations)
        .where(organizations.c.id == deletion.organization_id)
        .values(deleted_at=tombstone, updated_at=sql_now())
    )
    logger.info("organization deleted", extra={"organizationId": str(deletion.organization_id)})
    return True


def _flags(features: frozenset[str]) -> dict[str, bool]:
    """As organizations.features stores them: an object of flags (directory.rules.enabled_features)."""
    return {name: True for name in sorted(features)}
