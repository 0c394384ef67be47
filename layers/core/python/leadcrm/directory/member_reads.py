"""Reads that carry the caller's membership check in their own statement: one round trip instead of two.

`resolve_actor` reads the membership in a statement of its own before the route reads its data. A read whose
statement needs nothing from the caller's row to be built (every parameter comes from the request) can fold
the check in instead (DESIGN.md: Polar's readable statements):

    WITH caller AS (<membership_query: the caller's active membership, or no row>)
    SELECT caller.* (on one of the rows), data.* FROM caller LEFT JOIN LATERAL (<the read>) AS data ON true

- no row: not an active member (403 NOT_A_MEMBER, exactly as resolve_actor answers);
- rows: the Actor, whom the route's gate (require_staff, …) judges before any of the data is used; a
  refused member gets the gate's 403 and nothing of what was read;
- one row whose data is missing (`MemberRead.rows` empty): a member for whom the read found nothing.

The read may use the caller's row through `CALLER`, and the caller's user id (`assignee=me`) as `CALLER_USER_ID`.
Writes keep resolve_actor: they need the Actor before they decide what to write.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from threading import Lock
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Text,
    Uuid,
    bindparam,
    case,
    func,
    literal_column,
    null,
    select,
    true,
)

from leadcrm.directory.access import actor_of, membership_query, not_a_member
from leadcrm.directory.rules import Actor

# The statement's two parameters of its own; a read may bind `organization_id` too (the same value).
AUTH_SUBJECT = bindparam("caller_auth_subject", type_=Text)
ORGANIZATION_ID = bindparam("organization_id", type_=Uuid)
CALLER = membership_query(AUTH_SUBJECT, ORGANIZATION_ID).cte("caller")
CALLER_COLUMNS = frozenset(column.name for column in CALLER.c)
# The caller's user id anywhere in a read (`assignee=me`): a subquery of its own, run once. A reference to
# CALLER's column would do only in the read's top level; inside a derived table of the read SQLAlchemy
# would add `caller` to that table's FROM instead of correlating it.
CALLER_USER_ID = select(CALLER.c.caller_user_id).correlate(None).scalar_subquery()
# A column every data row has and the null row of LEFT JOIN has not.
_FOUND = "member_read_found"
_FOUND_MARK = literal_column("true").label(_FOUND)
_DATA = "data"
_DATA_COLUMNS = literal_column(f"{_DATA}.*")
# The caller's columns, on one row of the statement only (built once: every member statement shares them).
_CALLER_ONCE = tuple(
    case((func.row_number().over() == 1, column), else_=null()).label(column.name) for column in CALLER.c
)

Gate = Callable[[Actor], Actor]


@dataclass(frozen=True)
class MemberRead:
    actor: Actor
    rows: list[dict[str, Any]]  # the read's rows, without the caller's columns


def member_statement(data: Select, order_by: Sequence[ColumnElement[Any]] = ()) -> Select:
    """`data` behind the caller's membership check, in one statement. `order_by` (of `data_column`s) orders
    the rows as `data` does: an outer query keeps no order of a subquery by itself.

    What keeps it no slower than the two statements it replaces, for a page of rows: the caller's columns
    come on one row only (`row_number() OVER ()` = 1, whichever place the ORDER BY gives it), not decoded
    again on each; and the outer query names the data's columns as `data.*` rather than through SQLAlchemy's
    proxies of the subquery, which cost more to build for a lead's forty columns than the round trip saved.
    The rows are the driver's values as they come (pg8000 converts every type the reads select)."""
    clashes = {column.key for column in data.selected_columns} & (CALLER_COLUMNS | {_FOUND})
    if clashes:  # a programming error: such a column would be hidden by the caller's
        raise ValueError(f"a member read may not select {sorted(clashes)}")
    found = data.add_columns(_FOUND_MARK).lateral(_DATA)
    statement = select(*_CALLER_ONCE, _DATA_COLUMNS).select_from(CALLER.outerjoin(found, true()))
    return statement.order_by(*order_by)


def data_column(name: str) -> ColumnElement[Any]:
    """A column of the read's rows, by the name the read selects it as: for `member_statement`'s order_by."""
    return literal_column(f'{_DATA}."{name}"')


def read_as_member(
    conn: Connection,
    statement: Select,
    *,
    auth_subject: str,
    organization_id: uuid.UUID,
    gate: Gate,
    params: Mapping[str, Any] | None = None,
) -> MemberRead:
    """Runs a `member_statement`; 403 NOT_A_MEMBER for an outsider, then the gate's refusal, then the rows."""
    values = {**(params or {}), AUTH_SUBJECT.key: auth_subject, ORGANIZATION_ID.key: organization_id}
    result = conn.execute(statement, values)
    keys = list(result.keys())
    rows = result.all()
    if not rows:
        raise not_a_member()
    caller_row = next(row for row in rows if row[_CALLER_USER_ID_AT] is not None)
    actor = gate(actor_of(dict(zip(keys[:_DATA_AT], caller_row[:_DATA_AT], strict=True)), organization_id))
    _remember_phone_region(organization_id, actor.phone_region)
    data_keys = keys[_DATA_AT:-1]  # the data's columns, then the found marker
    data = [dict(zip(data_keys, row[_DATA_AT:-1], strict=True)) for row in rows if row[-1]]
    return MemberRead(actor=actor, rows=data)


# Where the statement's columns are: the caller's first (caller_user_id is never null on the caller's row),
# then the data's, then the found marker.
_CALLER_USER_ID_AT = list(CALLER.c.keys()).index("caller_user_id")
_DATA_AT = len(CALLER.c)


# -- the phone region a read may have to guess ------------------------------------------------------------
# A search by phone builds its patterns from the organization's phone region (Actor.phone_region), which the
# folded statement only reads as it runs. The read guesses the region this container last saw for the
# organization and checks the guess against the row it read: a wrong guess (a first search, a changed
# setting) costs the read one statement more, never a wrong answer (leadcrm.leads.queries).
_PHONE_REGIONS_KEPT = 4096  # the organizations last read, oldest forgotten first
_phone_regions: OrderedDict[uuid.UUID, str | None] = OrderedDict()
_phone_regions_lock = Lock()  # the local stack serves concurrent requests from threads of one process


def last_phone_region(organization_id: uuid.UUID) -> str | None:
    with _phone_regions_lock:
        return _phone_regions.get(organization_id)


def _remember_phone_region(organization_id: uuid.UUID, region: str | None) -> None:
    with _phone_regions_lock:
        _phone_regions[organization_id] = region
        _phone_regions.move_to_end(organization_id)
        if len(_phone_regions) > _PHONE_REGIONS_KEPT:
            _phone_regions.popitem(last=False)
