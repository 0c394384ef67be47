"""The work queue: the open leads that need someone now, each with why, ranked by tier then time.

One page is two statements whatever its size: the organization's timezone, then the page.

How the page statement stays fast on a big organization: each reason has its own partial index on the open,
live leads (migration 0012), and a lead's rank is a single number (`rank_key`: tier, then the reason's time,
see `work.rules.attention`). Each reason's branch walks its index in rank order and stops after `limit + 1`
rows whose *best* rank (over all their reasons) comes after the cursor; the union of the branches, sorted
by best rank, gives the page. This is exact: a lead's best reason's branch ranks every row before it ahead
of it too, so it is within that branch's first `limit + 1`. With `reason=`, only that reason's branch runs
and leads rank by that reason.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    DateTime,
    Integer,
    Numeric,
    Select,
    and_,
    bindparam,
    case,
    false,
    func,
    literal_column,
    or_,
    select,
    text,
    tuple_,
    union,
)

from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import INBOUND_UNANSWERED_SQL, QUEUE_SCOPE_SQL, REAL_FOLLOW_UP_SQL, UNTOUCHED_NEW_SQL, leads
from leadcrm.platform import clock
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.keyset import decode_keyset, encode_keyset
from leadcrm.platform.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from leadcrm.work.rules.attention import (
    COOLING_WINDOW,
    HOT_WINDOW,
    RETURNED_STATUSES,
    SEED_CALL_TYPE,
    LeadFacts,
    OrgDay,
    Reason,
    Tier,
    lead_reasons,
    new_lead_sla,
    org_day,
)

# The API's one page size (leadcrm.platform.paging).
DEFAULT_QUEUE_PAGE_SIZE = DEFAULT_PAGE_SIZE
MAX_QUEUE_PAGE_SIZE = MAX_PAGE_SIZE
MAX_QUEUE_CURSOR_LENGTH = 200

# rank_key = tier * TIER_SCALE + (epoch seconds for due follow-ups, DESC_BASE - epoch for arrivals):
# ascending rank_key is tier first, then the most overdue follow-up first / the newest arrival first.
TIER_SCALE = Decimal(10) ** 11
DESC_BASE = Decimal(10) ** 10
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """The instants the reasons are measured against, for one request."""

    now: datetime
    day: OrgDay
    sla: timedelta

    @property
    def hot_since(self) -> datetime:
        return self.now - HOT_WINDOW

    @property
    def cooling_since(self) -> datetime:
        return self.now - COOLING_WINDOW

    @property
    def sla_cutoff(self) -> datetime:
        return self.now - self.sla


def attention_window(conn: Connection, organization_id: uuid.UUID, now: datetime) -> Window:
    timezone = conn.execute(
        select(organizations.c.timezone).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()
    return Window(now=now, day=org_day(now, timezone), sla=new_lead_sla())


# -- the cursor -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueCursor:
    rank_key: Decimal
    id: uuid.UUID
    reason: Reason | None

    def encode(self) -> str:
        return encode_keyset([str(self.rank_key), str(self.id), self.reason.value if self.reason else ""])

    @property
    def tier(self) -> int:
        return int(self.rank_key // TIER_SCALE)

    @property
    def at(self) -> datetime:
        rest = self.rank_key - self.tier * TIER_SCALE
        seconds = rest if self.tier == Tier.DUE else DESC_BASE - rest
        return _EPOCH + timedelta(microseconds=int(seconds * 1_000_000))


def _invalid_cursor() -> BadRequest:
    return BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")


def decode_queue_cursor(cursor: str, reason: Reason | None) -> QueueCursor:
    """A cursor this route returned, for the same `reason` filter; 400 INVALID_CURSOR otherwise."""
    if not cursor or len(cursor) > MAX_QUEUE_CURSOR_LENGTH or not cursor.isascii():
        raise _invalid_cursor()
    raw_key, raw_id, raw_reason = decode_keyset(cursor, 3)
    try:
        key = Decimal(raw_key)
        lead_id = uuid.UUID(raw_id)
    except (InvalidOperation, ValueError) as error:
        raise _invalid_cursor() from error
    if not key.is_finite() or not 0 <= key < 4 * TIER_SCALE or raw_reason != (reason.value if reason else ""):
        raise _invalid_cursor()
    return QueueCursor(rank_key=key, id=lead_id, reason=reason)


# -- filters and page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueFilters:
    assignee: Assignee | None = None
    reason: Reason | None = None
    limit: int = DEFAULT_QUEUE_PAGE_SIZE
    after: QueueCursor | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_QUEUE_PAGE_SIZE:
            raise BadRequest(f"limit must be between 1 and {MAX_QUEUE_PAGE_SIZE}.", code="VALIDATION_FAILED")
        if self.after is not None and self.after.reason != self.reason:
            raise _invalid_cursor()


@dataclass(frozen=True)
class QueuePage:
    items: list[dict[str, Any]]
    next_cursor: str | None


# -- the statement, built once per shape ----------------------------------------------------------------------
#
# The page statement is ~3.7 kB: building it and computing its SQLAlchemy cache key cost ~2 ms a call. Its
# structure depends only on a few choices (the `_Shape`); everything else (the organization, the instants
# of the window, the cursor, the page size) is a bound parameter. So each shape's statement is built once
# per process and every call only binds values: SQLAlchemy's compiled cache then hits on a memoized key.

_TIMESTAMP = DateTime(timezone=True)


def _at(name: str) -> BindParameter:
    return bindparam(name, type_=_TIMESTAMP)


_ORG = bindparam("organization_id", type_=leads.c.organization_id.type)
_ASSIGNEE = bindparam("assignee_user_id", type_=leads.c.assigned_to_user_id.type)
_HOT_SINCE, _COOLING_SINCE, _SLA_CUTOFF = _at("hot_since"), _at("cooling_since"), _at("sla_cutoff")
_DAY_STARTS_AT, _DAY_ENDS_AT = _at("day_starts_at"), _at("day_ends_at")
_AFTER_KEY = bindparam("after_rank_key", type_=Numeric)
_AFTER_ID = bindparam("after_id", type_=leads.c.id.type)
_ROWS = bindparam("rows", type_=Integer)  # the page size + 1: one more row tells there is a next page


def _bound_param(reason: Reason) -> BindParameter:
    return _at(f"bound_{reason.value}")


def _epoch(column: ColumnElement) -> ColumnElement:
    return func.extract("epoch", column)


def _constant(value: int | Decimal) -> ColumnElement:
    """A constant written into the SQL, not a bound parameter: the rank arithmetic stays plain numerics."""
    return literal_column(str(int(value)), Numeric)


def _newest_first_key(tier: ColumnElement | int, at: ColumnElement) -> ColumnElement:
    tier_expr = _constant(tier) if isinstance(tier, int) else tier
    return _constant(TIER_SCALE) * tier_expr + (_constant(DESC_BASE) - _epoch(at))


def _tier_case(*whens: tuple[ColumnElement, Tier], otherwise: Tier) -> ColumnElement:
    return case(*((condition, _constant(tier)) for condition, tier in whens), else_=_constant(otherwise))


def _arrival_tier(at: ColumnElement) -> ColumnElement:
    return _tier_case((at > _HOT_SINCE, Tier.HOT), (at > _COOLING_SINCE, Tier.COOLING), otherwise=Tier.BACKLOG)


def _returned_condition() -> ColumnElement:
    c = leads.c
    return and_(
        c.returned_at.is_not(None),
        c.returned_at > _COOLING_SINCE,
        c.status.in_([literal_column(f"'{s}'") for s in RETURNED_STATUSES]),
        or_(c.last_contact_attempt_at.is_(None), c.last_contact_attempt_at < c.returned_at),
        or_(c.last_contacted_at.is_(None), c.last_contacted_at < c.returned_at),
        or_(c.next_action_at.is_(None), and_(c.next_action_type == SEED_CALL_TYPE, c.next_action_at == c.returned_at)),
    )


def _reason_keys() -> dict[Reason, tuple[ColumnElement, ColumnElement]]:
    """For each reason: (the condition a lead has it under, within the queue scope; its rank key)."""
    c = leads.c
    follow_up_key = _constant(TIER_SCALE * int(Tier.DUE)) + _epoch(c.next_action_at)
    due = and_(text(REAL_FOLLOW_UP_SQL), c.next_action_at < _DAY_ENDS_AT)
    return {
        Reason.INBOUND_UNANSWERED: (
            and_(text(INBOUND_UNANSWERED_SQL)),
            _newest_first_key(_arrival_tier(c.last_inbound_at), c.last_inbound_at),
        ),
        # Overdue and due today share a branch: one tier, ranked by when the follow-up was due.
        Reason.FOLLOW_UP_OVERDUE: (due, follow_up_key),
        Reason.NEW_UNTOUCHED: (
            and_(text(UNTOUCHED_NEW_SQL), c.created_at <= _SLA_CUTOFF),
            _newest_first_key(_arrival_tier(c.created_at), c.created_at),
        ),
        Reason.RETURNED: (
            _returned_condition(),
            _newest_first_key(
                _tier_case((c.returned_at > _HOT_SINCE, Tier.HOT), otherwise=Tier.COOLING), c.returned_at
            ),
        ),
        # No owner: the rules ran at intake, in the same transaction, and could not place it (work.rules.attention).
        Reason.UNASSIGNED: (c.assigned_to_user_id.is_(None), _newest_first_key(int(Tier.BACKLOG), c.created_at)),
    }


def _best_key() -> ColumnElement:
    """The lead's best rank over all its reasons: `leadcrm_queue_rank` (migration 0012) is `_reason_keys`'
    LEAST written once in SQL, inlined by the planner, so each branch stays short."""
    return func.leadcrm_queue_rank(
        literal_column("leads"), _HOT_SINCE, _COOLING_SINCE, _SLA_CUTOFF, _DAY_ENDS_AT, type_=Numeric
    )


@dataclass(frozen=True)
class _Branch:
    """A reason's walk through its index: which column it orders by, newest first or oldest first, and
    the tiers it can hold, newest segment first as (tier, lower bound of the segment)."""

    reason: Reason
    tiers: tuple[int, ...]
    newest_first: bool


_BRANCHES = (
    _Branch(Reason.INBOUND_UNANSWERED, (Tier.HOT, Tier.COOLING, Tier.BACKLOG), True),
    _Branch(Reason.FOLLOW_UP_OVERDUE, (Tier.DUE,), False),
    _Branch(Reason.NEW_UNTOUCHED, (Tier.HOT, Tier.COOLING, Tier.BACKLOG), True),
    _Branch(Reason.RETURNED, (Tier.HOT, Tier.COOLING), True),
    _Branch(Reason.UNASSIGNED, (Tier.BACKLOG,), True),
)


def _order_column(reason: Reason) -> ColumnElement:
    c = leads.c
    return {
        Reason.INBOUND_UNANSWERED: c.last_inbound_at,
        Reason.FOLLOW_UP_OVERDUE: c.next_action_at,
        Reason.NEW_UNTOUCHED: c.created_at,
        Reason.RETURNED: c.returned_at,
        Reason.UNASSIGNED: c.created_at,
    }[reason]


def _tier_lower_bounds(reason: Reason, window: Window) -> dict[int, datetime | None]:
    """For newest-first branches: the instant each tier's segment starts after (None: no lower bound)."""
    if reason is Reason.UNASSIGNED:
        return {Tier.BACKLOG: None}
    if reason is Reason.RETURNED:
        return {Tier.HOT: window.hot_since, Tier.COOLING: window.cooling_since}
    return {Tier.HOT: window.hot_since, Tier.COOLING: window.cooling_since, Tier.BACKLOG: None}


