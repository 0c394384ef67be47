"""Bodies of the helpdesk routes: tickets, their actions, settings, queues, routing rules, reports, surveys."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import ConfigDict, EmailStr, Field, model_validator

from api.fields import Day, Omittable
from api.schemas import CamelModel, OutModel, PeriodOut
from leadcrm.tickets.rules.routing import Channel, Priority, RequesterType
from leadcrm.tickets.rules.states import TicketStatus


class CreateTicketBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"subject": "Cannot book a class in the app", "leadId": "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10"}
            ]
        }
    )
    subject: str = Field(min_length=1, max_length=500)
    description: str = Field(default="", max_length=20000)
    # How the request reached the organization: staff log phone and chat; integrations use api.
    channel: Channel = Channel.API
    priority: Priority = Priority.NORMAL
    # Staff: the lead or the membership (of this organization) who asks — one of the two.
    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None
    # Where mail about the ticket goes; default: the lead's or member's address.
    requester_email: EmailStr | None = None

    @model_validator(mode="after")
    def _one_requester(self) -> CreateTicketBody:
        if self.lead_id is not None and self.membership_id is not None:
            raise ValueError("send leadId or membershipId, not both")
        return self


class AssignTicketBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "assigneeUserId": "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11",
                    "queueId": "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12",
                }
            ]
        }
    )
    assignee_user_id: uuid.UUID | None = None
    queue_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _something(self) -> AssignTicketBody:
        if self.assignee_user_id is None and self.queue_id is None:
            raise ValueError("send assigneeUserId, queueId or both")
        return self


class MessageBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"message": "We are looking into it and will reply today."}]}
    )
    message: str = Field(default="", max_length=20000)


class CustomerReplyBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"message": "It works again, thank you."}]})
    message: str = Field(min_length=1, max_length=20000)
    channel: Channel = Channel.PHONE


class ResolveBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"resolution": "Cleared the app cache; booking works again."}]}
    )
    resolution: str = Field(min_length=1, max_length=20000)


class ReopenTicketBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"reason": "The booking fails again since this morning"}]}
    )
    reason: str = Field(min_length=1, max_length=2000)


class SlaView(OutModel):
    timer: str
    first_response_target_minutes: int
    resolution_target_minutes: int
    first_response_due_at: datetime
    first_responded_at: datetime | None
    first_response_seconds: int | None
    first_response_breached_at: datetime | None
    cycle_started_at: datetime
    resolution_elapsed_seconds: int
    running_since: datetime | None
    resolution_due_at: datetime | None
    resolution_breached_at: datetime | None
    resolution_seconds: int | None
    breach_count: int


class Ticket(OutModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    number: int
    subject: str
    description: str
    status: TicketStatus
    priority: Priority
    channel: Channel
    requester_type: RequesterType
    lead_id: uuid.UUID | None
    membership_id: uuid.UUID | None
    requester_email: str | None
    queue_id: uuid.UUID | None
    assignee_user_id: uuid.UUID | None
    routing_rule_id: uuid.UUID | None
    conversation_id: uuid.UUID | None
    previous_ticket_id: uuid.UUID | None
    escalated_at: datetime | None
    resolution: str | None
    resolved_at: datetime | None
    closed_at: datetime | None
    close_reason: str | None
    reopened_at: datetime | None
    reopen_reason: str | None
    reopen_count: int
    sla: SlaView
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Ticket:
        if row["status"] == TicketStatus.CLOSED.value:
            timer = "stopped"
        else:
            timer = "running" if row["sla_running_since"] is not None else "paused"
        sla = SlaView(
            timer=timer,
            cycle_started_at=row["sla_cycle_started_at"],
            running_since=row["sla_running_since"],
            **{k: row[k] for k in SlaView.model_fields if k in row},
        )
        return cls.model_validate({**row, "sla": sla})


class TicketEnvelope(OutModel):
    data: Ticket


class TicketListEnvelope(OutModel):
    data: list[Ticket]
    next_cursor: str | None


class HistoryEntry(OutModel):
    id: uuid.UUID
    type: str
    from_status: str | None
    to_status: str | None
    actor_user_id: uuid.UUID | None
    payload: dict[str, Any]
    occurred_at: datetime


class TicketMail(OutModel):
    id: uuid.UUID
    kind: str
    status: str
    to_address: str | None
    provider_message_id: str | None
    error: str | None
    sent_at: datetime | None
    created_at: datetime


class TicketMessage(OutModel):
    id: uuid.UUID
    direction: str
    channel: str
    sender_email: str | None
    subject: str | None
    body: str
    author_user_id: uuid.UUID | None
    occurred_at: datetime


class TicketDetail(Ticket):
    history: list[HistoryEntry]
    mails: list[TicketMail]
    messages: list[TicketMessage]


class TicketDetailEnvelope(OutModel):
    data: TicketDetail


# -- settings ------------------------------------------------------------------------------------------------

# {"mon": [["09:00", "17:00"]], …}: the shape is bounded here, its meaning judged by leadcrm.tickets.rules.sla
# (400 INVALID_CALENDAR).
ClockText = Annotated[str, Field(max_length=5)]
BusinessHours = Annotated[
    dict[
        Annotated[str, Field(max_length=3)],
        Annotated[list[Annotated[list[ClockText], Field(max_length=2)]], Field(max_length=48)],
    ],
    Field(max_length=7),
]


class Holiday(CamelModel):
    date: Day
    name: str = Field(min_length=1, max_length=200)


class SlaPolicy(CamelModel):
    priority: Priority
    first_response_minutes: int = Field(ge=1, le=60 * 24 * 90)
    resolution_minutes: int = Field(ge=1, le=60 * 24 * 365)


class UpdateTicketSettingsBody(CamelModel):
    """Only the fields sent change. `businessHours`: {"mon": [["09:00", "17:00"]], …} in the organization's
    timezone (a day not named is closed). `holidays` replaces the list. `slaPolicies` sets the priorities named."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"holidays": [{"date": "2025-12-25", "name": "Christmas Day"}]}]}
    )

    business_hours: Omittable[BusinessHours] = None
    holidays: Omittable[Annotated[list[Holiday], Field(max_length=1000)]] = None
    auto_close_hours: Omittable[Annotated[int, Field(ge=1, le=2160)]] = None
    escalation_percent: Omittable[Annotated[int, Field(ge=1, le=99)]] = None
    resolved_pauses_timer: Omittable[bool] = None
    sla_policies: Omittable[Annotated[list[SlaPolicy], Field(max_length=4)]] = None
    rotate_support_address: bool = False

    @model_validator(mode="after")
    def _something(self) -> UpdateTicketSettingsBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self

    def changes(self) -> dict[str, Any]:
        changes: dict[str, Any] = {name: getattr(self, name) for name in self.model_fields_set}
        if self.holidays is not None:
            changes["holidays"] = [(h.date, h.name) for h in self.holidays]
        if self.sla_policies is not None:
            changes["sla_policies"] = [
                (p.priority.value, p.first_response_minutes, p.resolution_minutes) for p in self.sla_policies
            ]
        return changes


