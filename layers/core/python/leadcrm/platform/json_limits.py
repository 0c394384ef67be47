"""JSON from outside, parsed once and with limits: every body the API, the public routes and the webhook receiver
accept, and every message a consumer reads, goes through `loads`.

The standard parser has no limits of its own that fail politely: 1000 nested arrays raise RecursionError, a
5000-digit number ValueError (Python's 4300-digit guard), `NaN` and `1e999` are read as floats that no JSON
answer can hold. Here each is a JsonRefused (400 MALFORMED_JSON, or 413 BODY_TOO_LARGE), raised before any
of our code, or any validation, sees the value.

Limits (DESIGN.md, "every input has bounds"):
- depth: 32 levels of arrays and objects (our deepest body has 4);
- integers: 50 digits (our largest column is a bigint, 19 digits: a longer number is refused by its field
  type with a clear message; 50 leaves room for that message while keeping int() cheap);
- other numbers: 64 characters, finite;
- size: per caller, `max_bytes` (the API: 1 MiB, the public routes: 64 KiB, see api.handler).

Pure: no SQLAlchemy, no pydantic, no boto3 (the webhook receiver imports it).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from leadcrm.platform.errors import AppError

MAX_DEPTH = 32
MAX_INTEGER_DIGITS = 50
MAX_NUMBER_CHARACTERS = 64

# A JSON string, escapes included (possessive: a long unterminated string is scanned once, not re-tried).
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")


def _bounded_nesting(limit: int) -> re.Pattern[bytes]:
    """Brackets nested at most `limit` deep: `limit` groups of `[` … `]` inside each other, each repeated
    possessively, so the match never backtracks."""
    pattern = b""
    for _ in range(limit):
        pattern = rb"(?:\[" + pattern + rb"\])*+"
    return re.compile(pattern)


_BOUNDED_NESTING = _bounded_nesting(MAX_DEPTH)


class JsonRefused(AppError):
    """A body that is not JSON we will read; `status` 400, or 413 for one over the size limit."""

    status, code = 400, "MALFORMED_JSON"


class BodyTooLarge(JsonRefused):
    status, code = 413, "BODY_TOO_LARGE"


def loads(text: str | bytes, *, max_bytes: int | None = None) -> Any:
    """The JSON value of `text`, or JsonRefused (never RecursionError or ValueError)."""
    if max_bytes is not None and len(text) > max_bytes:  # characters ≤ bytes: a str is checked again below
        raise _too_large(max_bytes)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise JsonRefused("The body is not valid JSON (UTF-8).") from error
    elif max_bytes is not None and len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise _too_large(max_bytes)
    if not within_depth(text):
        raise JsonRefused(
            f"The body is not valid JSON, or nests arrays and objects more than {MAX_DEPTH} levels deep."
        )
    try:
        return json.loads(text, parse_int=_integer, parse_float=_number, parse_constant=_no_constant)
    except JsonRefused:
        raise
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        raise JsonRefused("The body is not valid JSON.") from error


def within_depth(text: str) -> bool:
    """Whether the text's arrays and objects balance and nest at most MAX_DEPTH levels (brackets inside
    strings aside). Bracket sequences of bounded depth are a regular language, so one possessive regular
    expression (no backtracking) decides it over the brackets alone, as bytes with `{}` written as `[]`: a
    1 MiB body takes milliseconds, however it nests. A `[}` mismatch passes here and the parser refuses it."""
    brackets = _STRINGS.sub("", text).encode("utf-8", "surrogatepass").translate(_AS_SQUARE, _NOT_BRACKETS)
    return _BOUNDED_NESTING.fullmatch(brackets) is not None


def _integer(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise JsonRefused(f"The body holds an integer of more than {MAX_INTEGER_DIGITS} digits.")
    return int(literal)


def _number(literal: str) -> float:
    value = float(literal) if len(literal) <= MAX_NUMBER_CHARACTERS else math.inf
    if not math.isfinite(value):
        raise JsonRefused(f"The body holds a number longer than {MAX_NUMBER_CHARACTERS} characters or out of range.")
    return value


def _no_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not JSON.")


def _too_large(max_bytes: int) -> BodyTooLarge:
    return BodyTooLarge(f"The body is larger than {max_bytes} bytes.")
