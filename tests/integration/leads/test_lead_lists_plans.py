"""Every list query shape reads leads through an index, never a sequential scan of the table.

The plans are PostgreSQL's own (EXPLAIN of the very statement the service builds, after ANALYZE, planner
settings untouched) on an organization of a few thousand leads among many more in other organizations: the
list query alone (bulk audiences and the bench read it so) and the route's, behind the membership check.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from sqlalchemy import Select, text

from leadcrm.directory.access import resolve_actor
from leadcrm.directory.rules import Actor
from leadcrm.leads.queries import build_list_query, build_member_list_query
from leadcrm.leads.rules.listing import (
    ArchivedFilter,
    LeadListFilters,
    LeadSort,
    ListCursor,
    SortOrder,
    parse_search,
)
from leadcrm.platform.assignee import NOBODY, Assignee
from leadcrm.platform.db.engine import get_engine
from tests.support.factories import make_caller, make_organization
from tests.support.lead_list_helpers import Board, explain, make_board, make_campaign, make_tag, plan_nodes

ORG_LEADS = 3_000
OTHER_ORGS = 8
OTHER_ORG_LEADS = 2_500


@dataclass(frozen=True)
class Seeded:
    actor: Actor
    subject: str
    board: Board
    courses: Board
    tag_ids: list[uuid.UUID]
    campaign_id: uuid.UUID


def _seed_leads(board: Board, count: int, *, campaign_id: uuid.UUID, user_id: uuid.UUID | None) -> None:
    """`count` leads spread over the board's stages, owners, campaigns, archived and test flags."""
    with get_engine().begin() as conn:
        conn.execute(
            text(
                """
                INSERT INTO leads (id, organization_id, name, email, phone, status, pipeline_id, stage_id,
                                   campaign_id, assigned_to_user_id, is_test, archived_at,
                                   created_at, updated_at, status_changed_at)
                SELECT gen_random_uuid(), :org, 'Lead ' || md5(g::text), 'lead' || g || '@example.test',
                       '050-' || lpad(g::text, 7, '0'), s.category, s.pipeline_id, s.id,
                       CASE WHEN mod(g, 3) = 0 THEN CAST(:campaign AS uuid) END,
                       CASE WHEN mod(g, 4) = 0 THEN CAST(:user_id AS uuid) END,
                       mod(g, 100) = 0,
                       CASE WHEN mod(g, 12) = 0 THEN now() END,
                       now() - g * interval '7 minutes', now() - g * interval '5 minutes',
                       now() - g * interval '3 minutes'
                FROM generate_series(1, :n) AS g
                JOIN pipeline_stages s ON s.pipeline_id = :pipeline AND s.position = mod(g, 9)
                """
            ),
            {
                "org": board.organization_id,
                "pipeline": board.pipeline_id,
                "campaign": campaign_id,
                "user_id": user_id,
                "n": count,
            },
        )


def _seed_placements_and_tags(board: Board, courses: Board, tag_ids: list[uuid.UUID]) -> None:
    with get_engine().begin() as conn:
        params = {"org": board.organization_id}
        conn.execute(
            text(
                """
                INSERT INTO lead_pipeline_placements (id, organization_id, lead_id, pipeline_id, stage_id)
                SELECT gen_random_uuid(), l.organization_id, l.id, :courses, :customer
                FROM leads l WHERE l.organization_id = :org AND mod(get_byte(uuid_send(l.id), 15), 10) = 0
                """
            ),
            {**params, "courses": courses.pipeline_id, "customer": courses.stages["customer"]},
        )
        conn.execute(
            text(
                """
                INSERT INTO lead_tag_assignments (lead_id, tag_id, organization_id)
                SELECT l.id, (CAST(:tags AS uuid[]))[1 + mod(get_byte(uuid_send(l.id), 14), 10)], l.organization_id
                FROM leads l WHERE l.organization_id = :org AND mod(get_byte(uuid_send(l.id), 13), 2) = 0
                """
            ),
            {**params, "tags": "{" + ",".join(map(str, tag_ids)) + "}"},
        )


@pytest.fixture(scope="module")
def seeded() -> Iterator[Seeded]:
    caller = make_caller()
    board = make_board(caller.org_id, default=True)
    courses = make_board(caller.org_id, "Courses", ("new", "contacted", "customer", "lost"))
    tag_ids = [make_tag(caller.org_id, f"Tag {i}") for i in range(10)]
    campaign_id = make_campaign(caller.org_id)
    _seed_leads(board, ORG_LEADS, campaign_id=campaign_id, user_id=caller.user.id)
    _seed_placements_and_tags(board, courses, tag_ids)
    others = [make_organization() for _ in range(OTHER_ORGS)]
    for other in others:
        other_board = make_board(other.id, default=True)
        _seed_leads(other_board, OTHER_ORG_LEADS, campaign_id=make_campaign(other.id), user_id=None)
    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE leads, lead_tag_assignments, lead_pipeline_placements"))
        actor = resolve_actor(conn, caller.sub, caller.org_id)
    yield Seeded(
        actor=actor, subject=caller.sub, board=board, courses=courses, tag_ids=tag_ids, campaign_id=campaign_id
    )
    with get_engine().begin() as conn:
        conn.execute(
            text("DELETE FROM organizations WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": "{" + ",".join(str(o) for o in [caller.org_id, *(o.id for o in others)]) + "}"},
        )


