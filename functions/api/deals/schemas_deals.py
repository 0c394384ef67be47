"""Bodies of the deals, deal pipeline, forecast and handover routes.

Money is an integer of minor units (`valueMinor`: 1999 is 19.99 EUR) with its ISO 4217 currency; strict
integers, so `19.99` or `"1999"` is refused rather than guessed at.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictInt, model_validator

from api.fields import Day, InstantUtcByDefault, Int32, Omittable
from api.schemas import CamelModel, OutModel, assignee_from
from leadcrm.deals.rules.deals import MAX_REASON_LENGTH, MAX_REFERENCE_LENGTH, LossReason, OfferType, StageKind
from leadcrm.deals.rules.pipelines import MAX_DEAL_STAGES, MAX_ROTTING_DAYS, MAX_STAGE_NAME_LENGTH

# Up to 10^15 minor units: far beyond any sale, well inside bigint and exact in JSON doubles (2^53).
MAX_VALUE_MINOR = 10**15
Money = Annotated[StrictInt, Field(ge=0, le=MAX_VALUE_MINOR)]
SignedMoney = Annotated[StrictInt, Field(ge=-MAX_VALUE_MINOR, le=MAX_VALUE_MINOR)]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
Percent = Annotated[StrictInt, Field(ge=0, le=100)]
Version = Annotated[Int32, Field(ge=1)]
Title = Annotated[str, Field(min_length=1, max_length=200)]
Reference = Annotated[str, Field(min_length=1, max_length=MAX_REFERENCE_LENGTH)]
Reason = Annotated[str, Field(min_length=1, max_length=MAX_REASON_LENGTH)]
OpenCategory = Literal["pipeline", "best_case", "commit"]
OpenKind = Literal["new", "discovery", "proposal", "negotiation"]
StageName = Annotated[str, Field(min_length=1, max_length=MAX_STAGE_NAME_LENGTH)]


class CreateDealBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "leadId": "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10",
                    "title": "Annual membership",
                    "offerType": "plan",
                    "valueMinor": 59000,
                    "currency": "EUR",
                    "expectedCloseDate": "2025-04-30",
                }
            ]
        }
    )
    title: Title
    offer_type: OfferType
    offer_ref: Reference | None = None
    # With a lead (a converted lead's member follows), a member, or both when they agree.
    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None
    value_minor: Money
    currency: Currency
    expected_close_date: Day
    # An active staff member (400 ASSIGNEE_NOT_STAFF); default: the caller. The deal's owner (deals.owner_user_id).
    assignee_user_id: uuid.UUID | None = None
    # A New stage of the deal pipeline; default: the first.
    stage_id: uuid.UUID | None = None
    probability: Percent | None = None
    forecast_category: OpenCategory | None = None

    @model_validator(mode="after")
    def _with_someone(self) -> CreateDealBody:
        if self.lead_id is None and self.membership_id is None:
            raise ValueError("a deal is with a lead or a member: give leadId or membershipId")
        return self


class UpdateDealBody(CamelModel):
    """Only the fields sent change; probability, forecastCategory and offerRef may be null (the stage's
    default, none). `version` is the one the caller read (409 DEAL_VERSION_CONFLICT otherwise)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"version": 3, "valueMinor": 65000}]})

    version: Version
    title: Omittable[Title] = None
    offer_type: Omittable[OfferType] = None
    offer_ref: Reference | None = None
    value_minor: Omittable[Money] = None
    currency: Omittable[Currency] = None
    expected_close_date: Omittable[Day] = None
    assignee_user_id: Omittable[uuid.UUID] = None
    probability: Percent | None = None
    forecast_category: OpenCategory | None = None

    @model_validator(mode="after")
    def _something(self) -> UpdateDealBody:
        if not self.model_fields_set - {"version"}:
            raise ValueError("send at least one field besides version")
        return self

    def changes(self) -> dict[str, Any]:
        """Column name → value: the API's assigneeUserId is the deal's owner_user_id column."""
        return {COLUMNS.get(name, name): getattr(self, name) for name in self.model_fields_set - {"version"}}


COLUMNS = {"assignee_user_id": "owner_user_id"}


