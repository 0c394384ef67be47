"""lead moves: the reason a status event records (the lost reason), kept as history

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("lead_status_events", sa.Column("reason", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("lead_status_events", "reason")