class _Bound(StrEnum):
    """How a branch starts after the cursor: a range on its index column holding every row ranked after
    the cursor (exactness comes from the rank filter; this only lets the index start in the right place)."""

    SKIP = "skip"  # every row of the branch ranks before the cursor
    OPEN = "open"  # no range
    FROM = "from"  # column >= the bound (the follow-up branch, oldest first)
    UNTIL = "until"  # column <= the bound (newest-first branches)


def _branch_bound(branch: _Branch, after: QueueCursor, window: Window) -> tuple[_Bound, datetime | None]:
    if all(tier < after.tier for tier in branch.tiers):
        return _Bound.SKIP, None
    if not branch.newest_first:  # the follow-up branch: one tier
        return (_Bound.FROM, after.at) if after.tier == Tier.DUE else (_Bound.OPEN, None)
    if branch.tiers[0] > after.tier:
        return _Bound.OPEN, None
    bounds = _tier_lower_bounds(branch.reason, window)
    upper: datetime | None = None
    for tier in branch.tiers:  # newest segment first; tiers grow as the instant gets older
        if tier < after.tier:
            upper = bounds[tier]
        elif tier == after.tier:
            upper = after.at if upper is None else min(upper, after.at)
            break
        else:
            break
    return (_Bound.OPEN, None) if upper is None else (_Bound.UNTIL, upper)


