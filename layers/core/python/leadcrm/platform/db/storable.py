"""Text made storable at one place: PostgreSQL's text cannot hold U+0000 (22021) and its jsonb cannot hold the
escape \\u0000 (22P05), so a NUL anywhere in a payload we keep (a Meta lead's answer, a receipt, an inbound
mail's headers, an attribution field) would fail its insert for ever, and its message would loop into the DLQ.

The engine (engine.py) strips NULs from every statement's parameters, just before the driver sends them:
- `storable_parameters`, a `before_cursor_execute` hook: NUL characters leave every text parameter (and the
  strings inside list and dict parameters), and \\u0000 escapes leave every JSON document passed as text (a
  recordset, a `CAST(:x AS jsonb)`); bytes (bytea) are never touched, they may hold any byte;
- `storable_json`, the engine's JSON serializer: the NULs of a JSON or JSONB value's keys and strings are
  stripped before it is written as text, so no escape is ever made.

Stripping rather than refusing: the API refuses NULs in its bodies as bad input (api.schemas), but what a
webhook, a mail or a CSV file carries is kept as well as it can be, and a NUL carries no meaning worth a lost lead.
A text parameter that begins like a JSON document (`{` or `[`) and spells \\u0000 with an unescaped backslash
loses those six characters too: that is the price of catching every JSON document whatever its column type.
"""

from __future__ import annotations

import json
import re
from typing import Any

NUL = "\x00"
_JSON_NUL_ESCAPE = "\\u0000"
# \u0000 preceded by an even number of backslashes (its own backslash is not escaped); the pairs are kept.
_UNESCAPED_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def storable_text(value: str) -> str:
    if NUL in value:
        value = value.replace(NUL, "")
    if _JSON_NUL_ESCAPE in value and value.lstrip()[:1] in ("{", "["):
        value = _UNESCAPED_NUL_ESCAPE.sub(r"\1", value)
    return value


def storable(value: Any) -> Any:
    """`value` with NULs stripped from every string in it (dict keys too); anything else as it is."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    if isinstance(value, tuple):
        return tuple(storable(v) for v in value)
    return value


def storable_json(value: Any, **options: Any) -> str:
    """json.dumps of the value with its NULs stripped (the engine's json_serializer; recordsets use it too)."""
    return json.dumps(storable(value), **options)


def storable_parameters(
    conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
) -> tuple[str, Any]:
    """The engine's `before_cursor_execute` hook (retval=True): the statement and its storable parameters."""
    return statement, storable(parameters)
