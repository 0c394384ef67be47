"""Public capture (G1): `POST /leads/organization/{orgId}`, no authentication.

Whatever happened — a new lead, a duplicate, an unknown organization, one without lead management, a
replayed Idempotency-Key — the answer is the same `201 {"data": {"received": true}}`, byte for byte and
header for header: the endpoint must not tell a prober whether a person is a lead of an organization.
Only bad input (400), a reused Idempotency-Key with another body (422) and throttling (429) differ.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import error_response, json_response
from api.leads.schemas_capture import IDEMPOTENCY_KEY_PATTERN, PublicLeadBody, Received
from api.operations import Operations
from api.schemas import Envelope
from leadcrm.leads.capture import RECEIVED_BODY, RECEIVED_STATUS, PublicSubmission, capture_lead
from leadcrm.leads.rate_limits import RateLimited, count_capture
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import parse_uuid

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

CAPTURE_RESPONSES = {
    201: {"description": "Received (the same answer whether the lead is new, a duplicate, or not taken in)"},
    429: {"description": "Too many submissions from this client or for this organization; see Retry-After"},
}


@ops.post(
    "/leads/organization/<orgId>",
    "captureLead",
    "Submit an enquiry",
    (
        "A web form's enquiry. Always 201 `{\"data\": {\"received\": true}}` whether the lead is new, a duplicate "
        "(merged into the existing lead as a touch) or the organization unknown, so the answer tells nothing about who "
        "is a lead. Throttled per client IP and per organization."
    ),
    errors={429: ["RATE_LIMITED"]},
    ok=CAPTURE_RESPONSES,
)
def capture(
    orgId: str,  # the path names it as the API documents it
    body: Annotated[PublicLeadBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key", pattern=IDEMPOTENCY_KEY_PATTERN)] = None,
) -> Response[Envelope[Received]]:
    organization_id = parse_uuid(orgId)
    # Counted and committed first, on its own: a throttled request writes nothing else.
    count_capture(router.current_event.request_context.http.source_ip, organization_id)
    submission = PublicSubmission(
        received=body.model_dump(mode="json", by_alias=True, exclude_unset=True),
        **body.model_dump(include={"name", "email", "phone", "locale", "note", "campaign_ref", "minisite_event_id"}),
    )
    with UnitOfWork() as uow:
        capture_lead(uow, organization_id, submission, idempotency_key=idempotency_key)
        uow.commit()
    return json_response(RECEIVED_STATUS, RECEIVED_BODY)


@router.exception_handler(RateLimited)
def too_many_submissions(error: RateLimited) -> Response:
    """429 in the one error shape, with the seconds to the window's end in Retry-After."""
    response = error_response(error)
    response.headers["Retry-After"] = str(error.retry_after_seconds)
    return response
