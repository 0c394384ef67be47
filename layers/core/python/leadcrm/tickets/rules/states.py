"""The ticket state machine (spec crm-workflows §6) and what each state does to the SLA timer (§3).

Pure: `next_status(status, trigger)` answers the state a trigger leads to or raises InvalidTransition, which
the API answers 409 TICKET_INVALID_TRANSITION naming the status and the trigger.

§6, row by row:

    New               ticket created, routing matched        → Assigned           (ROUTE_MATCHED)
    New               no queue match                         → Unassigned         (ROUTE_UNMATCHED)
    Unassigned        agent or queue assigned                → Assigned           (ASSIGN)
    Assigned          agent sends first customer response    → In Progress        (RESPOND)
    Assigned          SLA timer approaches breach            → Escalated          (ESCALATE)
    In Progress       agent requests customer information    → Awaiting Customer  (REQUEST_INFO)
    Awaiting Customer customer replies                       → In Progress        (CUSTOMER_REPLY)
    In Progress       agent proposes solution                → Resolved           (RESOLVE)
    Resolved          customer confirms resolution           → Closed             (CONFIRM)
    Resolved          customer indicates issue persists      → Reopened           (REOPEN)
    Resolved          no response within auto-close window   → Closed             (AUTO_CLOSE)
    Escalated         higher-tier agent takes ownership      → In Progress        (TAKE_OWNERSHIP)

The table has no row out of Reopened; §3's diagram sends a reopened ticket back to investigation (In
Progress), which here is the agent's next response (RESPOND from Reopened). Nothing else is added: a
closed ticket is final (a later email opens a new ticket that points at it).

Re-assigning (handover) is not a transition: the accountable agent changes in any open state and the
clock carries on (§8 "SLA breach during handover": the new agent inherits the SLA accountability).
"""

from __future__ import annotations

from enum import StrEnum

from leadcrm.platform.errors import Conflict


class TicketStatus(StrEnum):
    NEW = "new"
    UNASSIGNED = "unassigned"
    ASSIGNED = "assigned"
    IN_PROGRESS = "in_progress"
    ESCALATED = "escalated"
    AWAITING_CUSTOMER = "awaiting_customer"
    RESOLVED = "resolved"
    REOPENED = "reopened"
    CLOSED = "closed"


class Trigger(StrEnum):
    ROUTE_MATCHED = "route_matched"
    ROUTE_UNMATCHED = "route_unmatched"
    ASSIGN = "assign"
    RESPOND = "respond"
    ESCALATE = "escalate"
    REQUEST_INFO = "request_info"
    CUSTOMER_REPLY = "customer_reply"
    RESOLVE = "resolve"
    CONFIRM = "confirm"
    REOPEN = "reopen"
    AUTO_CLOSE = "auto_close"
    TAKE_OWNERSHIP = "take_ownership"


S, T = TicketStatus, Trigger

TRANSITIONS: dict[tuple[TicketStatus, Trigger], TicketStatus] = {
    (S.NEW, T.ROUTE_MATCHED): S.ASSIGNED,
    (S.NEW, T.ROUTE_UNMATCHED): S.UNASSIGNED,
    (S.UNASSIGNED, T.ASSIGN): S.ASSIGNED,
    (S.ASSIGNED, T.RESPOND): S.IN_PROGRESS,
    (S.ASSIGNED, T.ESCALATE): S.ESCALATED,
    (S.IN_PROGRESS, T.REQUEST_INFO): S.AWAITING_CUSTOMER,
    (S.AWAITING_CUSTOMER, T.CUSTOMER_REPLY): S.IN_PROGRESS,
    (S.IN_PROGRESS, T.RESOLVE): S.RESOLVED,
    (S.RESOLVED, T.CONFIRM): S.CLOSED,
    (S.RESOLVED, T.REOPEN): S.REOPENED,
    (S.RESOLVED, T.AUTO_CLOSE): S.CLOSED,
    (S.ESCALATED, T.TAKE_OWNERSHIP): S.IN_PROGRESS,
    # §3: a reopened ticket goes back to investigation with the agent's next response.
    (S.REOPENED, T.RESPOND): S.IN_PROGRESS,
}

# Open: the ticket still needs work (everything but closed). Resolved counts as open: it waits for the
# customer's confirmation and can come back.
OPEN_STATUSES = frozenset(S) - {S.CLOSED}
# Where a handover (a new accountable agent or queue) may happen without changing state.
REASSIGNABLE_STATUSES = frozenset({S.ASSIGNED, S.IN_PROGRESS, S.ESCALATED, S.AWAITING_CUSTOMER, S.REOPENED})


class InvalidTransition(Conflict):
    code = "TICKET_INVALID_TRANSITION"

    def __init__(self, status: TicketStatus, trigger: Trigger) -> None:
        super().__init__(
            f"A ticket that is {status.value} cannot take {trigger.value}.",
            status=status.value,
            trigger=trigger.value,
            allowed=sorted(t.value for (s, t) in TRANSITIONS if s is status),
        )


def next_status(status: TicketStatus, trigger: Trigger) -> TicketStatus:
    found = TRANSITIONS.get((status, trigger))
    if found is None:
        raise InvalidTransition(status, trigger)
    return found


class TimerState(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


def timer_state(status: TicketStatus, *, resolved_pauses: bool) -> TimerState:
    """§3's "SLA Timer State" column. Resolved is "paused or running based on policy" (the SLA policy's
    `resolvedPausesTimer`); Reopened runs from the reopen instant (the service restarts the clock)."""
    if status is S.CLOSED:
        return TimerState.STOPPED
    if status is S.AWAITING_CUSTOMER:
        return TimerState.PAUSED
    if status is S.RESOLVED:
        return TimerState.PAUSED if resolved_pauses else TimerState.RUNNING
    return TimerState.RUNNING
