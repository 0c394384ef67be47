"""Tasks (staff): /organizations/{orgId}/tasks.

Lead tasks are listed with every other task (spec "Tasks page"): filter by `type` (contact_lead for the
lead tasks), `status` (default open: pending or in_progress), `leadId`, `assignee` (`me`: the
caller, resolved by the server; `unassigned`; or a user id). Rows carry `linkedLeadId` and the lead's
name and phone. A contact_lead task created
for a lead is the lead's follow-up; closing or rescheduling a task that stands for it clears or
moves the follow-up. Another organization's task or lead answers 404 like a random id.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import auth_subject, caller, entity_id, gate_before_rules, json_response, organization_id
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, AssigneeParam, CursorParam, PageSize, assignee_for_member_read
from api.work.schemas_tasks import (
    CreateTaskBody,
    CreateTaskEnvelope,
    CreateTaskMeta,
    Task,
    TaskEnvelope,
    TaskListEnvelope,
    UpdateTaskBody,
)
from leadcrm.directory.access import require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.work.tasks import (
    NewTask,
    TaskChange,
    TaskFilters,
    TaskStatusFilter,
    TaskType,
    close_task,
    create_task,
    list_tasks_as_member,
    update_task,
)

router = APIGatewayHttpRouter()
ops = Operations(router, "Work")

TASK_RESPONSES = {
    200: {"description": "The task"},
    404: {"description": "TASK_NOT_FOUND"},
    409: {"description": "TASK_CLOSED"},
}


@ops.get(
    "/organizations/<orgId>/tasks",
    "listTasks",
    "List tasks",
    "Tasks in keyset pages, filtered by type, status, lead and assignee.",
)
def index(
    orgId: str,
    type: Annotated[TaskType | None, Query()] = None,  # noqa: A002 - the documented query name
    status: Annotated[TaskStatusFilter, Query()] = TaskStatusFilter.OPEN,
    leadId: Annotated[uuid.UUID | None, Query()] = None,
    assignee: AssigneeParam = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> TaskListEnvelope:
    subject, org = auth_subject(router), organization_id(orgId)
    assignee_filter, assigned_to_caller = assignee_for_member_read(assignee)
    filters = TaskFilters(
        type=type, status=status, lead_id=leadId, assignee=assignee_filter, assigned_to_caller=assigned_to_caller
    )
    with UnitOfWork() as uow, gate_before_rules(uow, router, orgId, require_staff):  # a cursor that is not ours
        _, (rows, next_cursor) = list_tasks_as_member(
            uow.connection, subject, org, require_staff, filters, cursor=cursor, limit=limit
        )
    return TaskListEnvelope(data=[Task.from_row(r) for r in rows], next_cursor=next_cursor)


@ops.post(
    "/organizations/<orgId>/tasks",
    "createTask",
    "Create a task",
    (
        "Creates a task, optionally for a lead of this organization and for an active staff assignee (the caller by "
        "default)."
    ),
    errors={400: ["ASSIGNEE_NOT_STAFF"], 404: ["LEAD_NOT_FOUND", "TASK_NOT_FOUND"]},
    ok={
        201: {"description": "The task"},
        400: {"description": "ASSIGNEE_NOT_STAFF"},
        404: {"description": "LEAD_NOT_FOUND"},
    },
)
def create(orgId: str, body: Annotated[CreateTaskBody, Body()]) -> Response[CreateTaskEnvelope]:
    new = NewTask(
        title=body.title,
        description=body.description or None,
        type=body.type,
        priority=body.priority,
        due_date=body.due_date,
        due_time=body.due_time,
        assignee_user_id=body.assignee_user_id,
        linked_lead_id=body.linked_lead_id,
    )
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row, merged = create_task(uow, actor, new)
        uow.commit()
    return json_response(201, CreateTaskEnvelope(data=Task.from_row(row), meta=CreateTaskMeta(merged=merged)))


@ops.patch(
    "/organizations/<orgId>/tasks/<taskId>",
    "updateTask",
    "Update a task",
    (
        "Changes an open task; a follow-up task keeps a due date (400 FOLLOW_UP_TASK_NEEDS_DUE_DATE), a closed one "
        "changes no more (409 TASK_CLOSED)."
    ),
    errors={
        400: ["ASSIGNEE_NOT_STAFF", "FOLLOW_UP_TASK_NEEDS_DUE_DATE"],
        404: ["TASK_NOT_FOUND"],
        409: ["TASK_CLOSED"],
    },
    ok={400: {"description": "ASSIGNEE_NOT_STAFF, FOLLOW_UP_TASK_NEEDS_DUE_DATE"}, **TASK_RESPONSES},
)
def patch(orgId: str, taskId: str, body: Annotated[UpdateTaskBody, Body()]) -> Response[TaskEnvelope]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = update_task(uow, actor, entity_id(taskId, "TASK_NOT_FOUND"), TaskChange(body.changes()))
        uow.commit()
    return json_response(200, TaskEnvelope(data=Task.from_row(row)))


def _close(orgId: str, taskId: str, status: str) -> Response[TaskEnvelope]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = close_task(uow, actor, entity_id(taskId, "TASK_NOT_FOUND"), status)
        uow.commit()
    return json_response(200, TaskEnvelope(data=Task.from_row(row)))


@ops.post(
    "/organizations/<orgId>/tasks/<taskId>/complete",
    "completeTask",
    "Complete a task",
    "Completes an open task.",
    errors={404: ["TASK_NOT_FOUND"], 409: ["TASK_CLOSED"]},
    ok=TASK_RESPONSES,
)
def complete(orgId: str, taskId: str) -> Response[TaskEnvelope]:
    return _close(orgId, taskId, "completed")


@ops.post(
    "/organizations/<orgId>/tasks/<taskId>/cancel",
    "cancelTask",
    "Cancel a task",
    "Cancels an open task.",
    errors={404: ["TASK_NOT_FOUND"], 409: ["TASK_CLOSED"]},
    ok=TASK_RESPONSES,
)
def cancel(orgId: str, taskId: str) -> Response[TaskEnvelope]:
    return _close(orgId, taskId, "cancelled")
