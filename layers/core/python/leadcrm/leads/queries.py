"""Reading leads: one lead with its pipelines, tags and timeline, and the filtered keyset-paginated list.

Both reads cost a fixed number of statements whatever the size of the answer: the list is one statement
(the page, then the tags of its rows in a correlated aggregate), the detail is two (the lead with its
placements and tags, then the merged timeline). The routes' variants (`…_as_member`) carry the caller's
membership check in their first statement (leadcrm.directory.member_reads), so that check costs no round
trip of its own. `build_list_query` is public so the plan test can EXPLAIN exactly the statement the list
runs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Text,
    Uuid,
    and_,
    bindparam,
    cast,
    exists,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB, aggregate_order_by

from leadcrm.conversations.tables import conversation_messages, conversations
from leadcrm.directory.member_reads import (
    CALLER_USER_ID,
    Gate,
    data_column,
    last_phone_region,
    member_statement,
    read_as_member,
)
from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import users
from leadcrm.leads.moves import id_list
from leadcrm.leads.rules.listing import (
    ArchivedFilter,
    LeadListFilters,
    LeadSort,
    ListCursor,
    SortOrder,
)
from leadcrm.leads.tables import (
    LEAD_COLUMNS,
    lead_activity_events,
    lead_pipeline_placements,
    lead_status_events,
    lead_tag_assignments,
    lead_tags,
    leads,
)
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.db.filters import assignee_condition
from leadcrm.platform.errors import NotFound

# The spec's unified timeline keeps the last 100 entries (status flips, activity, inbox messages).
TIMELINE_LIMIT = 100

SORT_COLUMNS = {
    LeadSort.CREATED_AT: leads.c.created_at,
    LeadSort.UPDATED_AT: leads.c.updated_at,
    LeadSort.STATUS_CHANGED_AT: leads.c.status_changed_at,
}


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


class ListReader(Protocol):
    """Whom a list is read for: an Actor, or (`CallerReader`) the caller a member read resolves in SQL."""

    @property
    def organization_id(self) -> uuid.UUID: ...

    @property
    def user_id(self) -> uuid.UUID | ColumnElement[Any] | None: ...  # `assignee=me`

    @property
    def phone_region(self) -> str | None: ...  # phone search patterns


@dataclass(frozen=True)
class CallerReader:
    """The caller of a member read: `me` is the membership row's user, and the phone region a guess that
    `list_leads_as_member` checks against the row."""

    organization_id: uuid.UUID
    phone_region: str | None

    @property
    def user_id(self) -> ColumnElement[Any]:
        return CALLER_USER_ID


def _json_array(element: ColumnElement, *order_by: ColumnElement) -> ColumnElement:
    """jsonb_agg(element ORDER BY …), or [] when there are no rows."""
    return func.coalesce(
        func.jsonb_agg(aggregate_order_by(element, *order_by)), literal_column("'[]'::jsonb"), type_=JSONB
    )


def _tags_of(lead_id: ColumnElement, organization_id: uuid.UUID | ColumnElement) -> ColumnElement:
    """The lead's tags as a JSON array, by category then name; correlated on `lead_id`."""
    tag = func.jsonb_build_object(
        "id", lead_tags.c.id, "name", lead_tags.c.name, "category", lead_tags.c.category, "color", lead_tags.c.color
    )
    return (
        select(_json_array(tag, lead_tags.c.category, func.lower(lead_tags.c.name), lead_tags.c.id))
        .select_from(lead_tag_assignments.join(lead_tags, lead_tags.c.id == lead_tag_assignments.c.tag_id))
        .where(lead_tag_assignments.c.organization_id == organization_id, lead_tag_assignments.c.lead_id == lead_id)
        .scalar_subquery()
    )


# -- one lead ---------------------------------------------------------------------------------------------

# Both detail statements are built once: they differ per request only by their bound parameters.
_ORGANIZATION_ID = bindparam("organization_id", type_=Uuid)
_LEAD_ID = bindparam("lead_id", type_=Uuid)