class _AssigneeFilter(StrEnum):
    ANYONE = "anyone"
    USER = "user"
    NOBODY = "nobody"


@dataclass(frozen=True)
class _Shape:
    """What the page statement's structure depends on; `branches` lists each branch it runs with, after a
    cursor, how it starts (`_Bound.OPEN` for every branch on a first page)."""

    reason: Reason | None
    assignee: _AssigneeFilter
    paged: bool
    branches: tuple[tuple[Reason, _Bound], ...]


def _shape_and_values(actor: Actor, filters: QueueFilters, window: Window) -> tuple[_Shape, dict[str, Any]]:
    branch_reason = Reason.FOLLOW_UP_OVERDUE if filters.reason is Reason.FOLLOW_UP_DUE_TODAY else filters.reason
    branches = [b for b in _BRANCHES if branch_reason is None or b.reason is branch_reason]
    if filters.assignee is None:
        assignee = _AssigneeFilter.ANYONE
    elif filters.assignee.is_unassigned:
        assignee = _AssigneeFilter.NOBODY
    else:
        assignee = _AssigneeFilter.USER
        # A lead someone is responsible for is never in the `unassigned` branch.
        branches = [b for b in branches if b.reason is not Reason.UNASSIGNED]
    values: dict[str, Any] = {
        "organization_id": actor.organization_id,
        "hot_since": window.hot_since,
        "cooling_since": window.cooling_since,
        "sla_cutoff": window.sla_cutoff,
        "day_starts_at": window.day.starts_at,
        "day_ends_at": window.day.ends_at,
        "rows": filters.limit + 1,
    }
    if assignee is _AssigneeFilter.USER:
        values["assignee_user_id"] = filters.assignee.user_id  # type: ignore[union-attr]
    planned: list[tuple[Reason, _Bound]] = []
    for branch in branches:
        bound, at = (_Bound.OPEN, None) if filters.after is None else _branch_bound(branch, filters.after, window)
        if bound is not _Bound.SKIP:
            planned.append((branch.reason, bound))
        if at is not None:
            values[_bound_param(branch.reason).key] = at
    if filters.after is not None:
        values["after_rank_key"] = filters.after.rank_key
        values["after_id"] = filters.after.id
    shape = _Shape(reason=filters.reason, assignee=assignee, paged=filters.after is not None, branches=tuple(planned))
    return shape, values


