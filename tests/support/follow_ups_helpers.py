"""Helpers for the tasks, follow-ups and touches tests: calling the routes, reading tasks and consents back."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select, update

from leadcrm.conversations.tables import lead_consents
from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.tables import tasks
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import StaffCaller


def tasks_path(org_id: Any, task_id: Any | None = None, action: str | None = None) -> str:
    path = f"/organizations/{org_id}/tasks"
    if task_id is not None:
        path += f"/{task_id}"
    return path + (f"/{action}" if action else "")


def put_follow_up(caller: StaffCaller, lead_id: Any, body: Any, *, org_id: Any = None) -> ApiResponse:
    path = leads_path(org_id or caller.org_id, lead_id) + "/follow-up"
    return call_api("PUT", path, sub=caller.sub, body=body)


def delete_follow_up(caller: StaffCaller, lead_id: Any) -> ApiResponse:
    return call_api("DELETE", leads_path(caller.org_id, lead_id) + "/follow-up", sub=caller.sub)


def touch(caller: StaffCaller, lead_id: Any, body: Any, *, org_id: Any = None) -> ApiResponse:
    return call_api("POST", leads_path(org_id or caller.org_id, lead_id) + "/touches", sub=caller.sub, body=body)


def create_task(caller: StaffCaller, body: Any) -> ApiResponse:
    return call_api("POST", tasks_path(caller.org_id), sub=caller.sub, body=body)


def list_tasks(caller: StaffCaller, **query: str) -> ApiResponse:
    return call_api("GET", tasks_path(caller.org_id), sub=caller.sub, query=query or None)


def task_action(caller: StaffCaller, task_id: Any, action: str) -> ApiResponse:
    return call_api("POST", tasks_path(caller.org_id, task_id, action), sub=caller.sub)


def patch_task(caller: StaffCaller, task_id: Any, body: Any) -> ApiResponse:
    return call_api("PATCH", tasks_path(caller.org_id, task_id), sub=caller.sub, body=body)


def lead_tasks(lead_id: Any, *, open_only: bool = False) -> list[dict[str, Any]]:
    query = select(tasks).where(tasks.c.linked_lead_id == uuid.UUID(str(lead_id)))
    if open_only:
        query = query.where(tasks.c.status.in_(("pending", "in_progress")))
    with get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(query.order_by(tasks.c.created_at, tasks.c.id)).mappings()]


def task_row(task_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(tasks).where(tasks.c.id == uuid.UUID(str(task_id)))).mappings().one())


def consents_of(lead_id: Any) -> dict[str, str]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_consents.c.channel, lead_consents.c.status).where(
                lead_consents.c.lead_id == uuid.UUID(str(lead_id))
            )
        ).all()
    return {r.channel: r.status for r in rows}


def set_timezone(org_id: Any, timezone: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org_id).values(timezone=timezone))
