"""Many rows in one parameter: a JSON document that PostgreSQL unpacks with jsonb_to_recordset.

pg8000 runs an executemany as one round trip per row, and converts list parameters slowly; one JSON
document keeps a bulk write at one statement and one round trip whatever the number of rows.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Text, bindparam, cast, column, func
from sqlalchemy.dialects.postgresql import JSONB


def recordset(name: str, alias: str, rows: list[dict[str, Any]], columns: dict[str, Any]) -> Any:
    """The rows as a derived table; `columns` maps each name to its SQL type. A statement built once (and kept)
    takes its rows at each execution instead: `recordset(name, alias, [], columns)` in it, and
    `{name: recordset_document(rows)}` in the execution's parameters."""
    document = recordset_document(rows)
    return (
        func.jsonb_to_recordset(cast(bindparam(name, document, type_=Text), JSONB))
        .table_valued(*(column(n, t) for n, t in columns.items()))
        .render_derived(name=alias, with_types=True)
    )


def recordset_document(rows: list[dict[str, Any]]) -> str:
    """The rows as the JSON document a recordset's parameter takes."""
    return json.dumps(rows, default=str)
