"""Integration connections (spec "Ingestion routes on an active connection"): owner/admin connect and
disconnect a Meta Page (Lead Ads) or a WhatsApp Cloud phone number; webhooks route on the active one.

The access token goes to Secrets Manager and never into the database: one secret per external account,
named after it (`integration_secrets.secret_name`), so the graph_fetch function finds a page's token
without the database. One external account has at most one active connection (a unique partial index), so
an inbound event can only belong to one organization, and the account's secret is that connection's.
Connect and disconnect of one account take a transaction lock on it: the secret write and the row change
are serialized, so a losing connect can never overwrite or delete the winner's token. The connect surface
is flagged in the dashboard only: these routes and the webhooks are not.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import Actor
from leadcrm.ingestion.tables import integration_connections
from leadcrm.platform.adapters import integration_secrets
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict, NotFound
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

ACTIVE, DISCONNECTED = "active", "disconnected"

CONNECTION_COLUMNS = (
    integration_connections.c.id,
    integration_connections.c.organization_id,
    integration_connections.c.provider,
    integration_connections.c.external_account_id,
    integration_connections.c.display_name,
    integration_connections.c.status,
    integration_connections.c.connected_by_user_id,
    integration_connections.c.connected_at,
    integration_connections.c.disconnected_at,
    integration_connections.c.created_at,
    integration_connections.c.updated_at,
)


@dataclass(frozen=True)
class Connected:
    connection: dict[str, Any]
    created: bool  # False: the organization reconnected an account it already had (token replaced)


@dataclass(frozen=True)
class ActiveConnection:
    id: uuid.UUID
    organization_id: uuid.UUID
    secret_arn: str


def connect(
    uow: UnitOfWork, actor: Actor, provider: str, external_account_id: str, access_token: str, display_name: str | None
) -> Connected:
    """Connect an account, or replace the token of this organization's active connection to it. 409
    CONNECTION_IN_USE when another organization's active connection holds the account. Commits."""
    conn = uow.connection
    _lock_account(conn, provider, external_account_id)
    current = _active_row(conn, provider, external_account_id, lock=True)
    if current is not None:
        if current["organization_id"] != actor.organization_id:
            raise _in_use()
        secret_arn = integration_secrets.store_access_token(provider, external_account_id, access_token)
        row = _touch(conn, current["id"], display_name, secret_arn)
        uow.commit()
        if current["secret_arn"] and current["secret_arn"] != secret_arn:
            _delete_secret_quietly(current["secret_arn"])  # a secret of the per-connection naming, now moved
        return Connected(row, created=False)
    connection_id = uuid7()
    secret_arn = integration_secrets.store_access_token(provider, external_account_id, access_token)
    try:
        row = (
            conn.execute(
                pg_insert(integration_connections)
                .values(
                    id=connection_id,
                    organization_id=actor.organization_id,
                    provider=provider,
                    external_account_id=external_account_id,
                    display_name=display_name,
                    secret_arn=secret_arn,
                    status=ACTIVE,
                    connected_by_user_id=actor.user_id,
                )
                # The account lock serializes connects; the unique index stays the last word.
                .on_conflict_do_nothing(
                    index_elements=["provider", "external_account_id"],
                    index_where=integration_connections.c.status == ACTIVE,
                )
                .returning(*CONNECTION_COLUMNS)
            )
            .mappings()
            .first()
        )
        if row is None:
            raise _in_use()
        uow.commit()
    except BaseException:
        _delete_secret_quietly(secret_arn)  # nothing active points at it (we hold the account's lock)
        raise
    return Connected(dict(row), created=True)


def disconnect(uow: UnitOfWork, actor: Actor, provider: str, connection_id: uuid.UUID) -> dict[str, Any]:
    """Disconnect (idempotent): events for the account are dropped from now on, and its token is deleted.
    404 CONNECTION_NOT_FOUND for another organization's id or another provider's.

    The secret is deleted before the commit, under the account's lock: after the commit another
    organization may connect the account and write the same secret name, which a late delete would remove.
    Should the commit then fail, the connection stays active without a token (its deliveries are dropped
    as `no_secret`) until the owner disconnects again or reconnects."""
    conn = uow.connection
    found = conn.execute(
        select(
            integration_connections.c.secret_arn,
            integration_connections.c.status,
            integration_connections.c.external_account_id,
        ).where(
            integration_connections.c.id == connection_id,
            integration_connections.c.organization_id == actor.organization_id,
            integration_connections.c.provider == provider,
        )
    ).first()
    if found is None:
        raise NotFound("No such connection.", code="CONNECTION_NOT_FOUND")
    _lock_account(conn, provider, found.external_account_id)
    secret_arn = conn.execute(
        select(integration_connections.c.secret_arn)
        .where(integration_connections.c.id == connection_id)
        .with_for_update()
    ).scalar_one()
    row = (
        conn.execute(
            update(integration_connections)
            .where(integration_connections.c.id == connection_id)
            .values(
                status=DISCONNECTED,
                secret_arn=None,
                disconnected_at=func.coalesce(integration_connections.c.disconnected_at, sql_now()),
                updated_at=sql_now(),
            )
            .returning(*CONNECTION_COLUMNS)
        )
        .mappings()
        .one()
    )
    if secret_arn:
        _delete_secret_quietly(secret_arn)
    uow.commit()
    return dict(row)