def _lead_statement() -> Select:
    """The lead row with its primary pipeline and stage names, its secondary placements and its tags."""
    primary_pipeline = pipelines.alias("primary_pipeline")
    primary_stage = pipeline_stages.alias("primary_stage")
    secondary_pipeline = pipelines.alias("secondary_pipeline")
    secondary_stage = pipeline_stages.alias("secondary_stage")
    secondary = func.jsonb_build_object(
        "pipeline_id", lead_pipeline_placements.c.pipeline_id,
        "pipeline_name", secondary_pipeline.c.name,
        "stage_id", lead_pipeline_placements.c.stage_id,
        "stage_name", secondary_stage.c.name,
        "category", secondary_stage.c.category,
        "primary", False,
    )  # fmt: skip
    secondaries = (
        select(_json_array(secondary, secondary_pipeline.c.name, secondary_pipeline.c.id))
        .select_from(
            lead_pipeline_placements.join(
                secondary_pipeline, secondary_pipeline.c.id == lead_pipeline_placements.c.pipeline_id
            ).join(secondary_stage, secondary_stage.c.id == lead_pipeline_placements.c.stage_id)
        )
        .where(
            lead_pipeline_placements.c.organization_id == _ORGANIZATION_ID,
            lead_pipeline_placements.c.lead_id == leads.c.id,
        )
        .scalar_subquery()
    )
    return (
        select(
            *LEAD_COLUMNS,
            primary_pipeline.c.name.label("primary_pipeline_name"),
            primary_stage.c.name.label("primary_stage_name"),
            primary_stage.c.category.label("primary_stage_category"),
            secondaries.label("secondary_pipelines"),
            _tags_of(leads.c.id, _ORGANIZATION_ID).label("tags"),
        )
        .select_from(
            leads.join(primary_pipeline, primary_pipeline.c.id == leads.c.pipeline_id).join(
                primary_stage, primary_stage.c.id == leads.c.stage_id
            )
        )
        .where(leads.c.id == _LEAD_ID, leads.c.organization_id == _ORGANIZATION_ID)
    )


def _timeline_statement() -> Select:
    """Status flips, activity entries and the lead's conversation messages (sent, failed, received, notes)
    merged newest first (at most TIMELINE_LIMIT), with the actor's and the stages' display names resolved
    in SQL."""
    status_rows = (
        select(
            lead_status_events.c.id,
            literal("status_changed").label("kind"),
            literal("status_changed").label("type"),
            lead_status_events.c.changed_at.label("at"),
            lead_status_events.c.actor_user_id,
            lead_status_events.c.from_status,
            lead_status_events.c.to_status,
            lead_status_events.c.from_stage_id,
            lead_status_events.c.to_stage_id,
            lead_status_events.c.reason,
            null().cast(JSONB).label("payload"),
            cast(lead_status_events.c.group_xact, Text).label("group"),
        )
        .where(lead_status_events.c.organization_id == _ORGANIZATION_ID, lead_status_events.c.lead_id == _LEAD_ID)
        .order_by(lead_status_events.c.changed_at.desc(), lead_status_events.c.id.desc())
        .limit(TIMELINE_LIMIT)
    )
    activity_rows = (
        select(
            lead_activity_events.c.id,
            literal("activity").label("kind"),
            lead_activity_events.c.type,
            lead_activity_events.c.occurred_at.label("at"),
            lead_activity_events.c.actor_user_id,
            null().label("from_status"),
            null().label("to_status"),
            null().label("from_stage_id"),
            null().label("to_stage_id"),
            null().label("reason"),
            lead_activity_events.c.payload,
            cast(lead_activity_events.c.group_xact, Text).label("group"),
        )
        .where(lead_activity_events.c.organization_id == _ORGANIZATION_ID, lead_activity_events.c.lead_id == _LEAD_ID)
        .order_by(lead_activity_events.c.occurred_at.desc(), lead_activity_events.c.id.desc())
        .limit(TIMELINE_LIMIT)
    )
    message_payload = func.jsonb_build_object(
        "conversationId", conversation_messages.c.conversation_id,
        "channel", conversation_messages.c.channel,
        "direction", conversation_messages.c.direction,
        "status", conversation_messages.c.status,
        "deliveryStatus", conversation_messages.c.delivery_status,
        "subject", conversation_messages.c.subject,
        "preview", func.left(conversation_messages.c.body, 200),
    )  # fmt: skip
    message_rows = (
        select(
            conversation_messages.c.id,
            literal("message").label("kind"),
            (literal("message_") + conversation_messages.c.direction).label("type"),
            conversation_messages.c.created_at.label("at"),
            conversation_messages.c.author_user_id.label("actor_user_id"),
            null().label("from_status"),
            null().label("to_status"),
            null().label("from_stage_id"),
            null().label("to_stage_id"),
            null().label("reason"),
            message_payload.label("payload"),
            null().cast(Text).label("group"),  # a message is its own entry
        )
        .select_from(
            conversation_messages.join(conversations, conversations.c.id == conversation_messages.c.conversation_id)
        )
        .where(conversations.c.organization_id == _ORGANIZATION_ID, conversations.c.lead_id == _LEAD_ID)
        .order_by(conversation_messages.c.created_at.desc(), conversation_messages.c.id.desc())
        .limit(TIMELINE_LIMIT)
    )
    merged = union_all(status_rows, activity_rows, message_rows).subquery("entries")
    actor = users.alias("actor")
    from_stage = pipeline_stages.alias("from_stage")
    to_stage = pipeline_stages.alias("to_stage")
    actor_name = func.nullif(func.trim(func.concat_ws(" ", actor.c.first_name, actor.c.last_name)), "")
    return (
        select(
            merged,
            actor_name.label("actor_name"),
            from_stage.c.name.label("from_stage_name"),
            to_stage.c.name.label("to_stage_name"),
        )
        .select_from(
            merged.outerjoin(actor, actor.c.id == merged.c.actor_user_id)
            .outerjoin(from_stage, from_stage.c.id == merged.c.from_stage_id)
            .outerjoin(to_stage, to_stage.c.id == merged.c.to_stage_id)
        )
        .order_by(merged.c.at.desc(), merged.c.id.desc())
        .limit(TIMELINE_LIMIT)
    )


