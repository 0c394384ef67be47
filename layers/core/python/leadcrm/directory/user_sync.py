"""Users as the platform sends them: `user.created` / `user.updated`. Platform ids are ours: `userId` is
`users.id`, and `authSubject` is the JWT `sub` the user signs in with (`users.auth_subject`).

Each version is the whole user (subject, email, names; a value the platform does not send is cleared; the
phone and the kind are LeadCRM's and kept). It applies only when newer than `platform_updated_at`, so a
replay or a late older version changes nothing. The user's arrival inserts the memberships held for them,
in the same transaction (directory.membership_sync).

An email (any case) or subject another user already holds. One account per email and one user per subject
are unique in our table, but a platform event may still name a value another row holds: a user created by
lead conversion (email, no subject, made before the platform knew them), one made by the local stack or the
admin command, or another platform user whose own change of email has not arrived yet. The rule:
- nothing is adopted or merged: the other row keeps its value (its id is referenced by memberships, leads
  and deals, and ids are the platform's, so linking two ids would break the next event naming either);
- the platform's user is stored without that value (it can still sign in with its subject, or be reached by
  email, and its memberships apply) and its claim is held with the reason (`directory_held_events`, kind
  `user`, `waiting_for` `email` or `auth_subject`), logged as a warning without the value;
- when the holder lets the value go (its own newer version names another), the claim is applied in that
  event's transaction. A claim against a row that never lets go (a conversion's user) waits for an operator.
Never a 500, never a retry loop: the event is applied and acknowledged.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from leadcrm.directory import held
from leadcrm.directory.membership_sync import release_for_user
from leadcrm.directory.rules.sync import UserState, is_newer
from leadcrm.directory.tables import users
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork

USER_CREATED = "user.created"
USER_UPDATED = "user.updated"
ACCOUNT = "account"


def apply_user(uow: UnitOfWork, state: UserState) -> bool:
    """A user's version: inserted, or updated when newer. True when anything was written."""
    conn = uow.connection
    held.serialize_sync(conn)
    row = _lock(conn, state.user_id)
    if row is not None and not is_newer(state.version, row.platform_updated_at):
        return False
    _write(uow, state, row)
    return True


def _write(uow: UnitOfWork, state: UserState, row: Any) -> None:
    conn = uow.connection
    email, subject = state.email, state.auth_subject
    withheld = []
    kind = row.kind if row is not None else ACCOUNT
    if email is not None and kind == ACCOUNT and _email_taken(conn, email, state.user_id):
        email = None
        withheld.append("email")
    if subject is not None and _subject_taken(conn, subject, state.user_id):
        subject = None
        withheld.append("auth_subject")
    values = {
        "auth_subject": subject,
        "email": email,
        "first_name": state.first_name,
        "last_name": state.last_name,
        "platform_updated_at": state.version,
    }
    if row is None:
        conn.execute(insert(users).values(id=state.user_id, kind=ACCOUNT, **values))
    else:
        conn.execute(update(users).where(users.c.id == state.user_id).values(**values, updated_at=sql_now()))
    if withheld:
        held.hold_user(conn, state, waiting_for=withheld[0])
    else:
        held.release_user(conn, state.user_id)
    if row is None:
        release_for_user(uow, state.user_id)
        return
    freed_email = row.email if row.email and (email is None or email.lower() != row.email.lower()) else None
    freed_subject = row.auth_subject if row.auth_subject and row.auth_subject != subject else None
    for claimant in held.users_claiming(conn, email=freed_email, auth_subject=freed_subject):
        if claimant.user_id != state.user_id:
            _write(uow, claimant, _lock(conn, claimant.user_id))


def _email_taken(conn: Connection, email: str, user_id: uuid.UUID) -> bool:
    return (
        conn.execute(
            select(users.c.id).where(
                func.lower(users.c.email) == email.lower(), users.c.kind == ACCOUNT, users.c.id != user_id
            )
        ).first()
        is not None
    )


def _subject_taken(conn: Connection, subject: str, user_id: uuid.UUID) -> bool:
    return (
        conn.execute(select(users.c.id).where(users.c.auth_subject == subject, users.c.id != user_id)).first()
        is not None
    )


def _lock(conn: Connection, user_id: uuid.UUID) -> Any:
    return conn.execute(
        select(users.c.kind, users.c.email, users.c.auth_subject, users.c.platform_updated_at)
        .where(users.c.id == user_id)
        .with_for_update()
    ).first()
