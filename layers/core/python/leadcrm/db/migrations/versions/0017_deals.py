"""deals: Deals, deal pipelines and owner departure (issue 11).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
