"""The Sales workspace's writes (issue 26): the Board's stage write and the Sales sheet's results.

Both are compositions of the use cases that already own each write, never a second copy of them:
- the stage write is `leads.moves.update_lead` (the status event, stage_moved, lead.status_changed; a
  converted stage is CONVERT_REQUIRED as on every move), plus the Board's own rule that entering a
  trial_booked stage says when (`work.rules.sales_workspace.stage_write_refusal`);
- a result is `work.touches.log_touch` (the outcome under the call-outcome state machine, the stamps, the
  follow-up replaced, cleared or kept), or only the follow-up's own writes (`work.follow_ups`) when no contact
  was made, then the stage write.
All in the caller's unit of work: one transaction, so one version bump (migration 0026 bumps once per
transaction) and one timeline group (entries of one transaction share `group_xact`). The version the caller
read is checked by the route first (`leads.versions.require_version`), under the lead's lock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from leadcrm.directory.rules import Actor
from leadcrm.leads.moves import AlsoWritten, LeadUpdate, lock_lead_with_stages, public_lead, update_lead
from leadcrm.leads.versions import LeadVersionConflict, is_stale
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest
from leadcrm.work import follow_ups
from leadcrm.work.rules.call_outcomes import CallOutcome, TouchChannel
from leadcrm.work.rules.follow_ups import FollowUp, TouchFollowUpAction
from leadcrm.work.rules.sales_workspace import ResultRefusal, plan_result, stage_write_refusal
from leadcrm.work.touches import TOUCH_COLUMNS, Touch, log_touch, read_lead

VIA_SALES_RESULT = "sales_result"


def _refused(refusal: ResultRefusal) -> BadRequest:
    return BadRequest(refusal.message, code=refusal.code)


def write_stage(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    stage_id: uuid.UUID,
    *,
    trial_date: datetime | None = None,
    lost_reason: str | None = None,
    expected_version: int | None = None,
) -> dict[str, Any]:
    """Moves the lead's primary placement onto `stage_id` (the Board's drag); the lead after (LEAD_COLUMNS).

    `expected_version`: checked on the row the move locks (409 LEAD_VERSION_CONFLICT), so the check costs no
    statement of its own and holds until the move commits.

    400 TRIAL_DATE_REQUIRED entering a trial_booked stage without `trial_date`; every move's refusals
    (CONVERT_REQUIRED, STAGE_NOT_IN_PIPELINE, STAGE_ARCHIVED, LOST_REASON_REQUIRED); 404 LEAD_NOT_FOUND,
    STAGE_NOT_FOUND. The trial date is written with the move (a details_updated entry beside stage_moved)."""
    locked = lock_lead_with_stages(uow.connection, actor.organization_id, lead_id, stage_id=stage_id)
    if is_stale(locked.row["version"], expected_version):
        assert expected_version is not None
        raise LeadVersionConflict(public_lead(locked.row), expected_version)
    target = locked.stages[stage_id]
    assert target is not None  # lock_lead_with_stages refuses an unknown stage
    refusal = stage_write_refusal(
        target=target.category, current_stage_is_target=locked.row["stage_id"] == stage_id, trial_date=trial_date
    )
    if refusal is not None:
        raise _refused(refusal)
    details = {"trial_date": trial_date} if trial_date is not None else {}
    change = LeadUpdate(stage_id=stage_id, lost_reason=lost_reason, details=details)
    return update_lead(uow, actor, lead_id, change, locked=locked, also=AlsoWritten(returning=TOUCH_COLUMNS))


@dataclass(frozen=True)
class SalesResult:
    """A contact result as the Sales sheet logs it. `follow_up` is the new one of a replace."""

    outcome: CallOutcome | None = None
    note: str | None = None
    channel: TouchChannel = TouchChannel.CALL
    follow_up_action: TouchFollowUpAction = TouchFollowUpAction.KEEP
    follow_up: FollowUp | None = None
    stage_id: uuid.UUID | None = None
    trial_date: datetime | None = None
    lost_reason: str | None = None


def log_result(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, result: SalesResult) -> dict[str, Any]:
    """See the module docstring; the lead after (LEAD_COLUMNS and the touch's stamps). 400 RESULT_EMPTY for a
    result that asks for nothing, the touch's and the move's refusals (nothing written: one unit of work)."""
    try:
        plan = plan_result(
            outcome=result.outcome,
            note=result.note,
            follow_up_action=result.follow_up_action,
            moves_stage=result.stage_id is not None,
            trial_date=result.trial_date,
        )
    except ResultRefusal as refusal:
        raise _refused(refusal) from None
    conn = uow.connection
    lead: dict[str, Any] | None = None
    if plan.logs_touch:
        touch = Touch(
            channel=result.channel,
            outcome=result.outcome,
            note=result.note,
            follow_up_action=plan.follow_up_action,
            follow_up=result.follow_up,
            trial_date=plan.touch_trial_date,
        )
        lead = log_touch(uow, actor, lead_id, touch).lead
    elif plan.follow_up_action is TouchFollowUpAction.REPLACE:
        assert result.follow_up is not None
        lead = follow_ups.set_follow_up(
            conn, actor, lead_id, result.follow_up, via=VIA_SALES_RESULT, returning=TOUCH_COLUMNS
        )
    elif plan.follow_up_action is TouchFollowUpAction.CLEAR:
        follow_ups.clear_follow_up(conn, actor, lead_id)
    if result.stage_id is not None:
        lead = write_stage(
            uow, actor, lead_id, result.stage_id, trial_date=result.trial_date, lost_reason=result.lost_reason
        )
    # The last write's RETURNING is the lead after (with its stamps); a write that changed nothing answers the
    # row it read, without them: read it then.
    if lead is None or any(column.name not in lead for column in TOUCH_COLUMNS):
        lead = read_lead(conn, actor.organization_id, lead_id)
    return lead