class MoveDealBody(CamelModel):
    """The target stage and the evidence its transition asks for (deals.rules.deals)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"version": 3, "stageId": "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12"}]}
    )

    version: Version
    stage_id: uuid.UUID
    activity_at: InstantUtcByDefault | None = None  # → discovery: when the discovery call was scheduled or held
    activity_note: Reason | None = None  # → negotiation: the negotiation activity
    document_ref: Reference | None = None  # → proposal: the proposal document…
    quote_ref: Reference | None = None  # …or the quote sent
    close_reason: Reason | None = None  # → closed-won
    loss_reason: LossReason | None = None  # → closed-lost (a code)
    loss_note: Reason | None = None


class ReactivateDealBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"version": 4, "reason": "The customer came back after the holidays"}]}
    )
    version: Version
    reason: Reason


class CompensationBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"amountMinor": -5000, "reason": "Partial refund for a missed month"}]}
    )
    amount_minor: SignedMoney
    reason: Reason
    document_ref: Reference | None = None

    @model_validator(mode="after")
    def _not_zero(self) -> CompensationBody:
        if self.amount_minor == 0:
            raise ValueError("amountMinor must not be 0")
        return self


class DealResponse(OutModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    stage_name: str
    stage_kind: str
    status: str
    title: str
    offer_type: str
    offer_ref: str | None
    lead_id: uuid.UUID | None
    membership_id: uuid.UUID | None
    value_minor: int
    currency: str
    expected_close_date: date
    probability: int | None
    forecast_category: str | None
    effective_probability: int
    effective_forecast_category: str
    assignee_user_id: uuid.UUID | None = assignee_from("owner_user_id")
    created_by_user_id: uuid.UUID | None
    version: int
    last_activity_at: datetime
    stage_entered_at: datetime
    stalled_at: datetime | None
    closed_at: datetime | None
    close_reason: str | None
    loss_reason: str | None
    loss_note: str | None
    created_at: datetime
    updated_at: datetime


class DealHistoryEntry(OutModel):
    id: uuid.UUID
    type: str
    from_stage_id: uuid.UUID | None
    to_stage_id: uuid.UUID | None
    from_status: str | None
    to_status: str | None
    actor_user_id: uuid.UUID | None
    reason: str | None
    payload: dict[str, Any]
    occurred_at: datetime


class Compensation(OutModel):
    id: uuid.UUID
    deal_id: uuid.UUID
    amount_minor: int
    currency: str
    reason: str
    document_ref: str | None
    created_by_user_id: uuid.UUID | None
    created_at: datetime


class DealDetail(DealResponse):
    net_value_minor: int
    history: list[DealHistoryEntry]
    compensations: list[Compensation]


class DealEnvelope(OutModel):
    data: DealResponse


class DealDetailEnvelope(OutModel):
    data: DealDetail


class DealListEnvelope(OutModel):
    data: list[DealResponse]
    next_cursor: str | None


class CompensationEnvelope(OutModel):
    data: Compensation


# -- deal pipeline -------------------------------------------------------------------------------------------


class RenameDealPipelineBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Memberships"}]})
    name: StageName


class AddDealStageBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "Proposal sent", "kind": "proposal", "probability": 40, "forecastCategory": "pipeline"}
            ]
        }
    )
    name: StageName
    kind: OpenKind
    probability: Percent
    forecast_category: OpenCategory
    rotting_days: Annotated[StrictInt, Field(ge=1, le=MAX_ROTTING_DAYS)] | None = None
    position: Annotated[StrictInt, Field(ge=0, le=MAX_DEAL_STAGES)] | None = None


class UpdateDealStageBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Proposal sent", "probability": 50}]})
    name: Omittable[StageName] = None
    probability: Omittable[Percent] = None
    forecast_category: Omittable[Literal["pipeline", "best_case", "commit", "closed"]] = None
    # null: the stage never rots.
    rotting_days: Annotated[StrictInt, Field(ge=1, le=MAX_ROTTING_DAYS)] | None = None

    @model_validator(mode="after")
    def _something(self) -> UpdateDealStageBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self


class ReorderDealStagesBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "stageIds": [
                        "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10",
                        "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11",
                        "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12",
                    ]
                }
            ]
        }
    )
    stage_ids: list[uuid.UUID] = Field(min_length=1, max_length=MAX_DEAL_STAGES)


class DealStageOut(OutModel):
    id: uuid.UUID
    name: str
    kind: StageKind
    probability: int
    forecast_category: str
    rotting_days: int | None
    position: int


class DealPipelineOut(OutModel):
    id: uuid.UUID
    name: str
    stages: list[DealStageOut]


class DealPipelineEnvelope(OutModel):
    data: DealPipelineOut


# -- forecast ------------------------------------------------------------------------------------------------


class CountAndValue(OutModel):
    count: int
    value_minor: int


class ForecastRow(OutModel):
    period_start: date
    currency: str
    # The assignee (owner) of the row's deals; null with allAssignees (the period's total in that currency)
    # or for deals nobody owns.
    assignee_user_id: uuid.UUID | None
    all_assignees: bool
    pipeline: CountAndValue
    best_case: CountAndValue
    commit: CountAndValue
    closed: CountAndValue
    stalled: CountAndValue
    weighted_pipeline_minor: int
    closed_won: CountAndValue
    closed_lost: CountAndValue
    win_rate: float | None
    average_cycle_days: float | None


class Forecast(OutModel):
    interval: str
    timezone: str
    start: date
    end: date  # exclusive
    rows: list[ForecastRow]


class ForecastEnvelope(OutModel):
    data: Forecast


# -- owner departure -----------------------------------------------------------------------------------------


class HandoverBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"toUserId": "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"}]})
    # An active staff member; omitted: the organization's default assignee (else its oldest active owner).
    to_user_id: uuid.UUID | None = None


class HandoverOut(OutModel):
    id: uuid.UUID
    membership_id: uuid.UUID
    from_user_id: uuid.UUID
    to_user_id: uuid.UUID
    via: str
    deals: int
    leads: int
    tasks: int


class HandoverEnvelope(OutModel):
    data: HandoverOut


class DefaultAssigneeBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"userId": "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"}]})
    # An active staff member, or null for the oldest active owner.
    user_id: uuid.UUID | None


class DefaultAssignee(OutModel):
    user_id: uuid.UUID | None


class DefaultAssigneeEnvelope(OutModel):
    data: DefaultAssignee
