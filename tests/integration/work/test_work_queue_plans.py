"""The work queue page and the urgent counts read leads and tasks through indexes that start with
organization_id, never a sequential scan: PostgreSQL's own plans (EXPLAIN of the very statements the
services build, after ANALYZE, planner settings untouched) on an organization of a few thousand leads among
many more in other organizations."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from sqlalchemy import text

from leadcrm.directory.access import resolve_actor
from leadcrm.directory.rules import Actor
from leadcrm.platform.assignee import NOBODY, Assignee
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.queue import DESC_BASE, TIER_SCALE, QueueCursor, QueueFilters, Window, build_queue_query
from leadcrm.work.rules.attention import DEFAULT_NEW_LEAD_SLA, Reason, Tier, org_day
from leadcrm.work.urgent_prompt import build_lead_count_query, build_task_counts_query
from tests.support.factories import make_caller, make_organization
from tests.support.lead_list_helpers import Board, explain, make_board, plan_nodes

ORG_LEADS = 3_000
OTHER_ORGS = 8
OTHER_ORG_LEADS = 2_500
NOW = datetime.now(UTC)


def _seed(board: Board, count: int, user_id: uuid.UUID | None) -> None:
    """Leads over every status, a third with a follow-up (some the intake seed), some returned, some with
    an unanswered inbound, a quarter untouched; tasks for a third of them."""
    with get_engine().begin() as conn:
        conn.execute(
            text(
                """
                INSERT INTO leads (id, organization_id, name, phone, status, pipeline_id, stage_id,
                                   assigned_to_user_id, archived_at, created_at, updated_at, status_changed_at,
                                   next_action_at, next_action_type, returned_at, last_contacted_at,
                                   last_contact_attempt_at, last_inbound_at)
                SELECT gen_random_uuid(), :org, 'Lead ' || g, '050-' || lpad(g::text, 7, '0'), s.category,
                       s.pipeline_id, s.id,
                       CASE WHEN mod(g, 3) <> 0 THEN CAST(:user_id AS uuid) END,
                       CASE WHEN mod(g, 12) = 0 THEN now() END,
                       now() - g * interval '37 minutes', now(), now(),
                       CASE WHEN mod(g, 3) = 0 THEN now() + (mod(g, 20) - 10) * interval '1 day'
                            WHEN mod(g, 3) = 1 THEN now() - g * interval '37 minutes' END,
                       CASE WHEN mod(g, 2) = 0 THEN 'call' ELSE 'email' END,
                       CASE WHEN mod(g, 17) = 0 THEN now() - mod(g, 200) * interval '1 hour' END,
                       CASE WHEN mod(g, 4) <> 0 THEN now() - interval '40 days' END,
                       CASE WHEN mod(g, 4) <> 0 THEN now() - interval '40 days' END,
                       CASE WHEN mod(g, 23) = 0 THEN now() - mod(g, 100) * interval '1 hour' END
                FROM generate_series(1, :n) AS g
                JOIN pipeline_stages s ON s.pipeline_id = :pipeline AND s.position = mod(g, 9)
                """
            ),
            {"org": board.organization_id, "pipeline": board.pipeline_id, "user_id": user_id, "n": count},
        )
        conn.execute(
            text(
                """
                INSERT INTO tasks (id, organization_id, type, title, status, due_date, assignee_user_id,
                                   linked_lead_id)
                SELECT gen_random_uuid(), l.organization_id, 'contact_lead', 'Call', 'pending',
                       CAST(l.created_at AS date) + 3, l.assigned_to_user_id, l.id
                FROM leads l WHERE l.organization_id = :org AND mod(get_byte(uuid_send(l.id), 15), 3) = 0
                """
            ),
            {"org": board.organization_id},
        )


@dataclass(frozen=True)
class Seeded:
    actor: Actor
    window: Window


@pytest.fixture(scope="module")
def seeded() -> Iterator[Seeded]:
    caller = make_caller(role="owner")
    board = make_board(caller.org_id, default=True)
    _seed(board, ORG_LEADS, caller.user.id)
    others = [make_organization() for _ in range(OTHER_ORGS)]
    for other in others:
        _seed(make_board(other.id, default=True), OTHER_ORG_LEADS, None)
    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE leads, tasks"))
        actor = resolve_actor(conn, caller.sub, caller.org_id)
    yield Seeded(actor=actor, window=Window(now=NOW, day=org_day(NOW, "UTC"), sla=DEFAULT_NEW_LEAD_SLA))
    with get_engine().begin() as conn:
        ids = "{" + ",".join(str(o) for o in [caller.org_id, *(o.id for o in others)]) + "}"
        conn.execute(text("DELETE FROM tasks WHERE organization_id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids})
        conn.execute(text("DELETE FROM organizations WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids})


def _cursor(tier: Tier, at: datetime, reason: Reason | None = None) -> QueueCursor:
    seconds = Decimal(int(at.timestamp() * 1_000_000)) / 1_000_000
    rest = seconds if tier == Tier.DUE else DESC_BASE - seconds
    return QueueCursor(rank_key=int(tier) * TIER_SCALE + rest, id=uuid.UUID(int=0), reason=reason)


QUEUE_SHAPES: dict[str, Callable[[Seeded], QueueFilters]] = {
    "first page": lambda s: QueueFilters(),
    "page in the hot tier": lambda s: QueueFilters(after=_cursor(Tier.HOT, NOW - timedelta(hours=3))),
    "page in the due tier": lambda s: QueueFilters(after=_cursor(Tier.DUE, NOW - timedelta(days=3))),
    "page in the cooling tier": lambda s: QueueFilters(after=_cursor(Tier.COOLING, NOW - timedelta(days=3))),
    "page in the backlog": lambda s: QueueFilters(after=_cursor(Tier.BACKLOG, NOW - timedelta(days=30))),
    "assignee=me": lambda s: QueueFilters(assignee=Assignee(s.actor.user_id)),
    "assignee=unassigned": lambda s: QueueFilters(assignee=NOBODY),
    **{f"reason={reason.value}": (lambda s, reason=reason: QueueFilters(reason=reason)) for reason in Reason},
}


def _org_led_indexes() -> set[str]:
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


def _assert_indexed(plan: dict, tables: tuple[str, ...]) -> None:
    nodes = list(plan_nodes(plan))
    described = [(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes]
    assert not [n for n in nodes if n["Node Type"] == "Seq Scan" and n.get("Relation Name") in tables], described
    used = {n["Index Name"] for n in nodes if "Index Name" in n}
    assert used & _org_led_indexes(), described


@pytest.mark.parametrize("shape", list(QUEUE_SHAPES))
def test_the_queue_page_reads_leads_through_organization_led_indexes(seeded, shape):
    with get_engine().connect() as conn:
        plan = explain(conn, build_queue_query(seeded.actor, QUEUE_SHAPES[shape](seeded), seeded.window))
    _assert_indexed(plan, ("leads",))


def test_the_urgent_task_counts_read_tasks_through_an_organization_led_index(seeded):
    query = build_task_counts_query(seeded.actor.organization_id, seeded.actor.user_id, seeded.window.day)
    with get_engine().connect() as conn:
        plan = explain(conn, query)
    _assert_indexed(plan, ("tasks",))


def test_the_urgent_lead_count_reads_leads_and_tasks_through_indexes(seeded):
    query = build_lead_count_query(seeded.actor.organization_id, now=NOW, day=seeded.window.day)
    with get_engine().connect() as conn:
        plan = explain(conn, query)
    _assert_indexed(plan, ("leads", "tasks"))


def test_the_urgent_lead_count_uses_each_reasons_partial_index(seeded):
    query = build_lead_count_query(seeded.actor.organization_id, now=NOW, day=seeded.window.day)
    with get_engine().connect() as conn:
        plan = explain(conn, query)
    used = {n.get("Index Name") for n in plan_nodes(plan)}
    assert {"ix_leads_queue_untouched_new", "ix_leads_queue_follow_up", "ix_leads_queue_inbound_unanswered"} <= used
