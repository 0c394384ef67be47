"""UUIDv7 ids composed by PostgreSQL, for a bulk write whose rows Python never sees one by one.

The process reserves a block of stamps (`leadcrm.platform.ids.uuid7_block`: the millisecond and the 12-bit
counter it would have used for that many ids, so its later ids still sort after them); the statement
composes row k's id from stamp `first + k` and 64 random bits of `gen_random_uuid()` (whose variant bits
are those of RFC 9562 already). PostgreSQL 16 has no `uuidv7()`, and one made there would not be ordered
with the process's own.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, LargeBinary, Uuid, cast, func, literal_column


def sql_uuid7(stamp: Any) -> Any:
    """The UUIDv7 of `stamp` (a bigint expression: millisecond << 12 | counter): 48 bits of milliseconds,
    version 7, the 12-bit counter, then the variant and 62 random bits."""
    stamp = cast(stamp, BigInteger)
    head = (
        stamp.op(">>")(literal_column("12"))
        .op("<<")(literal_column("16"))
        .op("|")(literal_column("28672"))  # 0x7000: version 7
        .op("|")(stamp.op("&")(literal_column("4095")))
    )
    tail = func.substring(func.uuid_send(func.gen_random_uuid()), literal_column("9"), type_=LargeBinary)
    return cast(func.encode(func.int8send(head, type_=LargeBinary).op("||")(tail), literal_column("'hex'")), Uuid)
