"""analytics: Attribution touch log, campaign spend and response metrics (issue 9).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29
"""

from __future__ import annotations

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