def _deep_page() -> ListCursor:
    return ListCursor(
        sort=LeadSort.CREATED_AT, order=SortOrder.DESC, key=datetime(2020, 1, 1, tzinfo=UTC), id=uuid.UUID(int=0)
    )


# Each list shape, built from the seeded organization's ids.
SHAPES: dict[str, Callable[[Seeded], LeadListFilters]] = {
    "default": lambda s: LeadListFilters(),
    "next page": lambda s: LeadListFilters(after=_deep_page()),
    "status": lambda s: LeadListFilters(statuses=("contacted",)),
    "several statuses": lambda s: LeadListFilters(statuses=("trial_booked", "no_show", "lost")),
    "pipeline": lambda s: LeadListFilters(pipeline_id=s.courses.pipeline_id),
    "pipeline and stages": lambda s: LeadListFilters(
        pipeline_id=s.board.pipeline_id, stage_ids=(s.board.stages["callback"], s.board.stages["trial_booked"])
    ),
    "stages of the primary pipeline": lambda s: LeadListFilters(stage_ids=(s.board.stages["contacted"],)),
    "tag": lambda s: LeadListFilters(tag_ids=(s.tag_ids[0],)),
    "several tags": lambda s: LeadListFilters(tag_ids=tuple(s.tag_ids[:3])),
    "campaign": lambda s: LeadListFilters(campaign_id=s.campaign_id),
    "assignee=me": lambda s: LeadListFilters(assignee=Assignee(s.actor.user_id)),
    "assignee=unassigned": lambda s: LeadListFilters(assignee=NOBODY),
    "archived": lambda s: LeadListFilters(archived=ArchivedFilter.ARCHIVED),
    "archived and live": lambda s: LeadListFilters(archived=ArchivedFilter.ALL),
    "not test leads": lambda s: LeadListFilters(is_test=False),
    "search name": lambda s: LeadListFilters(search=parse_search("lead 3a")),
    "search email": lambda s: LeadListFilters(search=parse_search("lead1234@")),
    "search phone digits": lambda s: LeadListFilters(search=parse_search("0001234")),
    "search without a match": lambda s: LeadListFilters(search=parse_search("zzqx")),
    "search of 2 characters": lambda s: LeadListFilters(search=parse_search("ab")),
    "combined": lambda s: LeadListFilters(
        statuses=("contacted",), assignee=Assignee(s.actor.user_id), sort=LeadSort.UPDATED_AT
    ),
    **{
        f"sort {sort.value} {order.value}": (lambda s, sort=sort, order=order: LeadListFilters(sort=sort, order=order))
        for sort in LeadSort
        for order in SortOrder
    },
}


def _org_led_indexes() -> set[str]:
    """Indexes whose first column is organization_id."""
    with get_engine().connect() as conn:
        return set(
            conn.execute(
                text(
                    """
                    SELECT i.relname FROM pg_index x
                    JOIN pg_class i ON i.oid = x.indexrelid
                    JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
                    WHERE a.attname = 'organization_id'
                    """
                )
            ).scalars()
        )


def _route_statement(seeded: Seeded, filters: LeadListFilters) -> Select:
    """What GET …/leads runs: the caller's membership check and the page in one statement."""
    organization_id = seeded.actor.organization_id
    statement = build_member_list_query(organization_id, filters, phone_region=seeded.actor.phone_region)
    return statement.params(caller_auth_subject=seeded.subject, organization_id=organization_id)


STATEMENTS: dict[str, Callable[[Seeded, LeadListFilters], Select]] = {
    "list query": lambda seeded, filters: build_list_query(seeded.actor, filters),
    "route": _route_statement,
}


@pytest.mark.parametrize("statement", list(STATEMENTS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_list_query_never_scans_the_leads_table_sequentially(seeded, shape, statement):
    filters = SHAPES[shape](seeded)
    with get_engine().connect() as conn:
        plan = explain(conn, STATEMENTS[statement](seeded, filters))
    nodes = list(plan_nodes(plan))
    described = [(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes]
    assert not [n for n in nodes if n["Node Type"] == "Seq Scan" and n.get("Relation Name") == "leads"], described


@pytest.mark.parametrize("statement", list(STATEMENTS))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_list_query_finds_its_rows_through_an_index_that_starts_with_organization_id(seeded, shape, statement):
    filters = SHAPES[shape](seeded)
    with get_engine().connect() as conn:
        plan = explain(conn, STATEMENTS[statement](seeded, filters))
    used = {n["Index Name"] for n in plan_nodes(plan) if "Index Name" in n}
    assert used & _org_led_indexes(), used
