"""The work queue's page statement is built once per shape and reused with each request's values (issue 22):
the organization, the instants of the window, the cursor and the page size are bound, never built in."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from leadcrm.directory.rules import Actor, Role
from leadcrm.platform.assignee import NOBODY, Assignee
from leadcrm.work.queue import (
    DESC_BASE,
    TIER_SCALE,
    QueueCursor,
    QueueFilters,
    Window,
    _queue_statement,
    _shape_and_values,
)
from leadcrm.work.rules.attention import Tier, new_lead_sla, org_day


def _actor() -> Actor:
    return Actor(
        user_id=uuid.uuid4(),
        organization_id=uuid.uuid4(),
        membership_id=uuid.uuid4(),
        role=Role.OWNER,
        features=frozenset(),
    )


def _window(now: datetime, timezone: str = "UTC") -> Window:
    return Window(now=now, day=org_day(now, timezone), sla=new_lead_sla())


NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def test_two_organizations_at_two_instants_share_one_statement():
    first, first_values = _shape_and_values(_actor(), QueueFilters(), _window(NOW))
    second, second_values = _shape_and_values(
        _actor(), QueueFilters(limit=10), _window(NOW + timedelta(hours=5), "Asia/Tokyo")
    )
    assert _queue_statement(first) is _queue_statement(second)
    assert first_values["organization_id"] != second_values["organization_id"]
    assert (first_values["rows"], second_values["rows"]) == (51, 11)
    assert first_values["day_ends_at"] != second_values["day_ends_at"]


def test_an_assignee_is_a_value_and_unassigned_a_shape_of_its_own():
    me, someone = Assignee(uuid.uuid4()), Assignee(uuid.uuid4())
    mine, mine_values = _shape_and_values(_actor(), QueueFilters(assignee=me), _window(NOW))
    theirs, _ = _shape_and_values(_actor(), QueueFilters(assignee=someone), _window(NOW))
    nobodys, _ = _shape_and_values(_actor(), QueueFilters(assignee=NOBODY), _window(NOW))
    assert mine == theirs and mine != nobodys
    assert mine_values["assignee_user_id"] == me.user_id


def test_pages_after_a_cursor_in_the_same_tier_share_one_statement():
    window = _window(NOW)
    # Two backlog arrivals (tier 3), a day apart.
    keys = (
        TIER_SCALE * Tier.BACKLOG + DESC_BASE - 1_764_000_000,
        TIER_SCALE * Tier.BACKLOG + DESC_BASE - 1_764_086_400,
    )
    cursors = [QueueCursor(rank_key=Decimal(key), id=uuid.uuid4(), reason=None) for key in keys]
    shapes = [_shape_and_values(_actor(), QueueFilters(after=cursor), window)[0] for cursor in cursors]
    assert shapes[0] == shapes[1]
    first_page, _ = _shape_and_values(_actor(), QueueFilters(), window)
    assert shapes[0] != first_page
