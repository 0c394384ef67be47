"""What every table is built from: the shared MetaData (its naming convention) and the standard columns.

Each capability declares its tables in its own `tables.py` on these; `leadcrm.platform.db.schema` loads them all.
"""

from __future__ import annotations

from sqlalchemy import Column, DateTime, ForeignKey, MetaData, Uuid, func

from leadcrm.platform.db.now import clock_default

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def id_column() -> Column:
    return Column("id", Uuid, primary_key=True)


def org_column() -> Column:
    return Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False)


def stamp_column(name: str) -> Column:
    """An instant a row is written with: the clock's (`default`), so the local stack's clock moves it too;
    the database's `now()` stays as the fallback of rows written by hand (server_default)."""
    return Column(name, DateTime(timezone=True), nullable=False, server_default=func.now(), default=clock_default())


def created_at_column() -> Column:
    return stamp_column("created_at")


def updated_at_column() -> Column:
    return stamp_column("updated_at")


def one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"
