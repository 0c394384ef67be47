"""UUIDv7 ids composed by PostgreSQL, for a bulk write whose rows Python never sees one by one.

The process reserves a block of ids (`leadcrm.platform.ids.uuid7_block`: the stamps, millisecond and 12-bit
counter, it would have used for that many ids, so its later ids still sort after them, and their random
bits); the statement composes id k from stamp `first + k` and the block's 8 random bytes at 8k. PostgreSQL
16 has no `uuidv7()` (and one made there would not be ordered with the process's own), and its random source
(`gen_random_uuid()`) costs about a microsecond an id: a bulk move makes three ids a lead.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Integer, LargeBinary, Uuid, bindparam, cast, func, literal_column

from leadcrm.platform.ids import Uuid7Block


class SqlUuid7:
    """A block's ids as SQL, the block bound at each execution (`parameters`): `id(k)` is the expression of id
    k (k an integer expression, from 0)."""

    def __init__(self, name: str) -> None:
        self._names = (f"{name}_first", f"{name}_tails")
        self._first = bindparam(self._names[0], type_=BigInteger)
        self._tails = cast(bindparam(self._names[1], type_=LargeBinary), LargeBinary)

    def parameters(self, block: Uuid7Block) -> dict[str, Any]:
        return {self._names[0]: block.first, self._names[1]: block.tails}

    def id(self, k: Any) -> Any:
        """48 bits of milliseconds, version 7, the 12-bit counter, then the variant and 62 random bits."""
        stamp = cast(self._first + k, BigInteger)
        head = (
            stamp.op(">>")(literal_column("12"))
            .op("<<")(literal_column("16"))
            .op("|")(literal_column("28672"))  # 0x7000: version 7
            .op("|")(stamp.op("&")(literal_column("4095")))
        )
        start = cast(k, Integer) * literal_column("8") + literal_column("1")
        tail = func.substring(self._tails, start, literal_column("8"), type_=LargeBinary)
        return cast(func.encode(func.int8send(head, type_=LargeBinary).op("||")(tail), literal_column("'hex'")), Uuid)