class HolidayOut(OutModel):
    date: date
    name: str


class SlaPolicyOut(OutModel):
    priority: Priority
    first_response_minutes: int
    resolution_minutes: int


class TicketSettings(OutModel):
    support_address: str
    timezone: str
    business_hours: dict[str, list[list[str]]]
    holidays: list[HolidayOut]
    auto_close_hours: int
    escalation_percent: int
    resolved_pauses_timer: bool
    sla_policies: list[SlaPolicyOut]

    @classmethod
    def from_view(cls, view: dict[str, Any]) -> TicketSettings:
        holidays = [{"date": h["holiday_date"], "name": h["name"]} for h in view["holidays"]]
        return cls.model_validate({**view, "holidays": holidays})


class TicketSettingsEnvelope(OutModel):
    data: TicketSettings


# -- queues and rules ------------------------------------------------------------------------------------------


class CreateQueueBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Billing"}]})
    name: str = Field(min_length=1, max_length=200)
    escalation_user_id: uuid.UUID | None = None


class UpdateQueueBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"name": "Billing", "escalationUserId": "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"}]
        }
    )
    name: Omittable[Annotated[str, Field(min_length=1, max_length=200)]] = None
    escalation_user_id: uuid.UUID | None = None
    archived: Omittable[bool] = None

    @model_validator(mode="after")
    def _something(self) -> UpdateQueueBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self

    def changes(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


class Queue(OutModel):
    id: uuid.UUID
    name: str
    escalation_user_id: uuid.UUID | None
    archived_at: datetime | None
    created_at: datetime


class QueueEnvelope(OutModel):
    data: Queue


class QueueListEnvelope(OutModel):
    data: list[Queue]
    # Small and bounded by nature: answered whole, with the shape of every list (nextCursor null).
    next_cursor: None


class RuleFields(CamelModel):
    name: Omittable[Annotated[str, Field(min_length=1, max_length=200)]] = None
    channels: list[Channel] | None = Field(default=None, max_length=5)
    priorities: list[Priority] | None = Field(default=None, max_length=4)
    requester_types: list[RequesterType] | None = Field(default=None, max_length=3)
    keywords: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(default=None, max_length=50)
    queue_id: uuid.UUID | None = None
    assignee_user_id: uuid.UUID | None = None
    active: Omittable[bool] = None

    def changes(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if name in ("channels", "priorities", "requester_types"):
                value = [v.value for v in value or []]
            elif name == "keywords":
                value = value or []
            values[name] = value
        return values


class CreateRuleBody(RuleFields):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "Billing mail", "queueId": "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12", "channels": ["email"]}
            ]
        }
    )
    name: str = Field(min_length=1, max_length=200)
    # 0 = first; default last.
    position: int | None = Field(default=None, ge=0, le=10000)

    def changes(self) -> dict[str, Any]:
        values = super().changes()
        values.setdefault("name", self.name)
        values["position"] = self.position
        return values


