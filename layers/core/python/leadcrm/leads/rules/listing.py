"""The lead list's rules, without I/O: filters, sort orders, the keyset cursor and the search term.

The cursor is opaque to clients but not a secret: it carries the last row's sort key and id, and the sort
and order it was issued for, so a cursor reused with another sort is refused instead of skipping rows.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TypeVar

from leadcrm.leads.rules.identity import national_part_of_international, national_significant_number
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE

T = TypeVar("T")

MAX_TAG_IDS = 50
MAX_STAGE_IDS = 100
SEARCH_MIN_LENGTH = 2
SEARCH_MAX_LENGTH = 100
# A term with this many digits also searches the phone, by its digits ("050-123" finds "+97250123…").
SEARCH_MIN_PHONE_DIGITS = 3


class LeadSort(StrEnum):
    """The API's sort names; each maps onto a NOT NULL timestamp column, with the id breaking ties."""

    CREATED_AT = "createdAt"
    UPDATED_AT = "updatedAt"
    STATUS_CHANGED_AT = "statusChangedAt"


class SortOrder(StrEnum):
    DESC = "desc"
    ASC = "asc"


class ArchivedFilter(StrEnum):
    """`archived=false` (the default) lists live leads, `true` only archived ones, `all` both."""

    LIVE = "false"
    ARCHIVED = "true"
    ALL = "all"


# -- the search term --------------------------------------------------------------------------------------


def escape_like(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (escape character: backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class SearchTerm:
    """What the user typed, normalized; matched case-insensitively inside name and email, and inside the
    phone's digits when it has at least three digits (`phone_patterns`: in the organization's region)."""

    text: str
    digits: str | None

    @property
    def contains_pattern(self) -> str:
        return f"%{escape_like(self.text)}%"

    def phone_patterns(self, region: str | None) -> tuple[str, ...]:
        """LIKE patterns on the stored phone's digits that find the number however either side wrote it.

        Beside the digits as typed: without a trunk zero ("050…" finds "+97250…"); after the country code of
        a number typed internationally, even in part ("+97250…" and "0097250…" find "050…"); and the
        national significant number of a whole number read in the organization's `region` ("8 912 345-67-89"
        in RU finds "+79123456789"). A pattern inside another one matches everything the longer one does,
        so only the shortest ones are kept (fewer OR arms, the same rows)."""
        if self.digits is None:
            return ()
        candidates = [self.digits, self.digits.lstrip("0")]
        candidates.append(national_part_of_international(self.text) or "")
        candidates.append(national_significant_number(self.text, region) or "")
        usable = {c for c in candidates if len(c) >= SEARCH_MIN_PHONE_DIGITS}
        kept = sorted(c for c in usable if not any(other != c and other in c for other in usable))
        return tuple(f"%{digits}%" for digits in kept)


_WHITESPACE = re.compile(r"\s+")


def parse_search(raw: str | None) -> SearchTerm | None:
    """None when nothing was asked; 400 when the term is too short or too long once trimmed."""
    if raw is None:
        return None
    if "\x00" in raw:
        raise BadRequest("The search term must not contain NUL characters.", code="VALIDATION_FAILED")
    text = _WHITESPACE.sub(" ", raw).strip()
    if not SEARCH_MIN_LENGTH <= len(text) <= SEARCH_MAX_LENGTH:
        raise BadRequest(
            f"The search term must be {SEARCH_MIN_LENGTH} to {SEARCH_MAX_LENGTH} characters long.",
            code="VALIDATION_FAILED",
        )
    digits = "".join(ch for ch in text if "0" <= ch <= "9")
    return SearchTerm(text=text, digits=digits if len(digits) >= SEARCH_MIN_PHONE_DIGITS else None)


# -- the cursor -------------------------------------------------------------------------------------------

_CURSOR_VERSION = 1
# version, sort, order, sort key in microseconds since the epoch, id
_CURSOR_LAYOUT = struct.Struct(">BBBq16s")
_SORT_CODES = {sort: code for code, sort in enumerate(LeadSort, start=1)}
_ORDER_CODES = {order: code for code, order in enumerate(SortOrder, start=1)}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_CURSOR_LENGTH = 64


@dataclass(frozen=True)
class ListCursor:
    """Where the previous page ended: its last row's sort key and id, for one sort and order."""

    sort: LeadSort
    order: SortOrder
    key: datetime
    id: uuid.UUID

    def encode(self) -> str:
        micros = (self.key - _EPOCH) // timedelta(microseconds=1)
        raw = _CURSOR_LAYOUT.pack(
            _CURSOR_VERSION, _SORT_CODES[self.sort], _ORDER_CODES[self.order], micros, self.id.bytes
        )
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _invalid_cursor(reason: str) -> BadRequest:
    return BadRequest(f"The cursor is not one this API returned ({reason}).", code="INVALID_CURSOR")


def decode_cursor(cursor: str, sort: LeadSort, order: SortOrder) -> ListCursor:
    """The cursor a page returned, for the same sort and order; anything else is a 400 INVALID_CURSOR."""
    if not cursor or len(cursor) > MAX_CURSOR_LENGTH or not cursor.isascii():
        raise _invalid_cursor("malformed")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        version, sort_code, order_code, micros, id_bytes = _CURSOR_LAYOUT.unpack(raw)
        key = _EPOCH + timedelta(microseconds=micros)
    except (binascii.Error, ValueError, struct.error, OverflowError) as error:
        raise _invalid_cursor("malformed") from error
    if version != _CURSOR_VERSION:
        raise _invalid_cursor("malformed")
    if sort_code != _SORT_CODES[sort] or order_code != _ORDER_CODES[order]:
        raise _invalid_cursor("issued for another sort or order")
    return ListCursor(sort=sort, order=order, key=key, id=uuid.UUID(bytes=id_bytes))


# -- the filters ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadListFilters:
    """One list request, validated. Empty tuples and None mean "no filter on this"."""

    statuses: tuple[str, ...] = ()
    pipeline_id: uuid.UUID | None = None
    # With pipeline_id: the effective stage in that pipeline; without: the primary stage.
    stage_ids: tuple[uuid.UUID, ...] = ()
    # A lead having ANY of these tags is listed.
    tag_ids: tuple[uuid.UUID, ...] = ()
    campaign_id: uuid.UUID | None = None
    archived: ArchivedFilter = ArchivedFilter.LIVE
    assignee: Assignee | None = None
    # `assignee=me` left to the statement: a member read knows the caller's user id only as it runs.
    assigned_to_caller: bool = False
    is_test: bool | None = None
    search: SearchTerm | None = None
    sort: LeadSort = LeadSort.CREATED_AT
    order: SortOrder = SortOrder.DESC
    limit: int = DEFAULT_PAGE_SIZE
    after: ListCursor | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE_SIZE:
            raise BadRequest(f"limit must be between 1 and {MAX_PAGE_SIZE}.", code="VALIDATION_FAILED")
        if len(self.tag_ids) > MAX_TAG_IDS:
            raise BadRequest(f"At most {MAX_TAG_IDS} tag ids.", code="VALIDATION_FAILED")
        if len(self.stage_ids) > MAX_STAGE_IDS:
            raise BadRequest(f"At most {MAX_STAGE_IDS} stage ids.", code="VALIDATION_FAILED")
        if self.after is not None and (self.after.sort, self.after.order) != (self.sort, self.order):
            raise _invalid_cursor("issued for another sort or order")


def unique(values: Iterable[T] | None) -> tuple[T, ...]:
    """The values in their first order, each once (a repeated filter value changes nothing)."""
    return tuple(dict.fromkeys(values or ()))
