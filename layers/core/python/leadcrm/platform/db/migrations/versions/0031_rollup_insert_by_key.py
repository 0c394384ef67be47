"""Analytics rollup triggers: plans fitted to the statement's size, so a bulk write is never quadratic (issue 23).

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05

The rollup triggers are statement triggers reading their transition tables. PL/pgSQL plans each of their
queries once per session and keeps that plan (they have no parameters, so it is a generic plan), sized for the
transition table of the first call. A warm connection's first call is a single lead's write (one row), and
the plan kept for one row is a nested loop over the transition tables: the next bulk move of 5,000 leads on
that connection compared every new lead row with every old one (25 million pairs, ~3 s in the `leads` update
trigger) and joined its status events to their fact rows pair by pair (~5 s more): 9.8 s instead of 1.1 s on
a fresh connection, and the bare UPDATE of the same leads 3.8 s instead of 0.35 s. Now:

- the `leads` update trigger finds the leads whose day, test flag or organization changed with an EXCEPT of
  the old rows from the new ones, which no plan makes quadratic (a lead id never changes; one that did would
  be refreshed, which is always right);
- the status events insert trigger keeps its static queries for one event (a single move: its plan, kept for
  one row, is right) and plans its queries for the statement in hand (EXECUTE) when it inserted more;
- the leads whose new events do not all come after their last known one are found by looking their fact
  rows up by key (a lateral lookup per event) instead of hashing the whole fact table (a sequential scan of
  every lead of every organization: ~20 ms at 100k leads, for any statement).

The rollups are computed by the same statements as 0025's, so they stay equal to a rebuild.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

# 0025's decision, as written there, and the same decision with the fact rows read by key.
OTHERS_BY_JOIN = """SELECT n.lead_id FROM new_rows n LEFT JOIN analytics_lead_facts f ON f.lead_id = n.lead_id
            GROUP BY n.lead_id"""
OTHERS_BY_KEY = """SELECT n.lead_id FROM new_rows n
            LEFT JOIN LATERAL (
                SELECT k.lead_id, k.last_event_at, k.last_event_id FROM analytics_lead_facts k
                WHERE k.lead_id = n.lead_id LIMIT 1
            ) f ON true
            GROUP BY n.lead_id"""

STATUS_EVENTS_BRANCH = "    ELSIF TG_TABLE_NAME = 'lead_status_events' THEN\n"
TOUCHES_BRANCH = "    ELSIF TG_TABLE_NAME = 'lead_touches' THEN\n"
APPEND_START = "        WITH appended AS MATERIALIZED ("
APPEND_END = "WHERE f.lead_id = p.lead_id;\n"

LEADS_UPDATE_BY_JOIN = """PERFORM analytics_refresh_leads(ARRAY(
            SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE (n.created_at, n.is_test, n.organization_id) IS DISTINCT FROM (o.created_at, o.is_test, o.organization_id)));"""
LEADS_UPDATE_BY_EXCEPT = """PERFORM analytics_refresh_leads(ARRAY(
            SELECT c.id FROM (
                SELECT n.id, n.created_at, n.is_test, n.organization_id FROM new_rows n
                EXCEPT
                SELECT o.id, o.created_at, o.is_test, o.organization_id FROM old_rows o
            ) c));"""


def on_insert() -> str:
    """0025's insert trigger with its status events branch sized to the statement."""
    function: str = _revision_0025().ON_INSERT
    start, end = function.index(STATUS_EVENTS_BRANCH), function.index(TOUCHES_BRANCH)
    branch = function[start + len(STATUS_EVENTS_BRANCH) : end]
    if OTHERS_BY_JOIN not in branch or not branch.rstrip().endswith(APPEND_END.strip()):
        raise RuntimeError("0025's analytics_rollup_on_insert is not the one this migration rewrites")
    decide, append = branch[: branch.index(APPEND_START)], branch[branch.index(APPEND_START) :]
    decide = decide.replace(OTHERS_BY_JOIN, OTHERS_BY_KEY)
    # `decide` is comments and `SELECT ARRAY(...) INTO others;`, `append` one statement reading `others`.
    decide_query = decide[decide.index("SELECT ARRAY(") : decide.rindex(") INTO others;") + 1]
    append_query = append.strip().removesuffix(";").replace("<> ALL(others)", "<> ALL($1)")
    if "$1" not in append_query or "$q$" in decide_query + append_query:
        raise RuntimeError("0025's status events branch is not the one this migration rewrites")
    sized = (
        STATUS_EVENTS_BRANCH
        + "        IF (SELECT count(*) FROM new_rows) > 1 THEN\n"
        + "            -- Planned for this statement's rows (a plan kept from a one-row call would be quadratic).\n"
        + f"            EXECUTE $q${decide_query}$q$ INTO others;\n"
        + f"            EXECUTE $q${append_query}$q$ USING others;\n"
        + "            PERFORM analytics_refresh_leads(others);\n"
        + "            RETURN NULL;\n"
        + "        END IF;\n"
        + decide
        + append
    )
    return function[:start] + sized + function[end:]


def on_update() -> str:
    """0023's update trigger with the leads branch written as an EXCEPT."""
    functions: str = _revision("0023_analytics_rollups.py", "analytics_rollups_0023").FUNCTIONS
    start = functions.index("CREATE FUNCTION analytics_rollup_on_update")
    end = functions.index("-- The organization's days move with its timezone")
    function = "CREATE OR REPLACE" + functions[start + len("CREATE") : end]
    if LEADS_UPDATE_BY_JOIN not in function:
        raise RuntimeError("0023's analytics_rollup_on_update is not the one this migration rewrites")
    return function.replace(LEADS_UPDATE_BY_JOIN, LEADS_UPDATE_BY_EXCEPT)


def upgrade() -> None:
    op.execute(on_insert())
    op.execute(on_update())


def downgrade() -> None:
    functions: str = _revision("0023_analytics_rollups.py", "analytics_rollups_0023").FUNCTIONS
    start = functions.index("CREATE FUNCTION analytics_rollup_on_update")
    end = functions.index("-- The organization's days move with its timezone")
    op.execute("CREATE OR REPLACE" + functions[start + len("CREATE") : end])
    op.execute(_revision_0025().ON_INSERT)


def _revision_0025() -> ModuleType:
    return _revision("0025_incremental_rollups.py", "incremental_rollups_0025")


def _revision(filename: str, name: str) -> ModuleType:
    path = Path(__file__).with_name(filename)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
