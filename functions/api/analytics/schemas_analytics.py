"""Bodies of the analytics and attribution routes (`…/leads/analytics…`, `…/leads/{leadId}/attribution`,
`…/leads/campaigns/{campaignId}/spend`)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from api.fields import Day, Omittable
from api.schemas import CamelModel, OutModel, PeriodOut

# -- reads ------------------------------------------------------------------------------------------------


class SourceCount(OutModel):
    source: str
    total: int
    wins: int


class StatusCount(OutModel):
    status: str
    total: int


class CampaignCount(OutModel):
    campaign_id: uuid.UUID | None
    name: str
    total: int
    wins: int
    win_rate: int


class LeadAnalyticsOut(OutModel):
    period: PeriodOut
    total: int
    wins: int  # converted + customer
    converted: int
    customers: int
    conversion_rate: int  # whole percent
    created_this_month: int
    month_starts_at: datetime
    by_source: list[SourceCount]
    by_status: list[StatusCount]
    by_campaign: list[CampaignCount]


class FunnelStepOut(OutModel):
    step: str
    reached: int
    conversion_from_previous: int | None


class StageTimeOut(OutModel):
    stage_id: uuid.UUID
    name: str
    category: str
    pipeline_id: uuid.UUID
    completed_stays: int
    current: int
    average_seconds: float | None


class FunnelOut(OutModel):
    period: PeriodOut
    total: int
    steps: list[FunnelStepOut]
    stages: list[StageTimeOut]


class ResponseTimesRow(OutModel):
    month: str | None = None
    leads: int
    responded: int
    median_seconds: float | None
    p90_seconds: float | None


class ResponseTimesOut(OutModel):
    period: PeriodOut
    counted: str
    leads: int
    responded: int
    median_seconds: float | None
    p90_seconds: float | None
    by_month: list[ResponseTimesRow]


class CreditOut(OutModel):
    first_touch: float
    last_touch: float
    linear: float


class CampaignAttributionOut(OutModel):
    campaign_id: uuid.UUID | None
    name: str
    acquired: int
    customers: int
    spend: Decimal
    cac: Decimal | None
    credit: CreditOut


class ChannelAttributionOut(OutModel):
    channel: str
    label: str
    acquired: int
    customers: int


class AttributionReportOut(OutModel):
    period: PeriodOut
    window_days: int
    currency: str | None
    acquired: int
    customers: int
    spend: Decimal
    campaigns: list[CampaignAttributionOut]
    channels: list[ChannelAttributionOut]


class UtmOut(OutModel):
    source: str | None
    medium: str | None
    campaign: str | None
    term: str | None
    content: str | None


class TouchOut(OutModel):
    id: uuid.UUID
    kind: str
    channel: str
    is_first: bool
    occurred_at: datetime
    campaign_id: uuid.UUID | None
    utm: UtmOut
    detail: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _utm_together(cls, row: Any) -> Any:
        if isinstance(row, dict) and "utm" not in row:
            row = {**row, "utm": {name: row.get(f"utm_{name}") for name in UtmOut.model_fields}}
        return row


class LeadAttributionOut(OutModel):
    first_touch: TouchOut | None
    touches: list[TouchOut]


# -- writes -------------------------------------------------------------------------------------------------

Channel = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9_]*$")]


class CorrectAttributionBody(CamelModel):
    """A staff correction of the lead's acquisition: the channel (`direct_unknown` included), the campaign
    (null: none) and why (kept on the timeline)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "channel": "meta_ads",
                    "campaignId": "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10",
                    "reason": "The lead came from the spring Meta campaign",
                }
            ]
        }
    )

    channel: Channel
    campaign_id: uuid.UUID | None = None
    reason: str = Field(min_length=1, max_length=500)


Amount = Annotated[Decimal, Field(ge=0, max_digits=14, decimal_places=2)]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217, e.g. ILS, EUR, USD")]


class SpendBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"periodStart": "2025-03-01", "periodEnd": "2025-03-31", "amount": 450.0, "currency": "EUR"}]
        }
    )
    period_start: Day
    period_end: Day
    amount: Amount
    currency: Currency
    note: str | None = Field(default=None, max_length=500)

    @model_validator(mode="after")
    def _period_in_order(self) -> SpendBody:
        if self.period_end < self.period_start:
            raise ValueError("periodEnd is before periodStart")
        return self


class UpdateSpendBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"amount": 480.0}]})
    period_start: Omittable[Day] = None
    period_end: Omittable[Day] = None
    amount: Omittable[Amount] = None
    currency: Omittable[Currency] = None
    note: str | None = Field(default=None, max_length=500)  # null clears it

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateSpendBody:
        if not self.model_fields_set:
            raise ValueError("give a period, an amount, a currency or a note")
        return self


class SpendOut(OutModel):
    id: uuid.UUID
    campaign_id: uuid.UUID
    period_start: date
    period_end: date
    amount: Decimal
    currency: str
    note: str | None
    created_by_user_id: uuid.UUID | None
    created_at: datetime
    updated_at: datetime
