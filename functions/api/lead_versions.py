"""Versioned lead writes at the API (issue 26): the version a person's write names, and the 409 that carries
the lead as it is now.

A write names the version it read as `If-Match` (`"7"`, `W/"7"` or `7`: what the lead's `ETag` said) or as
`version` in its body; both, when they disagree, are refused (400 LEAD_VERSION_AMBIGUOUS). Without either the
write is not checked (API clients, automations). The check itself is `leadcrm.leads.versions.require_version`,
under the lead's row lock, in the write's unit of work.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Header
from pydantic import BaseModel, Field

from api.http import json_response
from api.schemas import Lead
from leadcrm.leads.versions import LeadVersionConflict, require_version
from leadcrm.platform.bounds import INT32_MAX
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict

# The body's `version`: what the lead answer said.
LeadVersion = Annotated[int, Field(ge=1, le=INT32_MAX, strict=True)]
IfMatch = Annotated[str | None, Header(alias="if-match", max_length=64)]


def etag(version: int) -> str:
    return f'"{version}"'


def etag_header(lead: Mapping[str, Any]) -> dict[str, str]:
    return {"ETag": etag(lead["version"])}


def parse_if_match(raw: str | None) -> int | None:
    """The version an If-Match names; 400 INVALID_IF_MATCH for anything but one of our ETags."""
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("W/"):
        text = text[2:]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    if not text.isascii() or not text.isdigit() or len(text) > 10 or not 1 <= int(text) <= INT32_MAX:
        raise BadRequest('If-Match must be the ETag of a lead answer, such as "7".', code="INVALID_IF_MATCH")
    return int(text)


def expected_version(if_match: str | None, body_version: int | None) -> int | None:
    header_version = parse_if_match(if_match)
    if header_version is not None and body_version is not None and header_version != body_version:
        raise BadRequest("If-Match and version name different versions.", code="LEAD_VERSION_AMBIGUOUS")
    return header_version if header_version is not None else body_version


def lead_json(lead: Mapping[str, Any]) -> dict[str, Any]:
    return Lead.model_validate(lead).model_dump(mode="json", by_alias=True)


@contextmanager
def conflicts_with_lead() -> Iterator[None]:
    """Turns the domain's LeadVersionConflict into the API's 409, whose body carries the lead as it is now."""
    try:
        yield
    except LeadVersionConflict as stale:
        raise Conflict(stale.message, code=stale.code, **stale.extra, lead=lead_json(stale.lead)) from None


def check_version(
    uow: UnitOfWork, organization_id: uuid.UUID, lead_id: uuid.UUID, if_match: str | None, body_version: int | None
) -> None:
    """Refuses a stale write (409 LEAD_VERSION_CONFLICT with the current lead) and holds the lead's lock."""
    expected = expected_version(if_match, body_version)
    with conflicts_with_lead():
        require_version(uow.connection, organization_id, lead_id, expected)


def body_version(body: BaseModel | None) -> int | None:
    return getattr(body, "version", None) if body is not None else None


def lead_response(status: int, body: BaseModel, lead: Mapping[str, Any]) -> Response:
    """A single-lead answer with its ETag."""
    return json_response(status, body, etag_header(lead))