_LEAD = _lead_statement()
_TIMELINE = _timeline_statement()


_LEAD_AS_MEMBER = member_statement(_LEAD)


def get_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The lead, its pipeline memberships (primary first), its tags and its timeline, newest first.

    Another organization's lead is simply not found. Two statements, whatever the lead has.
    """
    keys = {"organization_id": organization_id, "lead_id": lead_id}
    row = conn.execute(_LEAD, keys).mappings().first()
    if row is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    return _detail(conn, row, organization_id, lead_id)


def get_lead_as_member(
    conn: Connection, auth_subject: str, organization_id: uuid.UUID, lead_id: uuid.UUID, gate: Gate
) -> tuple[Actor, dict[str, Any] | None]:
    """The caller (refused as resolve_actor and `gate` refuse) and the lead as `get_lead` reads it, or None
    when the organization has no such lead: the membership check and the lead in one statement, the
    timeline in a second."""
    read = read_as_member(
        conn,
        _LEAD_AS_MEMBER,
        auth_subject=auth_subject,
        organization_id=organization_id,
        gate=gate,
        params={"lead_id": lead_id},
    )
    if not read.rows:
        return read.actor, None
    return read.actor, _detail(conn, read.rows[0], organization_id, lead_id)


def _detail(conn: Connection, row: Any, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    primary = {
        "pipeline_id": row["pipeline_id"],
        "pipeline_name": row["primary_pipeline_name"],
        "stage_id": row["stage_id"],
        "stage_name": row["primary_stage_name"],
        "category": row["primary_stage_category"],
        "primary": True,
    }
    return {
        **{column.name: row[column.name] for column in LEAD_COLUMNS},
        "pipelines": [primary, *row["secondary_pipelines"]],
        "tags": row["tags"],
        "timeline": timeline(conn, organization_id, lead_id),
    }


def timeline(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[dict[str, Any]]:
    """The lead's unified timeline, newest first, in one statement."""
    return [
        dict(r) for r in conn.execute(_TIMELINE, {"organization_id": organization_id, "lead_id": lead_id}).mappings()
    ]


# -- the list ---------------------------------------------------------------------------------------------


def list_leads(conn: Connection, actor: Actor, filters: LeadListFilters) -> Page:
    """One page of the organization's leads, in one statement."""
    return _page([dict(r) for r in conn.execute(build_list_query(actor, filters)).mappings()], filters)


