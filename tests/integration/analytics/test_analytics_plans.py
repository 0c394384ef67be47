"""The analytics statements read leads, the status history and the touches through indexes that start with
organization_id, never a sequential scan, and the whole-organization figures from the indexes alone:
PostgreSQL's own plans (EXPLAIN of the very statements the services build, after VACUUM ANALYZE, planner
settings untouched) on an organization of a few thousand leads among many more in other organizations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from leadcrm.analytics.attribution_report import build_journeys_query, build_rollup_journeys_query
from leadcrm.analytics.reports import build_analytics_query, build_funnel_query, build_response_times_query
from leadcrm.analytics.rollup_queue import fold_pending
from leadcrm.analytics.rollups import build_funnel_rollup_query, local_days
from leadcrm.analytics.rules.reports import DEFAULT_ATTRIBUTION_WINDOW, Period, period_of
from leadcrm.platform.db.engine import get_engine
from tests.support.database import engine_for
from tests.support.factories import make_organization
from tests.support.lead_list_helpers import explain, make_board, plan_nodes

ORG_LEADS = 3_000
OTHER_ORGS = 8
OTHER_ORG_LEADS = 2_500
BIG_TABLES = {"leads", "lead_status_events", "lead_touches"}
ANALYZED = "leads, lead_status_events, lead_touches, analytics_lead_facts, analytics_daily_acquired"

_SEED = """
INSERT INTO leads (id, organization_id, name, source, status, pipeline_id, stage_id, campaign_id, is_test,
                   first_human_response_at, created_at, updated_at, status_changed_at)
SELECT gen_random_uuid(), :org, 'Lead ' || g, (ARRAY['minisite', 'facebook', 'manual'])[1 + mod(g, 3)],
       s.category, s.pipeline_id, s.id, NULL, mod(g, 100) = 0,
       CASE WHEN mod(g, 4) <> 0 THEN now() - g * interval '37 minutes' + interval '20 minutes' END,
       now() - g * interval '37 minutes', now(), now()
FROM generate_series(1, :count) AS g
JOIN pipeline_stages s ON s.pipeline_id = :pipeline
 AND s.category = (ARRAY['new', 'contacted', 'callback', 'trial_booked', 'no_show', 'converted', 'customer',
                         'lost', 'frozen'])[1 + mod(g, 9)];
