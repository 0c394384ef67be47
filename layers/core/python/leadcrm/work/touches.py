"""Logging a touch: `POST …/leads/{leadId}/touches` (spec "Logging a touch", call-outcomes-state-machine.txt).

One unit of work, under the lead's lock (taken first, `follow_up_state.lock_lead_state` → `leads.moves.lock_lead`):

1. The outcome, if any, is planned by `work.rules.call_outcomes.plan_outcome` on the lead's status read under the
   lock. A terminal constraint refuses the whole touch (400 OUTCOME_REQUIRES_TRIAL_BOOKED /
   OUTCOME_NOT_FROM_NEW, nothing written); a closed or won lead ignores the outcome (`applied: false`, the
   touch is still logged). A move goes through `leads.moves.update_lead` (a bare status → the first active
   stage of that category in the lead's primary pipeline; lost carries the outcome as its reason): the
   status event, stage_moved and lead.status_changed of every move.
2. The follow-up is replaced, cleared or kept (`work.rules.follow_ups.plan_touch_follow_up`, written by the
   follow-up service): a replace or clear completes the task that stood for the old follow-up; the first
   real contact retires the intake call / return call even on keep.
3. The contact stamps: last_contact_attempt_at on every touch, last_contacted_at when a person was reached,
   the unanswered-calls count (+1 on no_answer, 0 when a person was reached), first_human_response_at on
   the first touch a staff member logs (kept once set: automatic acknowledgements never come this way),
   trial_date for a booked appointment.
4. `dnc` revokes consent on every channel (also on a closed lead: a do-not-contact request is honoured
   whatever the lead's status). A `call_logged` timeline entry records the touch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, literal, select

from leadcrm.conversations import consent
from leadcrm.directory.rules import Actor
from leadcrm.leads.messages import ScoringInputsChanged
from leadcrm.leads.moves import AlsoWritten, LeadUpdate, activity_row, lock_lead_with_stages, update_lead
from leadcrm.leads.tables import LEAD_COLUMNS, leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.messagebus import handle
from leadcrm.work import follow_up_state, follow_ups
from leadcrm.work.rules.call_outcomes import (
    CallOutcome,
    OutcomeRefused,
    TouchChannel,
    is_human_contact,
    plan_outcome,
    possible_targets,
)
from leadcrm.work.rules.follow_ups import FollowUp, TouchFollowUpAction, plan_touch_follow_up

CALL_LOGGED = "call_logged"
DNC_CONSENT_SOURCE = "call_outcome_dnc"

TOUCH_COLUMNS = (
    leads.c.last_contact_attempt_at,
    leads.c.last_contacted_at,
    leads.c.first_human_response_at,
    leads.c.consecutive_no_answer_count,
)

_REFUSAL_MESSAGES = {
    "OUTCOME_REQUIRES_TRIAL_BOOKED": "A sale or no-sale is only logged for a lead with a booked trial.",
    "OUTCOME_NOT_FROM_NEW": "A lead that was never contacted cannot be marked unresponsive.",
}


@dataclass(frozen=True)
class Touch:
    channel: TouchChannel
    outcome: CallOutcome | None = None
    note: str | None = None
    follow_up_action: TouchFollowUpAction = TouchFollowUpAction.KEEP
    follow_up: FollowUp | None = None  # the new follow-up of a replace
    trial_date: datetime | None = None


@dataclass(frozen=True)
class TouchResult:
    applied: bool  # whether the outcome moved (or could have moved) the lead; False: ignored or none
    lead: dict[str, Any]  # LEAD_COLUMNS + TOUCH_COLUMNS, after the touch


def log_touch(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, touch: Touch) -> TouchResult:
    """See the module docstring. 404 LEAD_NOT_FOUND; 400 on a terminal constraint or a missing stage.

    Round trips: the lead is locked with its follow-up state and every stage the outcome may move it to (one
    statement); the open contact task when the touch changes the follow-up (FOR UPDATE, after the lead);
    then, unless it is a do-not-contact, the move, the follow-up and its task's write, the contact stamps,
    the status event, the timeline entries and the outbox rows are one more; then the score."""
    conn = uow.connection
    locked = lock_lead_with_stages(
        conn,
        actor.organization_id,
        lead_id,
        categories=possible_targets(touch.outcome),
        columns=follow_up_state.STATE_EXTRA_COLUMNS,
        join=follow_up_state.state_join(),
    )
    state = follow_up_state.state_of(locked.row)
    applied = False
    change = LeadUpdate()
    if touch.outcome is not None:
        try:
            plan = plan_outcome(state.status, touch.outcome)
        except OutcomeRefused as refused:
            code = refused.refusal.value
            raise BadRequest(_REFUSAL_MESSAGES[code], code=code, outcome=touch.outcome.value) from None
        applied = plan.applied
        if plan.target is not None:
            change = LeadUpdate(status=plan.target, lost_reason=plan.lost_reason)
    human = is_human_contact(touch.outcome)
    follow_up_plan = plan_touch_follow_up(
        touch.follow_up_action, human_contact=human, current_is_seed=state.is_auto_seed
    )
    call_logged = activity_row(actor, lead_id, CALL_LOGGED, _call_logged_payload(touch, applied))
    if touch.outcome is not CallOutcome.DNC:
        # The move, the follow-up (and its task) and the stamps: one UPDATE; the timeline keeps the order
        # move, follow-up, call_logged.
        pair = follow_ups.touch_pair_writes(conn, actor, state, follow_up_plan, touch.follow_up)
        also = AlsoWritten(
            values={**pair.values, **_stamp_values(actor, touch, human)},
            activities=[*pair.activities, call_logged],
            returning=TOUCH_COLUMNS,
            carried=pair.carried,
        )
        lead = update_lead(uow, actor, lead_id, change, locked=locked, also=also)
    else:
        # The follow-up and consent writes come between the move and the stamps, as the timeline shows them.
        update_lead(uow, actor, lead_id, change, locked=locked)
        follow_ups.apply_touch(conn, actor, state, follow_up_plan, touch.follow_up)
        consent.revoke_all(conn, actor.organization_id, lead_id, source=DNC_CONSENT_SOURCE, actor_user_id=actor.user_id)
        stamp = AlsoWritten(
            values=_stamp_values(actor, touch, human), activities=[call_logged], returning=TOUCH_COLUMNS
        )
        lead = update_lead(uow, actor, lead_id, LeadUpdate(), locked=locked, also=stamp)
    # A touch is an engagement input of the lead's score (qualification.scoring): recomputed in this unit of work.
    for rescored in handle(conn, ScoringInputsChanged(actor.organization_id, (lead_id,))):
        lead = {**lead, **rescored.get(lead_id, {})}
    return TouchResult(applied=applied, lead=lead)


def _call_logged_payload(touch: Touch, applied: bool) -> dict[str, Any]:
    return {
        "channel": touch.channel.value,
        "outcome": touch.outcome.value if touch.outcome else None,
        "applied": applied,
        "note": touch.note,
        "followUp": touch.follow_up_action.value,
    }


def _stamp_values(actor: Actor, touch: Touch, human: bool) -> dict[str, Any]:
    """The contact stamps of a touch, as values of the lead's UPDATE."""
    values: dict[str, Any] = {"last_contact_attempt_at": sql_now()}
    if human:
        values["last_contacted_at"] = sql_now()
        values["consecutive_no_answer_count"] = 0
    elif touch.outcome is CallOutcome.NO_ANSWER:
        values["consecutive_no_answer_count"] = leads.c.consecutive_no_answer_count + 1
    if actor.user_id is not None:
        # The first staff touch is the first human response; a later one never moves it.
        values["first_human_response_at"] = case(
            (leads.c.first_human_response_at.is_(None), sql_now()), else_=leads.c.first_human_response_at
        )
    if touch.trial_date is not None:
        values["trial_date"] = literal(touch.trial_date, leads.c.trial_date.type)
    return values


# -- the follow-up routes' use cases (the pair itself is written by `work.follow_ups`) ------------------


def read_lead(conn: Any, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The lead with its contact stamps (LEAD_COLUMNS + TOUCH_COLUMNS)."""
    return dict(
        conn.execute(
            select(*LEAD_COLUMNS, *TOUCH_COLUMNS).where(
                leads.c.organization_id == organization_id, leads.c.id == lead_id
            )
        )
        .mappings()
        .one()
    )


def set_lead_follow_up(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, follow_up: FollowUp) -> dict[str, Any]:
    """PUT …/follow-up: sets it and moves (or creates) the lead's open contact task; the lead after."""
    return follow_ups.set_follow_up(uow.connection, actor, lead_id, follow_up, returning=TOUCH_COLUMNS)


def clear_lead_follow_up(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID) -> dict[str, Any]:
    """DELETE …/follow-up: clears it and cancels the task that stood for it; the lead after (idempotent)."""
    follow_ups.clear_follow_up(uow.connection, actor, lead_id)
    return read_lead(uow.connection, actor.organization_id, lead_id)
