"""A lead's consent ledger per channel (issue 7): `/organizations/{orgId}/leads/{leadId}/consent…` (staff).

A staff grant or revocation is a ledger row naming the staff member and a `consent_changed` entry on the
lead's timeline: re-granting a channel the lead revoked is possible, and never silent.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.conversations.schemas_conversations import ConsentBody, LeadConsent
from api.http import caller, entity_id
from api.operations import Operations
from api.schemas import Envelope
from leadcrm.conversations import consent
from leadcrm.directory.access import require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound

router = APIGatewayHttpRouter()
ops = Operations(router, "Conversations")

PATH = "/organizations/<orgId>/leads/<leadId>/consent"

@ops.get(
    PATH,
    "getLeadConsent",
    "A lead's consent per channel and its ledger",
    "`allowed` is false only for a revoked channel (nothing said = allowed). `history` is the "
    "append-only ledger, newest first (last 100).",
    errors={404: ["LEAD_NOT_FOUND"]},
    ok={200: {"description": "OK"}, 404: {"description": "LEAD_NOT_FOUND"}},
)
def read_consent(orgId: str, leadId: str) -> Envelope[LeadConsent]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = consent.consent_view(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[LeadConsent](data=LeadConsent.model_validate(view))


@ops.put(
    f"{PATH}/<channel>",
    "setLeadConsent",
    "Grant or revoke a lead's consent on a channel",
    "A grant needs its `legalBasis`. Recorded in the ledger with the caller as actor and on the "
    "lead's timeline (`consent_changed`).",
    errors={404: ["CONSENT_CHANNEL_NOT_FOUND", "LEAD_NOT_FOUND"]},
    ok={200: {"description": "OK"}, 404: {"description": "LEAD_NOT_FOUND, CONSENT_CHANNEL_NOT_FOUND"}},
)
def put_consent(orgId: str, leadId: str, channel: str, body: Annotated[ConsentBody, Body()]) -> Envelope[LeadConsent]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))  # first: a refused caller learns nothing of the input
        try:
            consent_channel = consent.ConsentChannel(channel)
        except ValueError:
            raise NotFound("No such consent channel.", code="CONSENT_CHANNEL_NOT_FOUND") from None
        change = consent.ConsentChange(
            channel=consent_channel,
            status=body.status,
            source=consent.STAFF_SOURCE,
            legal_basis=body.legal_basis,
            note=body.note or None,
        )
        view = consent.set_consent(uow.connection, actor, entity_id(leadId, "LEAD_NOT_FOUND"), change)
        uow.commit()
    return Envelope[LeadConsent](data=LeadConsent.model_validate(view))
