"""The morning urgent prompt: /organizations/{orgId}/urgent-prompt (+ /seen, /snooze).

Any active member may ask; owners, admins and coaches get their prompt, members always `show: false`
(a 200, not a 403: the dashboard shell asks for everyone). The lead_management feature gate applies.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller
from api.operations import MEMBER, Operations
from api.schemas import Envelope
from api.work.schemas_urgent_prompt import SnoozeBody, UrgentCountsOut, UrgentPromptState
from leadcrm.directory.access import require_feature
from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.work.urgent_prompt import PromptView, mark_seen, prompt_view, snooze

router = APIGatewayHttpRouter()
ops = Operations(router, "Work")


def _member_of(uow: UnitOfWork, orgId: str) -> Actor:
    actor = caller(uow, router, orgId)
    require_feature(actor, LEAD_MANAGEMENT)
    return actor


def _out(view: PromptView) -> Envelope[UrgentPromptState]:
    counts = view.counts
    return Envelope[UrgentPromptState](
        data=UrgentPromptState(
            show=view.show,
            blocking=view.blocking,
            counts=UrgentCountsOut(
                overdue_tasks=counts.overdue_tasks,
                due_today_tasks=counts.due_today_tasks,
                leads_needing_attention=counts.leads_shown,
            ),
            snoozed_until=view.snoozed_until,
            review_target=view.review_target,
        )
    )


@ops.get(
    "/organizations/<orgId>/urgent-prompt",
    "getUrgentPrompt",
    "The caller's urgent items and whether to show the prompt now",
    (
        "The caller's urgent items (overdue follow-ups, unanswered inbound, untouched new leads) and whether to show "
        "the prompt now; a member who is not staff gets `show: false`."
    ),
    who=MEMBER,
)
def read(orgId: str) -> Envelope[UrgentPromptState]:
    with UnitOfWork() as uow:
        view = prompt_view(uow.connection, _member_of(uow, orgId))
    return _out(view)


@ops.post(
    "/organizations/<orgId>/urgent-prompt/seen",
    "markUrgentPromptSeen",
    "The prompt was shown: not again this organization-local day",
    "The prompt was shown: not again this organization-local day.",
    who=MEMBER,
)
def seen(orgId: str) -> Envelope[UrgentPromptState]:
    with UnitOfWork() as uow:
        view = mark_seen(uow.connection, _member_of(uow, orgId))
        uow.commit()
    return _out(view)


@ops.post(
    "/organizations/<orgId>/urgent-prompt/snooze",
    "snoozeUrgentPrompt",
    "Remind me later: in an hour, or tomorrow at 08:00 organization-local",
    "Remind me later: in an hour, or tomorrow at 08:00 organization-local.",
    who=MEMBER,
)
def snooze_prompt(orgId: str, body: SnoozeBody) -> Envelope[UrgentPromptState]:
    with UnitOfWork() as uow:
        view = snooze(uow.connection, _member_of(uow, orgId), body.until)
        uow.commit()
    return _out(view)