INSERT INTO lead_status_events (id, organization_id, lead_id, to_status, to_stage_id, changed_at)
SELECT gen_random_uuid(), l.organization_id, l.id, 'new', l.stage_id, l.created_at
FROM leads l WHERE l.organization_id = :org;
INSERT INTO lead_status_events (id, organization_id, lead_id, from_status, to_status, to_stage_id, changed_at)
SELECT gen_random_uuid(), l.organization_id, l.id, 'new', l.status, l.stage_id, l.created_at + interval '1 day'
FROM leads l WHERE l.organization_id = :org AND l.status <> 'new';
INSERT INTO lead_touches (id, organization_id, lead_id, kind, channel, is_first, occurred_at, campaign_id)
SELECT gen_random_uuid(), l.organization_id, l.id, 'form', l.source, true, l.created_at, l.campaign_id
FROM leads l WHERE l.organization_id = :org;
INSERT INTO lead_touches (id, organization_id, lead_id, kind, channel, occurred_at)
SELECT gen_random_uuid(), l.organization_id, l.id, 'ad', 'facebook', l.created_at + interval '2 hours'
FROM leads l WHERE l.organization_id = :org AND mod(get_byte(uuid_send(l.id), 3), 3) = 0
"""


def _seed(organization_id: uuid.UUID, count: int) -> None:
    board = make_board(organization_id, default=True)
    with get_engine().begin() as conn:
        for statement in (s for s in _SEED.split(";") if s.strip()):
            conn.execute(text(statement), {"org": organization_id, "count": count, "pipeline": board.pipeline_id})
        fold_pending(conn, organization_id, limit=count)  # the rollups of what was written, as the job would


@pytest.fixture(scope="module")
def organization_id(database_url: str) -> Iterator[uuid.UUID]:
    for _ in range(OTHER_ORGS):
        _seed(make_organization().id, OTHER_ORG_LEADS)
    org = make_organization()
    _seed(org.id, ORG_LEADS)
    # VACUUM (not only ANALYZE): index-only scans are planned from the visibility map it sets. Twice: one
    # pass right after the seed was seen to leave most freshly written pages not marked all-visible.
    engine = engine_for(database_url).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for _ in range(2):
                conn.execute(text(f"VACUUM (ANALYZE) {ANALYZED}"))
    finally:
        engine.dispose()
    yield org.id


def _plan(statement) -> list[dict]:
    with get_engine().connect() as conn:
        return list(plan_nodes(explain(conn, statement)))


def _seq_scans(nodes: list[dict]) -> set[str]:
    return {n["Relation Name"] for n in nodes if n["Node Type"] == "Seq Scan" and n["Relation Name"] in BIG_TABLES}


def _indexes(nodes: list[dict]) -> set[str]:
    return {n["Index Name"] for n in nodes if "Index Name" in n}


ALL_TIME = Period(None, None)
NOW = datetime.now(UTC)


def _last_days(days: int) -> Period:
    today = NOW.date()
    return period_of(today - timedelta(days=days - 1), today, "UTC")


def test_g5_reads_the_organizations_real_leads_from_the_analytics_index_alone(organization_id):
    nodes = _plan(build_analytics_query(organization_id, ALL_TIME, NOW))
    assert not _seq_scans(nodes)
    assert "ix_leads_org_created_at_analytics" in _indexes(nodes)
    assert {n["Node Type"] for n in nodes if n.get("Relation Name") == "leads"} == {"Index Only Scan"}


def test_g5_over_a_period_reads_only_the_periods_index_range(organization_id):
    nodes = _plan(build_analytics_query(organization_id, _last_days(30), NOW))
    (scan,) = [n for n in nodes if n.get("Relation Name") == "leads"]
    assert scan["Index Name"] == "ix_leads_org_created_at_analytics"
    assert "created_at" in scan["Index Cond"]


def test_the_funnel_walks_the_status_history_index_in_order_without_sorting_it(organization_id):
    nodes = _plan(build_funnel_query(organization_id, ALL_TIME))
    assert not _seq_scans(nodes)
    assert "ix_lead_status_events_lead" in _indexes(nodes)
    assert not [n for n in nodes if n["Node Type"] == "Sort"]


def test_the_funnel_of_a_period_starts_from_the_periods_leads(organization_id):
    nodes = _plan(build_funnel_query(organization_id, _last_days(30)))
    assert not _seq_scans(nodes)
    assert {"ix_leads_org_created_at_analytics", "ix_lead_status_events_lead"} <= _indexes(nodes)


def test_response_times_read_the_analytics_index(organization_id):
    nodes = _plan(build_response_times_query(organization_id, ALL_TIME, "Europe/London"))
    assert not _seq_scans(nodes)
    assert "ix_leads_org_created_at_analytics" in _indexes(nodes)


@pytest.mark.parametrize("days", [30, 365])
def test_attribution_reads_first_touches_first_wins_and_paths_by_index(organization_id, days):
    nodes = _plan(build_journeys_query(organization_id, _last_days(days), DEFAULT_ATTRIBUTION_WINDOW))
    assert not _seq_scans(nodes)
    assert {"ix_leads_org_created_at_analytics", "uq_lead_touches_org_lead_first"} <= _indexes(nodes)


def test_every_index_the_analytics_use_starts_with_organization_id(organization_id):
    statements = [
        build_analytics_query(organization_id, ALL_TIME, NOW),
        build_funnel_query(organization_id, ALL_TIME),
        build_funnel_query(organization_id, _last_days(30)),
        build_response_times_query(organization_id, ALL_TIME, "UTC"),
        build_journeys_query(organization_id, _last_days(365), DEFAULT_ATTRIBUTION_WINDOW),
    ]
    used = set().union(*(_indexes(_plan(s)) for s in statements))
    with get_engine().connect() as conn:
        first_columns = dict(
            conn.execute(
                text(
                    "SELECT i.relname, a.attname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                    "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0] "
                    "WHERE i.relname = ANY(:names)"
                ),
                {"names": sorted(used)},
            ).all()
        )
    assert first_columns and set(first_columns.values()) <= {"organization_id", "id"}
    # `id`: only the primary keys of the few campaigns and stages a report names.
    assert {name for name, column in first_columns.items() if column == "id"} <= {"pk_lead_campaigns"}


def _relations(nodes: list[dict]) -> set[str]:
    return {n["Relation Name"] for n in nodes if "Relation Name" in n}


@pytest.mark.parametrize("days", [None, 30, 365])
def test_the_funnel_of_whole_days_reads_the_daily_rollups_alone(organization_id, days):
    period = ALL_TIME if days is None else _last_days(days)
    nodes = _plan(build_funnel_rollup_query(organization_id, local_days(period, "UTC")))
    assert _relations(nodes) == {"analytics_daily_funnel", "analytics_daily_stages"}


@pytest.mark.parametrize("days", [30, 365])
def test_attribution_of_whole_days_reads_the_rollups_and_only_the_customers_paths(organization_id, days):
    local = local_days(_last_days(days), "UTC")
    nodes = _plan(build_rollup_journeys_query(organization_id, local, DEFAULT_ATTRIBUTION_WINDOW))
    assert not _seq_scans(nodes)
    assert _relations(nodes) <= {"analytics_daily_acquired", "analytics_lead_facts", "lead_touches"}
    assert "ix_analytics_lead_facts_org_day_won" in _indexes(nodes)
