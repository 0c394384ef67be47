"""Request and response bodies of conversion: convert (G4), link-member, link candidates."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, EmailStr, Field

from api.lead_versions import LeadVersion
from api.schemas import CamelModel, OutModel

# A roster search (`?search=`): long enough to mean something, short enough to stay a search.
SEARCH_MIN_LENGTH = 2
SEARCH_MAX_LENGTH = 100


class ConvertRole(StrEnum):
    """The role the new membership gets; an owner is never made by converting a lead."""

    MEMBER = "member"
    COACH = "coach"
    ADMIN = "admin"


class ConvertBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"firstName": "Ana", "email": "ana.lopez@example.com"}]})
    first_name: str = Field(min_length=1, max_length=100)
    last_name: str | None = Field(default=None, max_length=100)
    email: EmailStr
    role: ConvertRole = ConvertRole.MEMBER
    version: LeadVersion | None = None  # the version read (or If-Match): stale is 409 LEAD_VERSION_CONFLICT


class LinkMemberBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"membershipId": "0190b6a2-7c3e-7012-9a51-3f0e8c2b1a12"}]}
    )
    membership_id: uuid.UUID
    version: LeadVersion | None = None


class ExistingMember(OutModel):
    membership_id: uuid.UUID
    first_name: str | None
    last_name: str | None


class ExistingMemberOutcome(OutModel):
    """The email is an active member's: nothing was written (link-member is the write)."""

    outcome: Literal["existing_member"] = "existing_member"
    existing_member: ExistingMember


class ConvertedOutcome(OutModel):
    outcome: Literal["converted"] = "converted"
    membership_id: uuid.UUID
    user_id: uuid.UUID
    role: str
    status: str


class AttachedOutcome(OutModel):
    outcome: Literal["attached"] = "attached"
    membership_id: uuid.UUID


class LinkCandidate(OutModel):
    membership_id: uuid.UUID
    user_id: uuid.UUID
    first_name: str | None
    last_name: str | None
    email: str | None
    phone: str | None
    matched_by: Literal["email", "phone", "search"]


class LinkCandidates(OutModel):
    candidates: list[LinkCandidate]