def list_leads_as_member(
    conn: Connection, auth_subject: str, organization_id: uuid.UUID, filters: LeadListFilters, gate: Gate
) -> tuple[Actor, Page]:
    """The caller (refused as resolve_actor and `gate` refuse) and one page of the list, in one statement.

    A phone search reads national numbers in the organization's region, which the statement reads as it runs:
    it is built with the region last seen for the organization, and run again for the caller read when that
    guess would have made other patterns (a first search in this container, a changed setting)."""
    guess = last_phone_region(organization_id)
    read = read_as_member(
        conn,
        build_member_list_query(organization_id, filters, phone_region=guess),
        auth_subject=auth_subject,
        organization_id=organization_id,
        gate=gate,
    )
    term = filters.search
    if term is not None and term.phone_patterns(read.actor.phone_region) != term.phone_patterns(guess):
        return read.actor, list_leads(conn, read.actor, filters)
    return read.actor, _page(read.rows, filters)


def build_member_list_query(
    organization_id: uuid.UUID, filters: LeadListFilters, *, phone_region: str | None
) -> Select:
    """The list route's statement: `build_list_query` for the caller, behind the caller's membership check
    (leadcrm.directory.member_reads; bind `caller_auth_subject` and `organization_id`), its rows in the page's
    order. Public so the plan test can EXPLAIN it."""
    key = (data_column(SORT_COLUMNS[filters.sort].name), data_column("id"))
    page_order = [c.desc() for c in key] if filters.order is SortOrder.DESC else [c.asc() for c in key]
    reader = CallerReader(organization_id=organization_id, phone_region=phone_region)
    return member_statement(build_list_query(reader, filters), order_by=page_order)


def _page(rows: list[dict[str, Any]], filters: LeadListFilters) -> Page:
    """limit + 1 rows read: the page, and whether another follows."""
    items = rows[: filters.limit]
    next_cursor = None
    if len(rows) > filters.limit:
        last = items[-1]
        next_cursor = ListCursor(
            sort=filters.sort, order=filters.order, key=last[SORT_COLUMNS[filters.sort].name], id=last["id"]
        ).encode()
    return Page(items=items, next_cursor=next_cursor)


def build_list_query(reader: ListReader, filters: LeadListFilters) -> Select:
    """The list statement: a keyset page on (sort column, id) among the filtered leads (limit + 1 rows, to
    know whether there is a next page), then each row's tags, aggregated for the page rows only.

    A pipeline filter splits the page in two branches, merged by the sort key: leads whose primary pipeline
    it is, and leads placed there as a secondary pipeline. Each branch reads one table's index on
    (organization, pipeline, stage) or walks the sort index, whichever PostgreSQL estimates cheaper; an OR
    across both tables (or an IN over their union) leaves it no good plan for a stage holding a handful of
    leads (a walk through the whole organization) or for one holding thousands (fetch and sort them all).
    """
    organization_id = reader.organization_id
    sort_column = SORT_COLUMNS[filters.sort]
    descending = filters.order is SortOrder.DESC
    conditions = [leads.c.organization_id == organization_id, *_filter_conditions(reader, filters)]
    if filters.after is not None:
        key = tuple_(sort_column, leads.c.id)
        after = tuple_(literal(filters.after.key, sort_column.type), literal(filters.after.id, leads.c.id.type))
        conditions.append(key < after if descending else key > after)
    ordering = (sort_column.desc(), leads.c.id.desc()) if descending else (sort_column.asc(), leads.c.id.asc())
    rows = filters.limit + 1
    if filters.pipeline_id is None:
        page = select(*LEAD_COLUMNS).where(*conditions).order_by(*ordering).limit(rows).subquery("page")
    else:
        primary, secondary = _pipeline_branches(organization_id, filters.pipeline_id, filters.stage_ids)
        branches = union_all(
            primary.where(*conditions).order_by(*ordering).limit(rows),
            secondary.where(*conditions).order_by(*ordering).limit(rows),
        ).subquery("branches")
        branch_sort = branches.c[sort_column.name]
        merged_order = (
            (branch_sort.desc(), branches.c.id.desc()) if descending else (branch_sort.asc(), branches.c.id.asc())
        )
        page = select(branches).order_by(*merged_order).limit(rows).subquery("page")
    page_sort = page.c[sort_column.name]
    return select(page, _tags_of(page.c.id, organization_id).label("tags")).order_by(
        *((page_sort.desc(), page.c.id.desc()) if descending else (page_sort.asc(), page.c.id.asc()))
    )


