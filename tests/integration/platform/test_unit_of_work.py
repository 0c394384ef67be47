"""The unit of work: nothing persists unless committed, and events go to the outbox with the writes."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from leadcrm.directory.provisioning import create_organization
from leadcrm.directory.tables import organizations
from leadcrm.platform.db.consumer_uow import ConsumerUnitOfWork
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import INLINE_PUBLISH_LIMIT, UnitOfWork
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.platform.tables import outbox


def _event(organization_id) -> DomainEvent:
    return DomainEvent(type="test.happened", organization_id=organization_id, aggregate_id=uuid7(), payload={})


def _exists(table, row_id) -> bool:
    with get_engine().connect() as conn:
        return conn.execute(select(func.count()).select_from(table).where(table.c.id == row_id)).scalar_one() == 1


def test_work_that_is_not_committed_is_rolled_back_with_its_events() -> None:
    published: list[DomainEvent] = []
    with UnitOfWork(publisher=published.extend) as uow:
        organization_id = create_organization(uow.connection, "Never saved")
        event = _event(organization_id)
        uow.add_event(event)

    assert not _exists(organizations, organization_id)
    assert not _exists(outbox, event.id)
    assert published == []


def test_committed_work_writes_its_events_to_the_outbox_and_hands_them_to_the_publisher() -> None:
    published: list[DomainEvent] = []
    with UnitOfWork(publisher=published.extend) as uow:
        organization_id = create_organization(uow.connection, "Saved")
        event = _event(organization_id)
        uow.add_event(event)
        uow.commit()

    assert _exists(organizations, organization_id)
    assert _exists(outbox, event.id)
    assert published == [event]


def test_an_error_after_commit_inside_the_block_publishes_nothing_but_keeps_the_outbox_row_for_the_relay() -> None:
    published: list[DomainEvent] = []
    try:
        with UnitOfWork(publisher=published.extend) as uow:
            event = _event(create_organization(uow.connection, "Saved, then failed"))
            uow.add_event(event)
            uow.commit()
            raise RuntimeError("the handler broke after committing")
    except RuntimeError:
        pass

    assert _exists(outbox, event.id)
    assert published == []


def test_a_publisher_that_fails_never_fails_the_committed_work() -> None:
    def broken_publisher(events) -> None:
        raise ConnectionError("bus unreachable")

    with UnitOfWork(publisher=broken_publisher) as uow:
        event = _event(create_organization(uow.connection, "Saved anyway"))
        uow.add_event(event)
        uow.commit()

    assert _exists(outbox, event.id)


def _attempts(event_id) -> int:
    with get_engine().connect() as conn:
        return conn.execute(select(outbox.c.attempts).where(outbox.c.id == event_id)).scalar_one()


def test_a_consumers_events_are_published_right_after_the_commit_of_the_unit_it_runs_in() -> None:
    published: list[DomainEvent] = []
    with UnitOfWork(publisher=published.extend) as uow:
        consumer = ConsumerUnitOfWork(uow.connection)
        event = _event(create_organization(uow.connection, "Reacted"))
        consumer.add_event(event)
        consumer.write_events()
        assert published == []
        uow.commit()

    assert published == [event]
    assert _attempts(event.id) == 1  # the publisher's attempt, counted with the row


def test_a_consumers_events_roll_back_with_the_unit_it_runs_in() -> None:
    published: list[DomainEvent] = []
    with UnitOfWork(publisher=published.extend) as uow:
        consumer = ConsumerUnitOfWork(uow.connection)
        event = _event(create_organization(uow.connection, "Reacted, then rolled back"))
        consumer.add_event(event)
        consumer.write_events()

    assert published == []
    assert not _exists(outbox, event.id)


def test_a_consumer_on_a_bare_transaction_leaves_its_events_to_the_relay() -> None:
    with get_engine().begin() as conn:
        consumer = ConsumerUnitOfWork(conn)
        event = _event(create_organization(conn, "Reacted in a job"))
        consumer.add_event(event)
        consumer.write_events()

    assert _exists(outbox, event.id)
    assert _attempts(event.id) == 0  # nobody tried it: the relay takes it past its grace


def test_events_a_statement_wrote_for_the_relay_leave_the_units_own_events_to_the_relay_too() -> None:
    """A request publishes all of its events or none: past INLINE_PUBLISH_LIMIT, none."""
    published: list[DomainEvent] = []
    with UnitOfWork(publisher=published.extend) as uow:
        event = _event(create_organization(uow.connection, "Bulk"))
        uow.add_event(event)
        uow.add_relayed_events(INLINE_PUBLISH_LIMIT)  # written by the caller's own statement
        uow.commit()

    assert published == []
    assert _attempts(event.id) == 0


def test_events_the_request_would_publish_itself_are_not_counted_as_relayed() -> None:
    with UnitOfWork() as uow:
        assert uow.publishes_inline_with(INLINE_PUBLISH_LIMIT)
        with pytest.raises(ValueError):
            uow.add_relayed_events(INLINE_PUBLISH_LIMIT)
