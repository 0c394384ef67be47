"""The directory's reads: an organization's settings, its members for assignee pickers, its phone region."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, exists, func, select, tuple_

from leadcrm.directory.rules import MembershipStatus, Role, enabled_features, phone_region
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import parse_uuid
from leadcrm.platform.keyset import decode_keyset, encode_keyset
from leadcrm.platform.paging import DEFAULT_PAGE_SIZE

# The API's one page size (leadcrm.platform.paging).
DEFAULT_MEMBERS_PAGE = DEFAULT_PAGE_SIZE

SETTINGS_COLUMNS = (
    organizations.c.id.label("organization_id"),
    organizations.c.name,
    organizations.c.timezone,
    organizations.c.country_code,
    organizations.c.locale,
    organizations.c.default_assignee_user_id,
    organizations.c.features,
    organizations.c.settings_changed_at,
    organizations.c.updated_at,
)


def settings_view(row: Any) -> dict[str, Any]:
    """An organizations row (SETTINGS_COLUMNS) as the settings route shows it: the enabled features by
    name, and the region national phone numbers are read in (the country, else the timezone's)."""
    view = dict(row)
    view["features"] = sorted(enabled_features(view["features"]))
    view["phone_region"] = phone_region(view["country_code"], view["timezone"])
    return view


def read_settings(conn: Connection, organization_id: uuid.UUID) -> dict[str, Any]:
    row = conn.execute(select(*SETTINGS_COLUMNS).where(organizations.c.id == organization_id)).mappings().first()
    if row is None:  # the caller was resolved in this organization a statement ago: only a race gets here
        raise NotFound("No such organization.", code="ORGANIZATION_NOT_FOUND")
    return settings_view(row)


def organization_phone_region(conn: Connection, organization_id: uuid.UUID) -> str | None:
    """The region the organization reads phones without a country code in (directory.rules.phone_region)."""
    row = conn.execute(
        select(organizations.c.country_code, organizations.c.timezone).where(organizations.c.id == organization_id)
    ).first()
    return phone_region(row.country_code, row.timezone) if row is not None else None


# -- members ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemberPage:
    items: list[dict[str, Any]]
    next_cursor: str | None


def _first_name_key(table: Any) -> Any:
    return func.lower(func.coalesce(table.c.first_name, ""))


def _last_name_key(table: Any) -> Any:
    return func.lower(func.coalesce(table.c.last_name, ""))


def list_members(
    conn: Connection,
    organization_id: uuid.UUID,
    *,
    roles: Collection[Role] = (),
    limit: int = DEFAULT_MEMBERS_PAGE,
    cursor: str | None = None,
) -> MemberPage:
    """Active members (live, status active) by first name, last name, then membership id; one statement.

    The cursor names only the last membership of the page, never a name (cursors travel in URLs, and URLs
    end up in logs): its sort key is read from that row inside the same statement."""
    conditions: list[Any] = [
        memberships.c.organization_id == organization_id,
        memberships.c.deleted_at.is_(None),
        memberships.c.status == MembershipStatus.ACTIVE.value,
    ]
    if roles:
        conditions.append(memberships.c.role.in_(sorted(r.value for r in roles)))
    if cursor is not None:
        conditions.append(_after(organization_id, _cursor_membership(cursor)))
    rows = (
        conn.execute(
            select(
                memberships.c.id.label("membership_id"),
                users.c.id.label("user_id"),
                memberships.c.role,
                users.c.first_name,
                users.c.last_name,
                users.c.email,
            )
            .select_from(memberships.join(users, users.c.id == memberships.c.user_id))
            .where(*conditions)
            .order_by(_first_name_key(users), _last_name_key(users), memberships.c.id)
            .limit(limit + 1)
        )
        .mappings()
        .all()
    )
    items = [dict(r) for r in rows[:limit]]
    next_cursor = encode_keyset([str(items[-1]["membership_id"])]) if len(rows) > limit else None
    return MemberPage(items, next_cursor)


def _cursor_membership(cursor: str) -> uuid.UUID:
    (raw,) = decode_keyset(cursor, 1)
    membership_id = parse_uuid(raw)
    if membership_id is None:
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
    return membership_id


def _after(organization_id: uuid.UUID, membership_id: uuid.UUID) -> Any:
    """Rows sorting after the cursor's membership (which stays readable: a membership row is soft-deleted)."""
    last_membership, last_user = memberships.alias("last_membership"), users.alias("last_user")
    return exists().where(
        last_membership.c.id == membership_id,
        last_membership.c.organization_id == organization_id,
        last_user.c.id == last_membership.c.user_id,
        tuple_(_first_name_key(users), _last_name_key(users), memberships.c.id)
        > tuple_(_first_name_key(last_user), _last_name_key(last_user), last_membership.c.id),
    )