@lru_cache(maxsize=256)
def _queue_statement(shape: _Shape) -> Select:
    c = leads.c
    keys = _reason_keys()
    common: list[ColumnElement] = [c.organization_id == _ORG, text(QUEUE_SCOPE_SQL)]
    if shape.assignee is _AssigneeFilter.NOBODY:
        common.append(c.assigned_to_user_id.is_(None))
    elif shape.assignee is _AssigneeFilter.USER:
        common.append(c.assigned_to_user_id == _ASSIGNEE)
    if shape.reason is not None:
        branch_reason = Reason.FOLLOW_UP_OVERDUE if shape.reason is Reason.FOLLOW_UP_DUE_TODAY else shape.reason
        rank = keys[branch_reason][1]
    else:
        rank = _best_key()

    selects = []
    for reason, bound in shape.branches:
        condition, _ = keys[reason]
        column = _order_column(reason)
        where = [*common, condition]
        if shape.reason is Reason.FOLLOW_UP_OVERDUE:
            where.append(c.next_action_at < _DAY_STARTS_AT)
        elif shape.reason is Reason.FOLLOW_UP_DUE_TODAY:
            where.append(c.next_action_at >= _DAY_STARTS_AT)
        if bound is _Bound.FROM:
            where.append(column >= _bound_param(reason))
        elif bound is _Bound.UNTIL:
            where.append(column <= _bound_param(reason))
        if shape.paged:
            where.append(tuple_(rank, c.id) > tuple_(_AFTER_KEY, _AFTER_ID))
        newest_first = next(b.newest_first for b in _BRANCHES if b.reason is reason)
        selects.append(
            select(c.id.label("id"), rank.label("rank_key"))
            .where(*where)
            # The branch's own rank order (its rank is monotone in its column; ties by id as the page's),
            # which its index gives directly (follow-ups) or nearly (an incremental sort of equal instants).
            .order_by(column.desc() if newest_first else column.asc(), c.id)
            .limit(_ROWS)
        )
    if not selects:  # every branch lies before the cursor: an empty page, still one statement
        selects.append(select(c.id.label("id"), rank.label("rank_key")).where(false()))
    candidates = (selects[0] if len(selects) == 1 else union(*selects)).subquery("candidates")
    top = (
        select(candidates.c.id, candidates.c.rank_key)
        .order_by(candidates.c.rank_key, candidates.c.id)
        .limit(_ROWS)
        .subquery("top")
    )
    return (
        select(*_ITEM_COLUMNS, top.c.rank_key)
        .select_from(top.join(leads, leads.c.id == top.c.id))
        .where(leads.c.organization_id == _ORG)
        .order_by(top.c.rank_key, top.c.id)
    )


