"""Dedup's lookup by email and phone keys reads only the leads that have those keys, whatever the statistics say.

The case that matters is an organization PostgreSQL's statistics do not know yet: created (or grown from nothing)
since the last ANALYZE, while every organization the statistics saw is in their list of most common values. Its
leads are then estimated at a row, every index on organization_id looks as good as the key's, and a lookup asked
as `WHERE org AND (email OR phone)` may walk all of the organization's leads. An import or an ad campaign of a new
customer is exactly that organization. The plans are PostgreSQL's own, in a database of the test's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select, text

from leadcrm.leads.dedup import leads_with_keys
from leadcrm.leads.tables import leads
from leadcrm.platform.db.migrate import upgrade
from tests.support.database import create_database, drop_database, engine_for, throwaway_database_name
from tests.support.lead_list_helpers import explain, plan_nodes

KNOWN_ORGANIZATIONS = 3
KNOWN_LEADS = 2_000
NEW_ORGANIZATION_LEADS = 3_000
KEYS = 10


def _organization_with_leads(engine: Engine, count: int) -> uuid.UUID:
    organization_id, pipeline_id, stage_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO organizations (id, name, timezone, locale) VALUES (:o, 'Org', 'Europe/London', 'en')"),
            {"o": organization_id},
        )
        conn.execute(
            text("INSERT INTO pipelines (id, organization_id, name, is_default) VALUES (:p, :o, 'Leads', true)"),
            {"p": pipeline_id, "o": organization_id},
        )
        conn.execute(
            text(
                "INSERT INTO pipeline_stages (id, organization_id, pipeline_id, name, category, position) "
                "VALUES (:s, :o, :p, 'New', 'new', 0)"
            ),
            {"s": stage_id, "o": organization_id, "p": pipeline_id},
        )
        conn.execute(
            text(
                "INSERT INTO leads (id, organization_id, name, email, phone, source, status, pipeline_id, stage_id) "
                "SELECT gen_random_uuid(), :o, 'Lead ' || g, 'lead' || g || '-' || :o || '@example.test', "
                "'+4470' || lpad(g::text, 8, '0'), 'facebook', 'new', :p, :s FROM generate_series(1, :n) AS g"
            ),
            {"o": organization_id, "p": pipeline_id, "s": stage_id, "n": count},
        )
    return organization_id


@pytest.fixture(scope="module")
def unknown_organization(postgres_server_url: str) -> Iterator[tuple[Engine, uuid.UUID]]:
    """A database whose statistics were taken before its newest organization got its leads."""
    name = throwaway_database_name()
    engine = engine_for(create_database(postgres_server_url, name))
    try:
        upgrade(engine)
        for _ in range(KNOWN_ORGANIZATIONS):
            _organization_with_leads(engine, KNOWN_LEADS)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE leads"))
        yield engine, _organization_with_leads(engine, NEW_ORGANIZATION_LEADS)
    finally:
        engine.dispose()
        drop_database(postgres_server_url, name)


def _leads_rows_read(plan: dict[str, Any]) -> int:
    """Rows of `leads` the plan's nodes produced or threw away, over all their loops."""
    return sum(
        (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "leads"
    )


def _lookup_reads(engine: Engine, organization_id: uuid.UUID, emails: list[str], sevens: list[str]) -> int:
    found = leads_with_keys(organization_id, emails, sevens, (leads.c.id, leads.c.email, leads.c.phone))
    with engine.connect() as conn:
        return _leads_rows_read(explain(conn, select(found), analyze=True))


def test_a_lookup_of_new_phones_reads_no_other_lead_of_an_organization_the_statistics_do_not_know(
    unknown_organization,
):
    engine, organization_id = unknown_organization
    assert _lookup_reads(engine, organization_id, [], [f"9{i:06d}" for i in range(KEYS)]) == 0


def test_a_lookup_of_new_emails_and_phones_reads_no_other_lead_of_an_organization_the_statistics_do_not_know(
    unknown_organization,
):
    engine, organization_id = unknown_organization
    emails = [f"new{i}@example.test" for i in range(KEYS)]
    assert _lookup_reads(engine, organization_id, emails, [f"9{i:06d}" for i in range(KEYS)]) == 0


def test_a_lookup_reads_only_the_leads_with_the_keys_of_an_organization_the_statistics_do_not_know(
    unknown_organization,
):
    engine, organization_id = unknown_organization
    sevens = [f"{i:07d}" for i in range(1, KEYS + 1)]  # leads 1…10 of every organization end so
    assert _lookup_reads(engine, organization_id, [], sevens) == KEYS


def test_a_lookup_of_an_import_chunk_of_keys_reads_no_other_lead_of_an_organization_the_statistics_do_not_know(
    unknown_organization,
):
    engine, organization_id = unknown_organization
    # A probe a key, however many keys: asked as `= ANY(keys)`, the planner's costs prefer a scan of the table.
    emails = [f"new{i}@example.test" for i in range(1_000)]
    assert _lookup_reads(engine, organization_id, emails, [f"9{i:06d}" for i in range(1_000)]) == 0
