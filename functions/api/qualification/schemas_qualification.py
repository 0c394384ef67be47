"""Request and response bodies of enrichment, scoring models, qualification, merges and pseudonymization."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from api.fields import JsonFloat, JsonInt
from api.leads.schemas_lead_reads import LeadDetail
from api.schemas import CamelModel, Envelope, OutModel
from leadcrm.qualification.rules.qualification import CriterionStatus, DisqualifyReason
from leadcrm.qualification.rules.scoring import MAX_SCORE, Operator
from leadcrm.qualification.tables import ENRICHMENT_CATEGORIES

FieldName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
MAX_RULES = 50
# An enriched value or a rule's operand: kept in jsonb and compared by the scoring rules.
ScalarText = Annotated[str, Field(max_length=1000)]
Scalar = ScalarText | JsonInt | JsonFloat | bool
ScalarValue = Scalar | Annotated[list[ScalarText | JsonInt | JsonFloat], Field(max_length=50)]

# -- enrichment -------------------------------------------------------------------------------------------


class EnrichmentBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "category": "firmographic",
                    "field": "companySize",
                    "value": "11-50",
                    "source": "clearbit",
                    "confidence": 0.8,
                }
            ]
        }
    )
    category: Literal[ENRICHMENT_CATEGORIES]  # type: ignore[valid-type]
    field: FieldName
    # A scalar (text, number, yes/no) or a short list of them.
    value: ScalarValue
    source: Annotated[str, Field(min_length=1, max_length=100)]
    confidence: Annotated[float, Field(ge=0, le=1)]


class Enrichment(OutModel):
    id: uuid.UUID
    lead_id: uuid.UUID
    category: str
    field: str
    value: Any
    source: str
    confidence: float
    actor_user_id: uuid.UUID | None
    created_at: datetime


class LeadEnrichments(OutModel):
    """`current`: the newest value of each field; `history`: every enrichment, newest first."""

    current: list[Enrichment]
    history: list[Enrichment]


# -- scoring models ---------------------------------------------------------------------------------------


def _a_number(value: object) -> bool:
    if isinstance(value, (bool, list)):
        return False
    try:
        return math.isfinite(float(str(value).strip()))
    except ValueError:
        return False


class FieldRule(CamelModel):
    kind: Literal["field"]
    field: FieldName
    operator: Operator = Operator.PRESENT
    value: ScalarValue | None = None
    weight: Annotated[float, Field(ge=-100, le=100)]

    @model_validator(mode="after")
    def _value_for_operator(self) -> FieldRule:
        if self.operator is not Operator.PRESENT and self.value is None:
            raise ValueError(f"operator {self.operator.value} needs a value")
        if self.operator is Operator.IN and not isinstance(self.value, list):
            raise ValueError("operator in needs a list value")
        if self.operator in (Operator.GTE, Operator.LTE) and not _a_number(self.value):
            # it compares numbers: with any other value the rule could never add its points
            raise ValueError(f"operator {self.operator.value} needs a number")
        return self


class SourceRule(CamelModel):
    kind: Literal["source"]
    sources: Annotated[list[Annotated[str, Field(min_length=1, max_length=50)]], Field(min_length=1, max_length=20)]
    weight: Annotated[float, Field(ge=-100, le=100)]


class EngagementRule(CamelModel):
    kind: Literal["engagement"]
    signal: FieldName
    weight: Annotated[float, Field(ge=-100, le=100)]  # points per unit
    max: Annotated[float | None, Field(ge=0, le=100)] = None


Rule = Annotated[FieldRule | SourceRule | EngagementRule, Field(discriminator="kind")]


class ScoringModelBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"rules": [{"kind": "field", "field": "email", "weight": 20}], "qualifyThreshold": 20}]
        }
    )
    rules: Annotated[list[Rule], Field(min_length=1, max_length=MAX_RULES)]
    qualify_threshold: Annotated[int, Field(ge=0, le=MAX_SCORE)]
    nurture_days: Annotated[int, Field(ge=1, le=365)] = 30


class ScoringModel(OutModel):
    id: uuid.UUID
    version: int
    rules: list[dict[str, Any]]
    qualify_threshold: int
    nurture_days: int
    created_by_user_id: uuid.UUID | None
    created_at: datetime
    # When every lead was rescored with this version (null while the job is applying it).
    rescored_at: datetime | None


# -- qualification ----------------------------------------------------------------------------------------


class CriterionAnswer(CamelModel):
    status: CriterionStatus
    evidence: Annotated[str | None, Field(max_length=2000)] = None


class CriteriaBody(CamelModel):
    """BANT answers to record; criteria not named keep theirs. `met` needs evidence."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "budget": {"status": "met", "evidence": "Plans to spend 60 EUR a month"},
                    "need": {"status": "unknown"},
                }
            ]
        }
    )

    budget: CriterionAnswer | None = None
    authority: CriterionAnswer | None = None
    need: CriterionAnswer | None = None
    timeline: CriterionAnswer | None = None

    @model_validator(mode="after")
    def _something(self) -> CriteriaBody:
        if not any((self.budget, self.authority, self.need, self.timeline)):
            raise ValueError("name at least one of budget, authority, need, timeline")
        return self


class TransitionBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"reasonCode": "no_budget", "note": "Called at lunchtime"}]}
    )
    # Disqualify only, and required there (400 DISQUALIFY_REASON_REQUIRED without it).
    reason_code: DisqualifyReason | None = None
    note: Annotated[str | None, Field(max_length=2000)] = None
    # Nurture only: re-evaluate after this many days (default: the scoring model's nurtureDays).
    nurture_days: Annotated[int | None, Field(ge=1, le=365)] = None


class Qualification(OutModel):
    lead_id: uuid.UUID
    state: str | None
    reason: str | None
    criteria: dict[str, Any]
    changed_at: datetime | None
    reevaluate_at: datetime | None
    score: int | None
    score_model_version: int | None
    scored_at: datetime | None
    qualify_threshold: int | None


# -- merges -----------------------------------------------------------------------------------------------


class MergeBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"mergedLeadId": "0190b6a2-7c3e-7014-9a51-3f0e8c2b1a14"}]}
    )
    merged_lead_id: uuid.UUID


class Merge(OutModel):
    id: uuid.UUID
    survivor_lead_id: uuid.UUID
    original_survivor_id: uuid.UUID
    merged_lead_id: uuid.UUID
    actor_user_id: uuid.UUID | None
    merged_at: datetime
    # table.column → primary keys of the rows the merge moved to the survivor
    moved: dict[str, list[list[Any]]]
    undone_at: datetime | None
    undone_by_user_id: uuid.UUID | None
    undo_report: dict[str, Any] | None


class MergeDone(OutModel):
    merge_id: uuid.UUID
    survivor_id: uuid.UUID
    merged_id: uuid.UUID
    merged_at: datetime
    moved: dict[str, int]
    filled: list[str]


class UndoDone(OutModel):
    merge_id: uuid.UUID
    survivor_id: uuid.UUID
    restored_id: uuid.UUID
    # stayedWithSurvivor: rows that reached the survivor since the merge (they stay); missing: moved rows
    # gone since; keptSurvivorColumns: filled columns edited since (the edit stays); notRestored: tables
    # whose removed rows could not be put back; clearedReferences: the restored lead's references to rows
    # deleted since (a campaign, an owner), cleared.
    report: dict[str, Any]


class Duplicate(OutModel):
    lead_id: uuid.UUID
    name: str | None
    status: str
    matched_by: Literal["email", "phone"]
    created_at: datetime
    converted: bool


class MergeSuggestion(OutModel):
    survivor_id: uuid.UUID
    duplicates: list[Duplicate]


class MergedRedirect(OutModel):
    """The requested id was merged into `data.id`: this is the survivor's answer."""

    redirected_from: uuid.UUID
    merge_id: uuid.UUID
    merged_at: datetime


class LeadDetailOrRedirect(Envelope[LeadDetail]):
    meta: MergedRedirect | None = None


# -- pseudonymization -------------------------------------------------------------------------------------


class Pseudonymized(OutModel):
    lead_id: uuid.UUID
    pseudonymized_at: datetime