def build_queue_query(actor: Actor, filters: QueueFilters, window: Window) -> Select:
    """The page statement with its values bound (public so the plan test and the bench EXPLAIN exactly
    what the route runs)."""
    shape, values = _shape_and_values(actor, filters, window)
    return _queue_statement(shape).params(values)


# What a page item shows, and the facts its reasons are computed from. Not archived_at or paused_at:
# the statement only returns leads in the queue scope, where both are null.
_ITEM_COLUMNS = (
    leads.c.id,
    leads.c.name,
    leads.c.phone,
    leads.c.status,
    leads.c.assigned_to_user_id,
    leads.c.next_action_at,
    leads.c.next_action_type,
    leads.c.returned_at,
    leads.c.returned_from_status,
    leads.c.returned_via,
    leads.c.created_at,
    leads.c.last_contact_attempt_at,
    leads.c.last_contacted_at,
    leads.c.last_inbound_at,
    leads.c.last_outbound_at,
)
_FACT_FIELDS = tuple(name for name in LeadFacts.__dataclass_fields__ if name not in ("archived_at", "paused_at"))


def queue_page(conn: Connection, actor: Actor, filters: QueueFilters, *, now: datetime | None = None) -> QueuePage:
    window = attention_window(conn, actor.organization_id, now or clock.now())
    shape, values = _shape_and_values(actor, filters, window)
    rows = conn.execute(_queue_statement(shape), values).mappings().all()
    page = rows[: filters.limit]
    items = []
    for row in page:
        facts = LeadFacts(**{name: row[name] for name in _FACT_FIELDS})
        reasons = lead_reasons(facts, now=window.now, day=window.day, sla=window.sla)
        key = Decimal(row["rank_key"])
        items.append(
            {
                "id": row["id"],
                "name": row["name"],
                "phone": row["phone"],
                "status": row["status"],
                "assigned_to_user_id": row["assigned_to_user_id"],
                "next_action_at": row["next_action_at"],
                "next_action_type": row["next_action_type"],
                "returned_at": row["returned_at"],
                "returned_from_status": row["returned_from_status"],
                "returned_via": row["returned_via"],
                "reasons": [r.value for r in reasons],
                "tier": int(key // TIER_SCALE),
                "rank_key": key,
            }
        )
    next_cursor = None
    if len(rows) > filters.limit and items:
        last = items[-1]
        next_cursor = QueueCursor(rank_key=last["rank_key"], id=last["id"], reason=filters.reason).encode()
    return QueuePage(items=items, next_cursor=next_cursor)
