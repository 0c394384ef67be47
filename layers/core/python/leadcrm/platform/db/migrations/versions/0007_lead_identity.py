"""lead identity: the last-seven-digits phone prefilter for matching a person to a lead

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # An expression index on the existing generated phone_digits: no table rewrite (a new stored column
    # would rewrite leads under an exclusive lock). On a large table, build it CONCURRENTLY by hand first.
    op.create_index(
        "ix_leads_org_phone_last7",
        "leads",
        ["organization_id", sa.text("right(phone_digits, 7)")],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_leads_org_phone_last7", table_name="leads")
