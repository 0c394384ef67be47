"""The work queue (staff): GET /organizations/{orgId}/leads/queue."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, AssigneeParam, CursorParam, PageSize, assignee_of
from api.schemas import ListEnvelope
from api.work.schemas_queue import QueueItem
from leadcrm.directory.access import require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest
from leadcrm.work.queue import (
    QueueFilters,
    decode_queue_cursor,
    queue_page,
)
from leadcrm.work.rules.attention import QueueView, QueueViewConflict, Reason, reason_of_view

router = APIGatewayHttpRouter()
ops = Operations(router, "Work")


@ops.get(
    "/organizations/<orgId>/leads/queue",
    "getLeadQueue",
    "The open leads that need action, each with why, most urgent first",
    "Open (new, contacted, callback, trial_booked, no_show), live, unpaused leads with at least one reason: "
        "`inbound_unanswered`, `follow_up_overdue`, `follow_up_due_today` (the organization's timezone), "
        "`new_untouched` (no attempt past the new-lead SLA, 15 minutes unless NEW_LEAD_SLA_MINUTES), `returned` "
        "(came back within 7 days, nobody tried since), `unassigned`. Ranked by `tier` (0 hot: arrivals in "
        "their first 24 hours; 1 due follow-ups; 2 cooling: arrivals up to 7 days; 3 backlog), then newest "
        "arrival / most overdue follow-up first. The intake call and the return call are never overdue. "
        "`reason=` lists the leads having that reason, ranked by it. `view=needs_reply` is the Sales "
        "workspace's needs-reply view: the inbound-unanswered leads (`reason=inbound_unanswered`; with another "
        "`reason` it is 400 QUEUE_VIEW_CONFLICT). `nextCursor` is valid only with the `reason` it was issued "
        "for. This is the Sales workspace's Work queue.",
    errors={400: ["QUEUE_VIEW_CONFLICT"]},
)
def index(
    orgId: str,
    assignee: AssigneeParam = None,
    reason: Annotated[Reason | None, Query()] = None,
    view: Annotated[QueueView | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[QueueItem]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))  # the gate before any rule of the request
        try:
            reason = reason_of_view(view, reason)
        except QueueViewConflict as conflict:
            raise BadRequest(str(conflict), code="QUEUE_VIEW_CONFLICT") from None
        filters = QueueFilters(
            assignee=assignee_of(assignee, actor),
            reason=reason,
            limit=limit,
            after=decode_queue_cursor(cursor, reason) if cursor is not None else None,
        )
        page = queue_page(uow.connection, actor, filters)
    return ListEnvelope[QueueItem](
        data=[QueueItem.model_validate(item) for item in page.items], next_cursor=page.next_cursor
    )
