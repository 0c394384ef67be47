"""Owner/admin manage their organization's webhook subscriptions (issue 25, "Outbound webhooks").

A subscription is an HTTPS endpoint on a public address (checked when saved, resolving its name, and again
at each send), the event types it wants, and its signing secret, answered only by create and rotate. Asking
for personal data (`include_personal_data`) needs the organization's plan to allow it (feature
`webhook_personal_data`); each send checks both again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from leadcrm.directory.rules import Actor
from leadcrm.integrations.endpoints import checked_target
from leadcrm.integrations.rules.addresses import Refused
from leadcrm.integrations.rules.signing import new_secret
from leadcrm.integrations.tables import webhook_deliveries, webhook_subscriptions
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.ids import uuid7

PERSONAL_DATA_FEATURE = "webhook_personal_data"
MAX_SUBSCRIPTIONS = 20

COLUMNS = tuple(c for c in webhook_subscriptions.c if c.name != "secret")


def subscription_not_found() -> NotFound:
    return NotFound("No such webhook subscription.", code="WEBHOOK_SUBSCRIPTION_NOT_FOUND")


def check_url(url: str) -> None:
    """400 with the refusal's code (WEBHOOK_URL_INVALID, WEBHOOK_URL_NOT_HTTPS, WEBHOOK_URL_UNRESOLVABLE,
    WEBHOOK_ADDRESS_NOT_PUBLIC)."""
    try:
        checked_target(url)
    except Refused as refused:
        raise BadRequest(refused.message, code=refused.code) from None


def _check_personal_data(actor: Actor, include: bool) -> None:
    if include and PERSONAL_DATA_FEATURE not in actor.features:
        raise BadRequest(
            "The organization's plan does not allow personal data in webhooks.", code="PERSONAL_DATA_NOT_ALLOWED"
        )


def create(
    conn: Connection, actor: Actor, url: str, event_types: Sequence[str], include_personal_data: bool
) -> tuple[dict[str, Any], str]:
    """The new subscription and its secret (shown this once)."""
    _check_personal_data(actor, include_personal_data)
    check_url(url)
    count = conn.execute(
        select(func.count()).where(webhook_subscriptions.c.organization_id == actor.organization_id)
    ).scalar_one()
    if count >= MAX_SUBSCRIPTIONS:
        raise Conflict(f"At most {MAX_SUBSCRIPTIONS} webhook subscriptions.", code="WEBHOOK_SUBSCRIPTION_LIMIT")
    secret = new_secret()
    row = (
        conn.execute(
            webhook_subscriptions.insert()
            .values(
                id=uuid7(),
                organization_id=actor.organization_id,
                url=url,
                event_types=sorted(set(event_types)),
                secret=secret,
                include_personal_data=include_personal_data,
                created_by_user_id=actor.user_id,
            )
            .returning(*COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(row), secret


def list_subscriptions(conn: Connection, organization_id: uuid.UUID) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(*COLUMNS)
        .where(webhook_subscriptions.c.organization_id == organization_id)
        .order_by(webhook_subscriptions.c.created_at.desc(), webhook_subscriptions.c.id.desc())
    ).mappings()
    return [dict(r) for r in rows]


def get(
    conn: Connection, organization_id: uuid.UUID, subscription_id: uuid.UUID, *, lock: bool = False
) -> dict[str, Any]:
    query = select(*COLUMNS).where(
        webhook_subscriptions.c.organization_id == organization_id, webhook_subscriptions.c.id == subscription_id
    )
    row = conn.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise subscription_not_found()
    return dict(row)


def update_subscription(
    conn: Connection, actor: Actor, subscription_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    """A partial update of `url`, `event_types`, `include_personal_data`, `enabled` (enabling clears the
    reason it was disabled; pending deliveries are sent again by the sweep)."""
    get(conn, actor.organization_id, subscription_id, lock=True)
    values: dict[str, Any] = {"updated_at": sql_now()}
    if "url" in changes:
        check_url(changes["url"])
        values["url"] = changes["url"]
    if "event_types" in changes:
        values["event_types"] = sorted(set(changes["event_types"]))
    if "include_personal_data" in changes:
        _check_personal_data(actor, changes["include_personal_data"])
        values["include_personal_data"] = changes["include_personal_data"]
    if "enabled" in changes:
        values["enabled"] = changes["enabled"]
        values["disabled_reason"] = None if changes["enabled"] else "disabled_by_staff"
        values["disabled_at"] = None if changes["enabled"] else sql_now()
    if changes.get("enabled"):
        # enabled again: what waited is due now, with a new day of retries
        conn.execute(
            update(webhook_deliveries)
            .where(webhook_deliveries.c.subscription_id == subscription_id, webhook_deliveries.c.status == "pending")
            .values(first_attempt_at=None, next_attempt_at=sql_now(), updated_at=sql_now())
        )
    row = (
        conn.execute(
            update(webhook_subscriptions)
            .where(webhook_subscriptions.c.id == subscription_id)
            .values(**values)
            .returning(*COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(row)


def rotate_secret(conn: Connection, actor: Actor, subscription_id: uuid.UUID) -> tuple[dict[str, Any], str]:
    """A new secret, shown this once; every send from now on is signed with it."""
    get(conn, actor.organization_id, subscription_id, lock=True)
    secret = new_secret()
    row = (
        conn.execute(
            update(webhook_subscriptions)
            .where(webhook_subscriptions.c.id == subscription_id)
            .values(secret=secret, updated_at=sql_now())
            .returning(*COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(row), secret


def delete_subscription(conn: Connection, actor: Actor, subscription_id: uuid.UUID) -> None:
    """Deleted with its delivery log; a delivery already queued is still sent once."""
    get(conn, actor.organization_id, subscription_id, lock=True)
    conn.execute(delete(webhook_subscriptions).where(webhook_subscriptions.c.id == subscription_id))


def disable(conn: Connection, subscription_id: uuid.UUID, reason: str) -> None:
    conn.execute(
        update(webhook_subscriptions)
        .where(webhook_subscriptions.c.id == subscription_id, webhook_subscriptions.c.enabled.is_(True))
        .values(enabled=False, disabled_reason=reason, disabled_at=sql_now(), updated_at=sql_now())
    )