class UpdateRuleBody(RuleFields):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Billing mail", "channels": ["email"]}]})

    @model_validator(mode="after")
    def _something(self) -> UpdateRuleBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self


class RuleOrderBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"ruleIds": ["0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10", "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"]}]
        }
    )
    rule_ids: list[uuid.UUID] = Field(max_length=500)


class Rule(OutModel):
    id: uuid.UUID
    name: str
    position: int
    channels: list[str]
    priorities: list[str]
    requester_types: list[str]
    keywords: list[str]
    queue_id: uuid.UUID | None
    assignee_user_id: uuid.UUID | None
    active: bool


class RuleEnvelope(OutModel):
    data: Rule


class RuleListEnvelope(OutModel):
    data: list[Rule]
    # Small and bounded by nature: answered whole, with the shape of every list (nextCursor null).
    next_cursor: None


# -- reports ---------------------------------------------------------------------------------------------------


class Figures(OutModel):
    tickets: int
    responded: int
    first_response_avg_seconds: int | None
    first_response_median_seconds: int | None
    resolved: int
    resolution_avg_seconds: int | None
    resolution_median_seconds: int | None
    breached: int
    breach_rate: float
    first_response_breached: int
    closed: int


class QueueFigures(Figures):
    queue_id: uuid.UUID | None


class AgentFigures(Figures):
    assignee_user_id: uuid.UUID | None


class SlaReport(OutModel):
    period: PeriodOut
    totals: Figures
    by_queue: list[QueueFigures]
    by_agent: list[AgentFigures]


class SlaReportEnvelope(OutModel):
    data: SlaReport


# -- surveys ---------------------------------------------------------------------------------------------------


class SurveyAnswerBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"rating": 5, "comment": "Quick and friendly"}]})
    rating: int = Field(ge=1, le=5)
    comment: str | None = Field(default=None, max_length=2000)


class Survey(OutModel):
    organization_name: str
    ticket_number: int
    subject: str
    answered: bool
    rating: int | None
    question: str = "How satisfied are you with the help you got? 1 (not at all) to 5 (very)."

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Survey:
        return cls(
            organization_name=row["organization_name"],
            ticket_number=row["number"],
            subject=row["subject"],
            answered=row["answered_at"] is not None,
            rating=row["rating"],
        )


class SurveyEnvelope(OutModel):
    data: Survey
