"""Bodies of the Tasks routes (/organizations/{orgId}/tasks)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from api.fields import Day, Omittable, WallClockTime
from api.schemas import CamelModel, OutModel
from leadcrm.work.tasks import TaskType

TaskPriority = Literal["low", "medium", "high"]


class CreateTaskBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"title": "Call Ana about the trial", "linkedLeadId": "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10"}]
        }
    )
    title: str = Field(min_length=1, max_length=255)
    description: str | None = Field(default=None, max_length=5000)
    type: TaskType = TaskType.GENERAL
    priority: TaskPriority = "medium"
    due_date: Day | None = None
    # Local to the organization's time zone: a time with a UTC offset is refused (400), never dropped.
    due_time: WallClockTime | None = None
    # An active staff member of this organization (400 ASSIGNEE_NOT_STAFF); default: the caller.
    assignee_user_id: uuid.UUID | None = None
    # A lead of this organization (404 LEAD_NOT_FOUND). With type contact_lead the task is the lead's
    # follow-up: it merges into the lead's open contact task, if there is one.
    linked_lead_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _time_needs_a_date(self) -> CreateTaskBody:
        if self.due_time is not None and self.due_date is None:
            raise ValueError("dueTime needs a dueDate")
        return self


class UpdateTaskBody(CamelModel):
    """Only the fields sent change; dueDate / dueTime / description / assigneeUserId may be null to clear."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"title": "Call Ana about the trial", "description": "She prefers evenings"}]}
    )

    title: Omittable[str] = Field(default=None, min_length=1, max_length=255)
    description: str | None = Field(default=None, max_length=5000)
    priority: Omittable[TaskPriority] = None
    due_date: Day | None = None
    # Local to the organization's time zone: a time with a UTC offset is refused (400), never dropped.
    due_time: WallClockTime | None = None
    assignee_user_id: uuid.UUID | None = None
    # Completing and cancelling have their own routes.
    status: Omittable[Literal["pending", "in_progress"]] = None

    @model_validator(mode="after")
    def _something(self) -> UpdateTaskBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self

    def changes(self) -> dict[str, object]:
        """Column name → value for the fields sent."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class TaskLead(OutModel):
    id: uuid.UUID
    name: str | None
    phone: str | None


class Task(OutModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    type: str
    title: str
    description: str | None
    status: str
    priority: str
    source: str
    due_date: date | None
    due_time: WallClockTime | None
    assignee_user_id: uuid.UUID | None
    linked_lead_id: uuid.UUID | None
    lead: TaskLead | None
    created_by_user_id: uuid.UUID | None
    completed_at: datetime | None
    cancelled_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, object]) -> Task:
        lead = None
        if row["linked_lead_id"] is not None:
            lead = TaskLead(id=row["linked_lead_id"], name=row["lead_name"], phone=row["lead_phone"])  # type: ignore[arg-type]
        return cls.model_validate({**row, "lead": lead})


class TaskEnvelope(OutModel):
    data: Task


class CreateTaskMeta(OutModel):
    # True: a contact_lead task for a lead that already had an open one; that task was moved onto this one's
    # due date and took its fields (a lead has one follow-up).
    merged: bool


class CreateTaskEnvelope(OutModel):
    data: Task
    meta: CreateTaskMeta


class TaskListEnvelope(OutModel):
    data: list[Task]
    next_cursor: str | None
