"""The ticket state machine (tickets.rules.states): every row of the spec's §6 table, nothing else, and the
SLA timer state of §3 for each stage."""

from __future__ import annotations

import itertools

import pytest

from leadcrm.tickets.rules.states import (
    TRANSITIONS,
    InvalidTransition,
    TicketStatus,
    TimerState,
    Trigger,
    next_status,
    timer_state,
)

S, T = TicketStatus, Trigger

# §6, in the spec's order: (current, trigger, next).
SPEC_TABLE = [
    (S.NEW, T.ROUTE_MATCHED, S.ASSIGNED),  # routing rules match ticket to queue/agent
    (S.NEW, T.ROUTE_UNMATCHED, S.UNASSIGNED),  # held in the triage queue
    (S.UNASSIGNED, T.ASSIGN, S.ASSIGNED),  # assignment recorded
    (S.ASSIGNED, T.RESPOND, S.IN_PROGRESS),  # first response time captured
    (S.ASSIGNED, T.ESCALATE, S.ESCALATED),  # SLA timer approaches breach
    (S.IN_PROGRESS, T.REQUEST_INFO, S.AWAITING_CUSTOMER),  # SLA timer paused
    (S.AWAITING_CUSTOMER, T.CUSTOMER_REPLY, S.IN_PROGRESS),  # SLA timer resumes
    (S.IN_PROGRESS, T.RESOLVE, S.RESOLVED),  # resolution details recorded
    (S.RESOLVED, T.CONFIRM, S.CLOSED),  # satisfaction survey dispatched
    (S.RESOLVED, T.REOPEN, S.REOPENED),  # reopen reason captured; SLA recalculated
    (S.RESOLVED, T.AUTO_CLOSE, S.CLOSED),  # auto-close policy applied
    (S.ESCALATED, T.TAKE_OWNERSHIP, S.IN_PROGRESS),  # escalation chain recorded
]
# §3's diagram: a reopened ticket goes back to investigation (the only row the table itself lacks).
DIAGRAM_ROWS = [(S.REOPENED, T.RESPOND, S.IN_PROGRESS)]


@pytest.mark.parametrize(("current", "trigger", "expected"), SPEC_TABLE + DIAGRAM_ROWS)
def test_each_row_of_the_table_moves_the_ticket(current, trigger, expected):
    assert next_status(current, trigger) is expected


def test_the_machine_has_exactly_the_tables_rows():
    assert {(c, t): n for c, t, n in SPEC_TABLE + DIAGRAM_ROWS} == TRANSITIONS


INVALID = [
    (status, trigger)
    for status, trigger in itertools.product(TicketStatus, Trigger)
    if (status, trigger) not in TRANSITIONS
]


@pytest.mark.parametrize(("current", "trigger"), INVALID)
def test_every_other_pair_is_a_409_naming_the_status_and_trigger(current, trigger):
    with pytest.raises(InvalidTransition) as caught:
        next_status(current, trigger)
    error = caught.value
    assert (error.status, error.code) == (409, "TICKET_INVALID_TRANSITION")
    assert error.body()["error"]["status"] == current.value
    assert error.body()["error"]["trigger"] == trigger.value


def test_the_409_lists_what_the_state_does_allow():
    with pytest.raises(InvalidTransition) as caught:
        next_status(S.RESOLVED, T.RESPOND)
    assert caught.value.body()["error"]["allowed"] == ["auto_close", "confirm", "reopen"]


def test_a_closed_ticket_takes_nothing():
    assert not [t for (s, t) in TRANSITIONS if s is S.CLOSED]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (S.NEW, TimerState.RUNNING),
        (S.UNASSIGNED, TimerState.RUNNING),
        (S.ASSIGNED, TimerState.RUNNING),
        (S.IN_PROGRESS, TimerState.RUNNING),
        (S.ESCALATED, TimerState.RUNNING),  # §8: escalation continues whoever holds the ticket
        (S.AWAITING_CUSTOMER, TimerState.PAUSED),
        (S.REOPENED, TimerState.RUNNING),
        (S.CLOSED, TimerState.STOPPED),
    ],
)
def test_each_stage_has_the_timer_state_of_section_3(status, expected):
    assert timer_state(status, resolved_pauses=True) is expected
    assert timer_state(status, resolved_pauses=False) is expected


def test_resolved_pauses_or_runs_as_the_policy_says():
    assert timer_state(S.RESOLVED, resolved_pauses=True) is TimerState.PAUSED
    assert timer_state(S.RESOLVED, resolved_pauses=False) is TimerState.RUNNING
