"""lead lists: the createdAt sort index, the trigram search index, planner statistics, no parallel pages

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# An organization's tag, user, campaign, pipeline or stage ids belong to that organization only. Without
# these, PostgreSQL multiplies the selectivities of `organization_id = …` and `tag_id = …` as if they were
# independent, underestimates a big organization's rows by its share of the table, and picks plans for
# the wrong row counts (sorting 17,000 tagged leads instead of walking the createdAt index).
STATISTICS = {
    "st_leads_org_assignee": ("leads", "organization_id, assigned_to_user_id"),
    "st_leads_org_campaign": ("leads", "organization_id, campaign_id"),
    "st_leads_org_pipeline_stage": ("leads", "organization_id, pipeline_id, stage_id"),
    "st_lead_tag_assignments_org_tag": ("lead_tag_assignments", "organization_id, tag_id"),
    "st_lead_pipeline_placements_org_pipeline_stage": (
        "lead_pipeline_placements",
        "organization_id, pipeline_id, stage_id",
    ),
}
# Tables read in small org-scoped pages: starting parallel workers costs more (~10 ms) than such a page.
SERIAL_TABLES = ("leads", "lead_tag_assignments", "lead_pipeline_placements")


def upgrade() -> None:
    # Both are trusted contrib extensions (PostgreSQL 13+, Aurora PostgreSQL): no superuser needed.
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.create_index("ix_leads_org_created_at", "leads", ["organization_id", "created_at", "id"], unique=False)
    op.create_index(
        "ix_leads_org_search_trgm",
        "leads",
        ["organization_id", "name", "email", "phone_digits"],
        unique=False,
        postgresql_using="gin",
        postgresql_ops={"name": "gin_trgm_ops", "email": "gin_trgm_ops", "phone_digits": "gin_trgm_ops"},
    )
    for name, (table, columns) in STATISTICS.items():
        op.execute(f"CREATE STATISTICS {name} (dependencies) ON {columns} FROM {table}")
    for table in SERIAL_TABLES:
        op.execute(f"ALTER TABLE {table} SET (parallel_workers = 0)")
    # Statistics objects are filled by the next ANALYZE; don't wait for autovacuum.
    for table in sorted({table for table, _ in STATISTICS.values()}):
        op.execute(f"ANALYZE {table}")


def downgrade() -> None:
    for table in SERIAL_TABLES:
        op.execute(f"ALTER TABLE {table} RESET (parallel_workers)")
    for name in STATISTICS:
        op.execute(f"DROP STATISTICS IF EXISTS {name}")
    op.drop_index("ix_leads_org_search_trgm", table_name="leads", postgresql_using="gin")
    op.drop_index("ix_leads_org_created_at", table_name="leads")
    op.execute("DROP EXTENSION IF EXISTS btree_gin")
    op.execute("DROP EXTENSION IF EXISTS pg_trgm")
