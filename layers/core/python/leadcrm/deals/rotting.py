"""The rotting sweep (scheduled job `deal_rotting_sweep`): open deals idle beyond their stage's threshold stall.

Spec section 5: "Proposal or Negotiation — deal stalled beyond rotting threshold → Stalled — stale-deal
alert triggered; re-engagement planned". Each run, in batches of BATCH_SIZE deals per transaction:

1. one UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED) flips the rotting deals to `stalled` (the rule of
   `deals.rules.deals.is_rotting`, written in SQL) and returns them. A deal a person is changing right now is
   skipped (its lock is held; the change restarts its clock anyway) and looked at again next run;
2. the same transaction writes each deal's `stalled` history row, the lead's timeline entry, the
   re-engagement task for the deal's owner (due today in the organization's timezone, through
   `work.tasks`), and the alert: a `deal.stalled` event per deal (ids only).

Idempotent: only `open` deals are taken, and a stalled deal is not open, so a second run (or two runs at
once) stalls nothing twice and opens no second task.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, literal, select, update

from leadcrm.deals.deals import DEAL_STALLED, HISTORY_STALLED, TIMELINE_TYPES, deal_event
from leadcrm.deals.rules.deals import ROTTING_KINDS, DealStatus
from leadcrm.deals.tables import deal_history, deal_stages, deals
from leadcrm.directory.rules import system_actor
from leadcrm.leads.activity import record_activities
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7
from leadcrm.work.tasks import TaskType, create_system_tasks

logger = logging.getLogger(__name__)

JOB_NAME = "deal_rotting_sweep"
BATCH_SIZE = 500
MAX_BATCHES_PER_RUN = 20
TASK_SOURCE = "deal_rotting"
MAX_TASK_TITLE = 255
MIN_ROTTING_DAYS = 1  # deal_stages.rotting_days BETWEEN 1 AND 365


def run_rotting_sweep(now: datetime | None = None) -> dict[str, int]:
    """The scheduled job; `now` is for tests. Returns counts only."""
    now = now or clock.now()
    stats = {"stalled": 0, "tasks": 0}
    for _ in range(MAX_BATCHES_PER_RUN):
        stalled, opened = _sweep_batch(now)
        stats["stalled"] += stalled
        stats["tasks"] += opened
        if stalled < BATCH_SIZE:
            break
    return stats


def _sweep_batch(now: datetime) -> tuple[int, int]:
    with UnitOfWork() as uow:
        conn = uow.connection
        rotting = (
            select(deals.c.id)
            .select_from(deals.join(deal_stages, deal_stages.c.id == deals.c.stage_id))
            .where(
                deals.c.status == DealStatus.OPEN.value,
                deal_stages.c.kind.in_([k.value for k in ROTTING_KINDS]),
                deal_stages.c.rotting_days.is_not(None),
                deals.c.last_activity_at < literal(now) - func.make_interval(0, 0, 0, deal_stages.c.rotting_days),
                # The same bound at its loosest (thresholds are at least a day): a range the partial index
                # ix_deals_open_last_activity answers, so deals touched today are never read.
                deals.c.last_activity_at < literal(now - timedelta(days=MIN_ROTTING_DAYS)),
            )
            .order_by(deals.c.last_activity_at)
            .limit(BATCH_SIZE)
            .with_for_update(of=deals, skip_locked=True)
            .cte("rotting")
        )
        stalled = (
            conn.execute(
                update(deals)
                .where(deals.c.id == rotting.c.id)
                .values(
                    status=DealStatus.STALLED.value,
                    stalled_at=literal(now),
                    version=deals.c.version + 1,
                    updated_at=sql_now(),
                )
                .returning(*deals.c)
            )
            .mappings()
            .all()
        )
        if not stalled:
            return 0, 0
        _record_stalls(uow, [dict(d) for d in stalled])
        opened = create_system_tasks(conn, [_reengagement_task(d) for d in stalled])
        uow.commit()
    logger.info("deals stalled", extra={"count": len(stalled), "tasks": opened})
    return len(stalled), opened


def _record_stalls(uow: UnitOfWork, stalled: list[dict[str, Any]]) -> None:
    conn = uow.connection
    history = []
    timeline = []
    for deal in stalled:
        actor = system_actor(deal["organization_id"])
        payload = {"lastActivityAt": deal["last_activity_at"].isoformat()}
        history.append(
            {
                "id": uuid7(),
                "organization_id": deal["organization_id"],
                "deal_id": deal["id"],
                "type": HISTORY_STALLED,
                "from_stage_id": deal["stage_id"],
                "to_stage_id": deal["stage_id"],
                "from_status": DealStatus.OPEN.value,
                "to_status": DealStatus.STALLED.value,
                "actor_user_id": None,
                "reason": "rotting",
                "payload": payload,
            }
        )
        if deal["lead_id"] is not None:
            timeline.append(
                {
                    "organization_id": deal["organization_id"],
                    "lead_id": deal["lead_id"],
                    "type": TIMELINE_TYPES[HISTORY_STALLED],
                    "payload": {"dealId": str(deal["id"]), "stageId": str(deal["stage_id"])},
                }
            )
        uow.add_event(
            deal_event(
                DEAL_STALLED,
                actor,
                deal,
                stageId=str(deal["stage_id"]),
                ownerUserId=str(deal["owner_user_id"]) if deal["owner_user_id"] else None,
                **payload,
            )
        )
    conn.execute(insert(deal_history).values(history))  # one multi-row INSERT (at most BATCH_SIZE rows)
    record_activities(conn, timeline)


def _reengagement_task(deal: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": uuid7(),
        "organization_id": deal["organization_id"],
        "type": TaskType.GENERAL.value,
        "title": f"Re-engage stalled deal: {deal['title']}"[:MAX_TASK_TITLE],
        "priority": "high",
        "source": TASK_SOURCE,
        "assignee_user_id": deal["owner_user_id"],
        "linked_lead_id": deal["lead_id"],
        "linked_deal_id": deal["id"],
    }