def list_connections(conn: Connection, organization_id: uuid.UUID, provider: str) -> list[dict[str, Any]]:
    """The organization's connections of a provider, active first, newest first (a handful per org)."""
    rows = conn.execute(
        select(*CONNECTION_COLUMNS)
        .where(
            integration_connections.c.organization_id == organization_id,
            integration_connections.c.provider == provider,
        )
        .order_by(
            (integration_connections.c.status == ACTIVE).desc(),
            integration_connections.c.created_at.desc(),
            integration_connections.c.id.desc(),
        )
        .limit(100)
    ).mappings()
    return [dict(r) for r in rows]


def active_connection(conn: Connection, provider: str, external_account_id: str) -> ActiveConnection | None:
    """Whose event is this? The active connection of the external account (page_id / phone_number_id)."""
    row = _active_row(conn, provider, external_account_id, lock=False)
    if row is None or not row["secret_arn"]:
        return None
    return ActiveConnection(id=row["id"], organization_id=row["organization_id"], secret_arn=row["secret_arn"])


def active_connections(conn: Connection, accounts: set[tuple[str, str]]) -> dict[tuple[str, str], ActiveConnection]:
    """`active_connection` for every (provider, external_account_id) of a batch, in one statement; an
    account without an active connection holding a token is left out."""
    if not accounts:
        return {}
    rows = conn.execute(
        select(
            integration_connections.c.id,
            integration_connections.c.organization_id,
            integration_connections.c.provider,
            integration_connections.c.external_account_id,
            integration_connections.c.secret_arn,
        ).where(
            tuple_(integration_connections.c.provider, integration_connections.c.external_account_id).in_(
                sorted(accounts)
            ),
            integration_connections.c.status == ACTIVE,
        )
    ).all()
    return {
        (row.provider, row.external_account_id): ActiveConnection(
            id=row.id, organization_id=row.organization_id, secret_arn=row.secret_arn
        )
        for row in rows
        if row.secret_arn
    }


def _active_row(conn: Connection, provider: str, external_account_id: str, *, lock: bool) -> dict[str, Any] | None:
    query = select(*CONNECTION_COLUMNS, integration_connections.c.secret_arn).where(
        integration_connections.c.provider == provider,
        integration_connections.c.external_account_id == external_account_id,
        integration_connections.c.status == ACTIVE,
    )
    row = conn.execute(query.with_for_update() if lock else query).mappings().first()
    return dict(row) if row is not None else None


def _lock_account(conn: Connection, provider: str, external_account_id: str) -> None:
    """A transaction lock on one external account (released at commit or rollback)."""
    key = f"integration:{provider}:{external_account_id}"
    conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(key, 0))))


def _touch(conn: Connection, connection_id: uuid.UUID, display_name: str | None, secret_arn: str) -> dict[str, Any]:
    values: dict[str, Any] = {"updated_at": sql_now(), "secret_arn": secret_arn}
    if display_name is not None:
        values["display_name"] = display_name
    row = (
        conn.execute(
            update(integration_connections)
            .where(integration_connections.c.id == connection_id)
            .values(**values)
            .returning(*CONNECTION_COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(row)


def _in_use() -> Conflict:
    return Conflict(
        "This account is connected to another organization; disconnect it there first.", code="CONNECTION_IN_USE"
    )


def _delete_secret_quietly(secret_arn: str) -> None:
    try:
        integration_secrets.delete_access_token(secret_arn)
    except Exception:  # an orphaned secret is harmless and visible under the prefix; never fail the request
        logger.exception("could not delete a connection secret", extra={"secretArn": secret_arn})
