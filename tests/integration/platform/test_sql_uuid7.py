"""leadcrm.platform.db.ids: UUIDv7 ids PostgreSQL composes from a block the process reserved."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.ids import SqlUuid7
from leadcrm.platform.ids import uuid7, uuid7_block


def _ids_of_a_block(count: int) -> list[uuid.UUID]:
    ids = SqlUuid7("test_ids")
    offset = func.generate_series(0, count - 1).column_valued("offset")
    with get_engine().connect() as conn:
        statement = select(ids.id(offset)).order_by(offset)
        return list(conn.execute(statement, ids.parameters(uuid7_block(count))).scalars())


def test_ids_made_by_postgresql_are_version_7_uuids_with_the_rfc_9562_variant():
    for value in _ids_of_a_block(100):
        assert (value.version, value.variant) == (7, uuid.RFC_4122)


def test_ids_made_by_postgresql_are_unique():
    block = _ids_of_a_block(10_000)
    assert len(set(block)) == len(block)


def test_ids_made_by_postgresql_increase_and_sort_between_the_processs_own_ids():
    before = uuid7()
    block = _ids_of_a_block(5_000)
    after = uuid7()
    assert all(a < b for a, b in zip([before, *block], [*block, after], strict=False))
