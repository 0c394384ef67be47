"""platform.messagebus: in-process messages answered by their subscribers, in order, on the caller's connection."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leadcrm.platform import messagebus


@dataclass(frozen=True)
class Pinged:
    value: int


@dataclass(frozen=True)
class NobodyListens:
    pass


CONNECTION = object()  # the bus passes the caller's connection through untouched


def _double(conn, message: Pinged) -> int:
    assert conn is CONNECTION
    return message.value * 2


def _negate(conn, message: Pinged) -> int:
    return -message.value


messagebus.subscribe(Pinged, _double)
messagebus.subscribe(Pinged, _negate)


def test_every_subscriber_answers_in_the_order_it_subscribed():
    assert messagebus.handle(CONNECTION, Pinged(21)) == [42, -21]


def test_subscribing_the_same_handler_twice_runs_it_once():
    messagebus.subscribe(Pinged, _double)
    assert messagebus.handle(CONNECTION, Pinged(1)) == [2, -1]


def test_a_message_nobody_subscribed_to_has_no_answers():
    assert messagebus.handle(CONNECTION, NobodyListens()) == []


def test_a_subscribers_failure_reaches_the_publisher():
    @dataclass(frozen=True)
    class Exploded:
        pass

    def _fail(conn, message):
        raise RuntimeError("boom")

    messagebus.subscribe(Exploded, _fail)
    with pytest.raises(RuntimeError, match="boom"):
        messagebus.handle(CONNECTION, Exploded())


def test_the_wiring_is_loaded_with_the_first_message():
    from leadcrm.leads.messages import LeadCreated
    from leadcrm.work.reactions import contact_task_for_new_lead

    handlers = messagebus.subscriptions()[LeadCreated]  # the wiring's references, imported on first call
    assert contact_task_for_new_lead in [getattr(handler, "target", handler) for handler in handlers]