def _pipeline_branches(
    organization_id: uuid.UUID, pipeline_id: uuid.UUID, stage_ids: tuple[uuid.UUID, ...]
) -> tuple[Select, Select]:
    """The leads in the pipeline, as two disjoint selects: on it as their primary pipeline, and placed on it
    as a secondary one. With stage ids, on the lead's effective stage there, coalesce(placement.stage_id,
    primary stage): a placement wins over the primary stage, though set-primary never leaves both."""
    placement = lead_pipeline_placements
    placed_here = exists().where(
        placement.c.organization_id == organization_id,
        placement.c.lead_id == leads.c.id,
        placement.c.pipeline_id == pipeline_id,
    )
    primary = select(*LEAD_COLUMNS).where(leads.c.pipeline_id == pipeline_id, ~placed_here)
    secondary = select(*LEAD_COLUMNS).select_from(
        leads.join(
            placement,
            and_(
                placement.c.lead_id == leads.c.id,
                placement.c.organization_id == organization_id,
                placement.c.pipeline_id == pipeline_id,
            ),
        )
    )
    if stage_ids:
        primary = primary.where(leads.c.stage_id.in_(stage_ids))
        secondary = secondary.where(placement.c.stage_id.in_(stage_ids))
    return primary, secondary


def _filter_conditions(reader: ListReader, filters: LeadListFilters) -> list[ColumnElement[bool]]:
    organization_id = reader.organization_id
    conditions: list[ColumnElement[bool]] = []
    if filters.archived is ArchivedFilter.LIVE:
        conditions.append(leads.c.archived_at.is_(None))
    elif filters.archived is ArchivedFilter.ARCHIVED:
        conditions.append(leads.c.archived_at.is_not(None))
    if filters.statuses:
        conditions.append(leads.c.status.in_(filters.statuses))
    if filters.pipeline_id is None and filters.stage_ids:  # with a pipeline: see _pipeline_branches
        conditions.append(leads.c.stage_id.in_(filters.stage_ids))
    if filters.tag_ids:
        conditions.append(
            exists().where(
                lead_tag_assignments.c.organization_id == organization_id,
                lead_tag_assignments.c.lead_id == leads.c.id,
                lead_tag_assignments.c.tag_id.in_(filters.tag_ids),
            )
        )
    if filters.campaign_id is not None:
        conditions.append(leads.c.campaign_id == filters.campaign_id)
    if filters.assignee is not None:
        conditions.append(assignee_condition(leads.c.assigned_to_user_id, filters.assignee))
    if filters.assigned_to_caller:
        conditions.append(leads.c.assigned_to_user_id == reader.user_id)
    if filters.is_test is not None:
        conditions.append(leads.c.is_test.is_(filters.is_test))
    if filters.search is not None:
        term = filters.search
        matches = [
            leads.c.name.ilike(term.contains_pattern, escape="\\"),
            leads.c.email.ilike(term.contains_pattern, escape="\\"),
            *(leads.c.phone_digits.like(pattern) for pattern in term.phone_patterns(reader.phone_region)),
        ]
        conditions.append(or_(*matches))
    return conditions


def matching_lead_ids(
    actor: Actor,
    filters: LeadListFilters,
    *,
    lead_ids: tuple[uuid.UUID, ...] = (),
    exclude_tag_ids: tuple[uuid.UUID, ...] = (),
) -> Select:
    """Every lead the list would show for `filters` (all pages, unsorted: a bulk audience), optionally
    narrowed to `lead_ids` and without leads having any of `exclude_tag_ids`. One column, `id`."""
    organization_id = actor.organization_id
    conditions = [leads.c.organization_id == organization_id, *_filter_conditions(actor, filters)]
    if lead_ids:
        conditions.append(leads.c.id == func.any(id_list("audience_lead_ids", lead_ids)))
    if exclude_tag_ids:
        conditions.append(
            ~exists().where(
                lead_tag_assignments.c.organization_id == organization_id,
                lead_tag_assignments.c.lead_id == leads.c.id,
                lead_tag_assignments.c.tag_id.in_(exclude_tag_ids),
            )
        )
    if filters.pipeline_id is None:
        return select(leads.c.id).where(*conditions)
    primary, secondary = _pipeline_branches(organization_id, filters.pipeline_id, filters.stage_ids)
    return union_all(
        primary.with_only_columns(leads.c.id).where(*conditions),
        secondary.with_only_columns(leads.c.id).where(*conditions),
    )
