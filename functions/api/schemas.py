"""Request and response bodies: camelCase JSON, unknown fields refused."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from enum import StrEnum
from types import UnionType
from typing import Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

from pydantic import AliasChoices, BaseModel, ConfigDict, EmailStr, Field, RootModel, field_validator, model_validator
from pydantic.alias_generators import to_camel

from api.fields import refuse_nul

T = TypeVar("T")

# Every body's validator and serializer is built on its first use, not when its module is imported: a cold
# start imports only the route modules its request needs (api.routing), and even those hold many bodies a
# request never meets. Subclasses inherit it with the rest of their model_config.
DEFERRED = ConfigDict(defer_build=True)


class CamelModel(BaseModel):
    model_config = ConfigDict(
        defer_build=True, alias_generator=to_camel, populate_by_name=True, extra="forbid", str_strip_whitespace=True
    )

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul_characters(cls, value: Any) -> Any:
        return refuse_nul(value)


class OutModel(BaseModel):
    """A response body: camelCase out, and columns the client does not see are simply left out."""

    model_config = ConfigDict(defer_build=True, alias_generator=to_camel, populate_by_name=True, extra="ignore")


class PeriodOut(OutModel):
    """The period the figures cover: the organization's local days `from`..`to` (both included), as instants
    (leadcrm.platform.periods: the one way every report takes and answers a period)."""

    from_: date | None = Field(default=None, alias="from")
    to: date | None = None
    timezone: str
    starts_at: datetime | None
    ends_at: datetime | None


def assignee_from(column: str) -> Any:
    """The person responsible is `assigneeUserId` on every record the API answers, whatever its table calls
    the column (`leads.assigned_to_user_id`, `deals.owner_user_id` …): read from either, written as one."""
    return Field(validation_alias=AliasChoices("assigneeUserId", "assignee_user_id", column))


class LeadSource(StrEnum):
    MANUAL = "manual"
    MINISITE = "minisite"
    FACEBOOK = "facebook"
    INSTAGRAM = "instagram"
    WHATSAPP = "whatsapp"
    EMAIL = "email"
    IMPORT = "import"
    REFERRAL = "referral"
    WALK_IN = "walk_in"
    OTHER = "other"


class CreateLeadBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"name": "Ana López", "email": "ana.lopez@example.com", "phone": "+34612345678"}]
        }
    )
    name: str | None = Field(default=None, min_length=1, max_length=200)
    email: EmailStr | None = None
    phone: str | None = Field(default=None, min_length=3, max_length=32, pattern=r"^[0-9+()\-\s.]+$")
    locale: str | None = Field(default=None, min_length=2, max_length=16)
    note: str | None = Field(default=None, max_length=5000)
    source: LeadSource = LeadSource.MANUAL
    is_test: bool = False
    # A live campaign hook of this organization (400 CAMPAIGN_NOT_FOUND otherwise).
    campaign_id: uuid.UUID | None = None
    # An active staff member of this organization (400 ASSIGNEE_NOT_STAFF otherwise).
    assignee_user_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _someone_to_contact(self) -> CreateLeadBody:
        if not (self.name or self.email or self.phone):
            raise ValueError("a lead needs at least a name, an email or a phone")
        return self


class TimelineEntry(OutModel):
    id: uuid.UUID
    kind: str
    type: str
    at: datetime
    actor_user_id: uuid.UUID | None = None
    from_status: str | None = None
    to_status: str | None = None
    payload: dict[str, Any] | None = None


class Lead(OutModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    name: str | None
    email: str | None
    phone: str | None
    locale: str | None
    note: str | None
    lost_reason: str | None
    source: str
    status: str
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    campaign_id: uuid.UUID | None
    assignee_user_id: uuid.UUID | None = assignee_from("assigned_to_user_id")
    is_test: bool
    archived_at: datetime | None
    trial_date: datetime | None
    next_action_at: datetime | None
    next_action_type: str | None
    next_action_note: str | None
    returned_at: datetime | None = None
    returned_from_status: str | None = None
    returned_via: str | None = None
    return_count: int = 0
    last_contacted_at: datetime | None = None
    first_human_response_at: datetime | None = None
    # Qualification, beside the pipeline stage (see GET …/leads/{leadId}/qualification).
    score: int | None = None
    score_model_version: int | None = None
    qualification_state: str | None = None
    status_changed_at: datetime
    created_at: datetime
    updated_at: datetime
    # Bumped by every write to the lead, its placements or its follow-up; send it back (If-Match or
    # `version`) with a person's write to be refused 409 LEAD_VERSION_CONFLICT instead of overwriting.
    version: int


def _schema_name(shape: Any) -> str:
    """The name a client would give a body of this type: Lead, LeadList, ConvertedOutcomeOrExistingMemberOutcome."""
    arguments = get_args(shape)
    if get_origin(shape) is list:
        return f"{_schema_name(arguments[0])}List"
    if get_origin(shape) in (Union, UnionType):
        return "Or".join(_schema_name(argument) for argument in arguments if argument is not type(None))
    return getattr(shape, "__name__", str(shape))


class _NamedByContent(OutModel):
    """Envelope[Lead] is a subclass named LeadEnvelope (pydantic would name it Envelope_Lead_ in the document,
    and a generated client after it): one class per content type, made on first use, the same one after."""

    suffix: ClassVar[str] = ""

    def __class_getitem__(cls, params: Any) -> Any:
        parametrized = super().__class_getitem__(params)  # type: ignore[misc]
        if parametrized.__pydantic_generic_metadata__["parameters"]:  # still generic (T inside T's definitions)
            return parametrized
        name = f"{_schema_name(params)}{cls.suffix}"
        named = _NAMED.get(name)
        if named is None:
            named = _NAMED[name] = type(name, (parametrized,), {"__module__": cls.__module__, "__doc__": cls.__doc__})
        elif parametrized not in named.__bases__:
            # two content types of one name (route modules load in any order, api.routing: the first would
            # silently serve both)
            raise TypeError(f"{name} is already the envelope of another {_schema_name(params)}")
        return named


_NAMED: dict[str, type[BaseModel]] = {}


class Envelope(_NamedByContent, Generic[T]):
    """`{"data": …}`: one thing."""

    suffix: ClassVar[str] = "Envelope"
    data: T


class ListEnvelope(_NamedByContent, Generic[T]):
    """`{"data": [...], "nextCursor": …}`: one page of a list."""

    suffix: ClassVar[str] = "Page"
    data: list[T]
    next_cursor: str | None


class ErrorDetail(BaseModel):
    """What went wrong: `code` is stable and machine-readable, `message` is for people and may change; some
    codes carry more fields (DUPLICATE_LEAD: existingLeadId, existingLeadName; VALIDATION_FAILED: details;
    LEAD_VERSION_CONFLICT: expectedVersion, currentVersion and `lead`, the lead as it is now)."""

    model_config = DEFERRED

    code: str = Field(
        description="Stable error code; each response lists the ones it can carry", examples=["LEAD_NOT_FOUND"]
    )
    message: str = Field(description="For people; may change", examples=["Lead not found."])


class Error(BaseModel):
    """Every error answer: `{"error": {"code", "message", …}}` (leadcrm.platform.errors)."""

    model_config = DEFERRED

    error: ErrorDetail


class GatewayUnauthorized(BaseModel):
    """API Gateway's own 401, before the API runs: its JWT authorizer found no token, or one it does not
    accept (bad signature, issuer, audience, expired). The body is API Gateway's, not ours."""

    model_config = DEFERRED

    message: str = Field(examples=["Unauthorized"])


class Unauthorized(RootModel[Error | GatewayUnauthorized]):
    """A 401: API Gateway's own body (GatewayUnauthorized), or ours (Error, UNAUTHENTICATED) for a token the
    gateway accepted without the claims the API needs."""

    model_config = DEFERRED
