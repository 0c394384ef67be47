"""conversion: one account user per email, so convert's find-or-create of the user is race-safe

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # An account's email is its sign-in identity on the platform, so two accounts never share one; managed
    # users (children) do share a parent's and stay outside the index. Fails loudly if existing rows break
    # the rule (two accounts whose emails differ only in case): merge those before upgrading.
    op.create_index(
        "uq_users_account_lower_email",
        "users",
        [sa.text("lower(email)")],
        unique=True,
        postgresql_where=sa.text("kind = 'account' AND email IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index(
        "uq_users_account_lower_email",
        table_name="users",
        postgresql_where=sa.text("kind = 'account' AND email IS NOT NULL"),
    )
