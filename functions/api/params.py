"""The query parameters routes share, stated once (leadcrm.platform: paging, assignee, periods).

- `limit`: the page size, 1 to MAX_PAGE_SIZE (default DEFAULT_PAGE_SIZE) on every list;
- `cursor`: the opaque `nextCursor` of the page before;
- `assignee`: `me`, `unassigned` or a user id, on every list of records someone is responsible for;
- `from` / `to`: a period, local days of the organization, both included (leadcrm.platform.periods).

A value outside is a 400 VALIDATION_FAILED naming the parameter (api.handler).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from api.fields import Day
from leadcrm.directory.rules import Actor
from leadcrm.platform.assignee import ASSIGNEE_PATTERN, ME, Assignee, parse_assignee
from leadcrm.platform.paging import DEFAULT_PAGE_SIZE, MAX_CURSOR_LENGTH, MAX_PAGE_SIZE

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "AssigneeParam",
    "CursorParam",
    "FromDay",
    "PageSize",
    "ToDay",
    "assignee_of",
    "assignee_for_member_read",
]

PageSize = Annotated[
    int, Query(ge=1, le=MAX_PAGE_SIZE, description=f"page size, 1 to {MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE})")
]
CursorParam = Annotated[
    str | None, Query(max_length=MAX_CURSOR_LENGTH, description="the `nextCursor` of the page before (opaque)")
]
AssigneeParam = Annotated[
    str | None,
    Query(
        pattern=ASSIGNEE_PATTERN,
        description="`me` (the caller), `unassigned` (nobody responsible) or a user id",
    ),
]

FromDay = Annotated[Day | None, Query(alias="from", description="first local day of the period (YYYY-MM-DD)")]
ToDay = Annotated[Day | None, Query(description="last local day of the period, included (YYYY-MM-DD)")]


def assignee_of(raw: str | None, actor: Actor) -> Assignee | None:
    """The `assignee` filter with `me` resolved to the caller."""
    return parse_assignee(raw, actor.user_id)


def assignee_for_member_read(raw: str | None) -> tuple[Assignee | None, bool]:
    """The `assignee` filter of a read that resolves the caller in its own statement
    (leadcrm.directory.member_reads): `me` is (None, True), left for that statement to resolve."""
    if raw == ME:
        return None, True
    return parse_assignee(raw, None), False
