"""`insert_skipping_conflicts`: the PostgreSQL INSERT … ON CONFLICT DO NOTHING that SQLAlchemy caches (its own
is never cached), written exactly as SQLAlchemy writes it, with a cache key that tells apart what changes the
SQL and only that."""

from __future__ import annotations

from sqlalchemy import Column, Integer, MetaData, Table, Text
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.platform.db.inserts import insert_skipping_conflicts

things = Table(
    "things",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("kind", Text),
    Column("ref", Text),
)
INBOUND = things.c.kind == "inbound"


def _sql(statement) -> str:
    return str(statement.compile(dialect=postgresql.dialect()))


def test_it_writes_what_postgresql_insert_on_conflict_do_nothing_writes():
    ours = insert_skipping_conflicts(things, ["kind", "ref"], INBOUND).values(id=1).returning(things.c.id)
    theirs = (
        pg_insert(things)
        .values(id=1)
        .on_conflict_do_nothing(index_elements=["kind", "ref"], index_where=INBOUND)
        .returning(things.c.id)
    )
    assert _sql(ours) == _sql(theirs)


def test_sqlalchemy_caches_it_and_not_its_own():
    assert insert_skipping_conflicts(things, ["ref"]).values(id=1)._generate_cache_key() is not None
    assert pg_insert(things).values(id=1).on_conflict_do_nothing(index_elements=["ref"])._generate_cache_key() is None


def test_another_conflict_target_or_condition_is_another_statement():
    def key(statement):
        return statement.values(id=1)._generate_cache_key()

    assert key(insert_skipping_conflicts(things, ["kind", "ref"])) != key(insert_skipping_conflicts(things, ["ref"]))
    assert key(insert_skipping_conflicts(things, ["ref"], INBOUND)) != key(insert_skipping_conflicts(things, ["ref"]))
    assert key(insert_skipping_conflicts(things, ["ref"], INBOUND)) != key(
        insert_skipping_conflicts(things, ["ref"], things.c.ref.is_not(None))
    )


def test_the_conditions_value_is_a_parameter_of_the_cached_statement():
    outbound = insert_skipping_conflicts(things, ["ref"], things.c.kind == "outbound").values(id=1)
    inbound = insert_skipping_conflicts(things, ["ref"], INBOUND).values(id=1)

    assert inbound._generate_cache_key() == outbound._generate_cache_key()
    assert "outbound" in outbound.compile(dialect=postgresql.dialect()).params.values()
