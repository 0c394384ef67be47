"""Dedup's lookups by email and phone read only the leads with those keys, whatever the statistics say (issue 23).

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-05

The indexes on (organization_id, lower(email)) and (organization_id, right(phone_digits, 7)) served lookups
asked as `organization_id = :org AND key = :k`. For an organization PostgreSQL's statistics do not know yet
(created or grown since the last ANALYZE, while every organization they saw is among their most common values:
any young installation), its leads are estimated at one row, every index on organization_id then looks as good
as the key's, and the planner took one of them: a lookup read all of the organization's leads (measured: 10,000
index entries a batch of WhatsApp leads for a 10,000-lead organization). Autovacuum re-analyzes `leads` only
after a tenth of it changed, so that organization can stay unknown for long.

Each index now holds one key, the organization and the value in one text (`<organization id> <value>`), and
the lookups ask for that key alone: no other index can answer it, so no estimate can pick another. The key
still names the organization, so a lookup cannot reach another organization's leads.

On a large table, build the new indexes CONCURRENTLY by hand first (this migration then finds them).
"""

from __future__ import annotations

from alembic import op

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

EMAIL_KEY = "(organization_id::text || ' ' || lower(email))"
PHONE_KEY = "(organization_id::text || ' ' || right(phone_digits, 7))"


def upgrade() -> None:
    op.execute(f"CREATE INDEX IF NOT EXISTS ix_leads_email_key ON leads ({EMAIL_KEY})")
    op.execute(f"CREATE INDEX IF NOT EXISTS ix_leads_phone_key ON leads ({PHONE_KEY})")
    op.drop_index("ix_leads_org_lower_email", table_name="leads")
    op.drop_index("ix_leads_org_phone_last7", table_name="leads")


def downgrade() -> None:
    op.execute("CREATE INDEX ix_leads_org_lower_email ON leads (organization_id, lower(email))")
    op.execute("CREATE INDEX ix_leads_org_phone_last7 ON leads (organization_id, right(phone_digits, 7))")
    op.drop_index("ix_leads_email_key", table_name="leads")
    op.drop_index("ix_leads_phone_key", table_name="leads")
