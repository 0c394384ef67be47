"""A bulk move announces each category change with the same lead.status_changed a single move would."""

from __future__ import annotations

from leadcrm.directory.rules import Actor, Role
from leadcrm.leads.moves import status_changed_event, status_changed_events
from leadcrm.leads.rules.moves import StageMove
from leadcrm.pipelines.rules.statuses import StageCategory as C
from leadcrm.platform.ids import uuid7


def actor(user: bool = True) -> Actor:
    return Actor(
        user_id=uuid7() if user else None,
        organization_id=uuid7(),
        membership_id=uuid7(),
        role=Role.OWNER,
        features=frozenset(),
    )


def move(from_status: C, to_status: C) -> StageMove:
    return StageMove(uuid7(), uuid7(), uuid7(), from_status, to_status, None, None)


def test_bulk_events_are_the_single_moves_events_of_the_category_changes_only():
    owner = actor()
    moves = [move(C.NEW, C.CALLBACK), move(C.CALLBACK, C.CALLBACK), move(C.CONTACTED, C.LOST)]

    bulk = status_changed_events(owner, moves)

    single = [status_changed_event(owner, m) for m in moves if m.category_changed]
    assert [(e.type, e.organization_id, e.aggregate_id, e.payload) for e in bulk] == [
        (e.type, e.organization_id, e.aggregate_id, e.payload) for e in single
    ]


def test_a_system_moves_events_name_no_actor():
    (event,) = status_changed_events(actor(user=False), [move(C.NEW, C.CONTACTED)])

    assert event.payload["actorUserId"] is None


def test_each_bulk_event_has_an_id_of_its_own():
    events = status_changed_events(actor(), [move(C.NEW, C.CONTACTED) for _ in range(3)])

    assert len({e.id for e in events}) == 3
