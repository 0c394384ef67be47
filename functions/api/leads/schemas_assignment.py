"""Bodies and answers of the assignment rules (`/organizations/{orgId}/lead-assignment-rules`) and of staff
availability (`/organizations/{orgId}/staff/{userId}/availability`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from api.fields import Instant, Omittable
from api.schemas import CamelModel, OutModel
from leadcrm.leads.rules.assignment import Strategy, format_clock, parse_clock

Clock = Annotated[
    str, Field(min_length=5, max_length=5, pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, 00:00-23:59")
]
Text = Annotated[str, Field(min_length=1, max_length=200)]
Language = Annotated[str, Field(min_length=2, max_length=3, pattern=r"^[A-Za-z]{2,3}$", description="ISO 639, e.g. he")]
_EXAMPLE_USER = "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12"


class RuleFields(CamelModel):
    name: Omittable[Text] = None
    active: Omittable[bool] = None
    # Conditions: empty or left out = any. A lead matches when every condition set holds.
    sources: list[Text] | None = Field(default=None, max_length=20)
    campaign_ids: list[uuid.UUID] | None = Field(default=None, max_length=100)
    pipeline_ids: list[uuid.UUID] | None = Field(default=None, max_length=50)
    # The Meta lead form id or the WhatsApp number id (phone_number_id) a lead came through.
    form_refs: list[Text] | None = Field(default=None, max_length=100)
    languages: list[Language] | None = Field(default=None, max_length=20)
    # Time of day in the organization's timezone, [from, to); from after to wraps midnight; both or neither.
    hours_from: Clock | None = None
    hours_to: Clock | None = None
    strategy: Omittable[Strategy] = None
    # Round-robin: in this order. Fixed: exactly one. Each must be active staff when the rule is saved.
    user_ids: list[uuid.UUID] | None = Field(default=None, max_length=100)
    # Open leads a person may hold before the rule passes them by; null: no limit.
    capacity: int | None = Field(default=None, ge=1, le=100_000)

    def changes(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if name == "hours_from":
                values["window_from"] = parse_clock(value) if value is not None else None
            elif name == "hours_to":
                values["window_to"] = parse_clock(value) if value is not None else None
            elif name in ("sources", "campaign_ids", "pipeline_ids", "form_refs", "languages", "user_ids"):
                values[name] = value or []
            else:
                values[name] = value
        return values


class CreateAssignmentRuleBody(RuleFields):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "WhatsApp evenings",
                    "sources": ["whatsapp"],
                    "hoursFrom": "18:00",
                    "hoursTo": "23:00",
                    "strategy": "round_robin",
                    "userIds": [_EXAMPLE_USER],
                    "capacity": 40,
                }
            ]
        }
    )
    name: Text
    strategy: Strategy
    user_ids: list[uuid.UUID] = Field(min_length=1, max_length=100)
    # 0 = first; default last.
    position: int | None = Field(default=None, ge=0, le=10000)

    def changes(self) -> dict[str, Any]:
        values = super().changes()
        values.pop("position", None)
        return values


class UpdateAssignmentRuleBody(RuleFields):
    model_config = ConfigDict(json_schema_extra={"examples": [{"active": False}]})

    @model_validator(mode="after")
    def _something(self) -> UpdateAssignmentRuleBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self


class AssignmentRuleOrderBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"ruleIds": [_EXAMPLE_USER]}]})
    rule_ids: list[uuid.UUID] = Field(max_length=500)


class RuleProblem(OutModel):
    # ASSIGNEE_LEFT: a named person is no longer active staff; the rule skips them (and is skipped when
    # nobody else it names can take a lead).
    code: str
    user_id: uuid.UUID


class AssignmentRule(OutModel):
    id: uuid.UUID
    name: str
    position: int
    active: bool
    sources: list[str]
    campaign_ids: list[uuid.UUID]
    pipeline_ids: list[uuid.UUID]
    form_refs: list[str]
    languages: list[str]
    hours_from: str | None
    hours_to: str | None
    strategy: Strategy
    user_ids: list[uuid.UUID]
    capacity: int | None
    problems: list[RuleProblem]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> AssignmentRule:
        window = {
            "hours_from": format_clock(row["window_from"]) if row["window_from"] is not None else None,
            "hours_to": format_clock(row["window_to"]) if row["window_to"] is not None else None,
        }
        return cls.model_validate({**row, **window})


class AssignmentRuleEnvelope(OutModel):
    data: AssignmentRule


class AssignmentRuleListEnvelope(OutModel):
    data: list[AssignmentRule]
    # Small and bounded by nature: answered whole, with the shape of every list (nextCursor null).
    next_cursor: None


# -- staff availability --------------------------------------------------------------------------------------


class WorkingWindow(CamelModel):
    day: int = Field(ge=1, le=7, description="ISO weekday: 1 = Monday … 7 = Sunday")
    from_: Clock = Field(alias="from")
    to: Clock


class AvailabilityBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"awayUntil": "2027-01-10T08:00:00Z", "workingHours": [{"day": 1, "from": "09:00", "to": "17:00"}]}
            ]
        }
    )
    # Away until this instant (null: not away). Past it the person is back without anyone touching it.
    away_until: Instant | None = None
    # In the organization's timezone; empty: any time. A window ending before it starts runs past midnight.
    working_hours: list[WorkingWindow] = Field(default_factory=list, max_length=50)

    def stored_hours(self) -> list[dict[str, Any]]:
        return [{"day": w.day, "from": w.from_, "to": w.to} for w in self.working_hours]


class WorkingWindowOut(OutModel):
    day: int
    from_: str = Field(alias="from")
    to: str


class Availability(OutModel):
    user_id: uuid.UUID
    away_until: datetime | None
    working_hours: list[WorkingWindowOut]
    updated_at: datetime | None


class AvailabilityEnvelope(OutModel):
    data: Availability
