"""Integration connections (owner/admin): Meta Lead Ads pages and WhatsApp Cloud numbers (issue 6).

Spec "The connect surface is flagged, the pipe is not": the dashboard hides the cards behind a rollout
key, but these routes answer on permission alone, so an organization that connected keeps ingesting.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.ingestion.schemas_ingestion import (
    Connection,
    ConnectMetaBody,
    ConnectWhatsAppBody,
    MetaCrmEvents,
    MetaCrmEventsBody,
)
from api.operations import MANAGER, Operations
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.ingestion.connections import connect, disconnect, list_connections
from leadcrm.ingestion.meta_crm import CrmSettings, get_settings, put_settings
from leadcrm.ingestion.rules.meta import META_PROVIDER, WHATSAPP_PROVIDER
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Ingestion")

CONNECTED = {200: {"description": "The organization's connection, token replaced"}, 201: {"description": "Connected"}}


def _connect(org_id: str, provider: str, external_id: str, token: str, name: str | None) -> Response:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONNECT_INTEGRATIONS)(caller(uow, router, org_id))
        result = connect(uow, actor, provider, external_id, token, name)
    return json_response(
        201 if result.created else 200, Envelope[Connection](data=Connection.model_validate(result.connection))
    )


def _index(org_id: str, provider: str) -> ListEnvelope[Connection]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONNECT_INTEGRATIONS)(caller(uow, router, org_id))
        rows = list_connections(uow.connection, actor.organization_id, provider)
    return ListEnvelope[Connection](data=[Connection.model_validate(r) for r in rows], next_cursor=None)


def _disconnect(org_id: str, provider: str, connection_id: str) -> Envelope[Connection]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONNECT_INTEGRATIONS)(caller(uow, router, org_id))
        row = disconnect(uow, actor, provider, entity_id(connection_id, "CONNECTION_NOT_FOUND"))
    return Envelope[Connection](data=Connection.model_validate(row))


@ops.post(
    "/organizations/<orgId>/integrations/meta",
    "connectMetaPage",
    "Connect a Meta Page (Lead Ads)",
    (
        "Connects a Meta Page so its Lead Ads forms arrive as leads: 201 when new, 200 when this organization's token "
        "is replaced; a Page connected by another organization is 409 CONNECTION_IN_USE."
    ),
    who=MANAGER,
    errors={409: ["CONNECTION_IN_USE"]},
    ok=CONNECTED,
)
def connect_meta(orgId: str, body: Annotated[ConnectMetaBody, Body()]) -> Response[Envelope[Connection]]:
    return _connect(orgId, META_PROVIDER, body.page_id, body.access_token, body.page_name)


@ops.get(
    "/organizations/<orgId>/integrations/meta",
    "listMetaConnections",
    "Meta Page connections",
    "The organization's connected Meta Pages (never their tokens).",
    who=MANAGER,
)
def meta_connections(orgId: str) -> ListEnvelope[Connection]:
    return _index(orgId, META_PROVIDER)


@ops.delete(
    "/organizations/<orgId>/integrations/meta/<connectionId>",
    "disconnectMetaPage",
    "Disconnect a Meta Page",
    "Disconnects the Page and deletes its stored token; leads it brought stay.",
    who=MANAGER,
    errors={404: ["CONNECTION_NOT_FOUND"]},
)
def disconnect_meta(orgId: str, connectionId: str) -> Envelope[Connection]:
    return _disconnect(orgId, META_PROVIDER, connectionId)


@ops.get(
    "/organizations/<orgId>/integrations/meta/<connectionId>/crm-events",
    "getMetaCrmEvents",
    "Conversions API for CRM settings of a Meta Page",
    (
        "Where this Page's leads' stage changes go as Meta CRM events: the dataset, on/off, hashed contact details "
        "allowed, the event name per stage. `configured: false` (everything off) before the first PUT."
    ),
    who=MANAGER,
    errors={404: ["CONNECTION_NOT_FOUND"]},
)
def meta_crm_events(orgId: str, connectionId: str) -> Envelope[MetaCrmEvents]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONNECT_INTEGRATIONS)(caller(uow, router, orgId))
        view = get_settings(uow.connection, actor.organization_id, entity_id(connectionId, "CONNECTION_NOT_FOUND"))
    return Envelope[MetaCrmEvents](data=MetaCrmEvents.model_validate(view))


@ops.put(
    "/organizations/<orgId>/integrations/meta/<connectionId>/crm-events",
    "putMetaCrmEvents",
    "Set the Conversions API for CRM settings of a Meta Page",
    (
        "Replaces the settings whole (idempotent: the same settings again change nothing). From then on every stage "
        "change of a lead from this Page's Lead Ads, the first included, goes to the dataset as a CRM event, sent "
        "with the Page's own token: never for an erased, pseudonymized or do-not-contact lead. A disconnected Page "
        "is 409 CONNECTION_NOT_ACTIVE; a mapped stage that is not the organization's 404 STAGE_NOT_FOUND."
    ),
    who=MANAGER,
    errors={404: ["CONNECTION_NOT_FOUND", "STAGE_NOT_FOUND"], 409: ["CONNECTION_NOT_ACTIVE"]},
)
def set_meta_crm_events(
    orgId: str, connectionId: str, body: Annotated[MetaCrmEventsBody, Body()]
) -> Envelope[MetaCrmEvents]:
    settings = CrmSettings(
        dataset_id=body.dataset_id,
        enabled=body.enabled,
        send_hashed_contact=body.send_hashed_contact,
        stage_event_names={str(stage): name for stage, name in body.stage_event_names.items()},
    )
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONNECT_INTEGRATIONS)(caller(uow, router, orgId))
        view = put_settings(uow, actor, entity_id(connectionId, "CONNECTION_NOT_FOUND"), settings)
    return Envelope[MetaCrmEvents](data=MetaCrmEvents.model_validate(view))


@ops.post(
    "/organizations/<orgId>/integrations/whatsapp",
    "connectWhatsAppNumber",
    "Connect a WhatsApp Cloud phone number",
    (
        "Connects a WhatsApp Cloud number so click-to-WhatsApp ads' chats arrive as leads: 201 when new, 200 when this "
        "organization's token is replaced; a number connected by another organization is 409 CONNECTION_IN_USE."
    ),
    who=MANAGER,
    errors={409: ["CONNECTION_IN_USE"]},
    ok=CONNECTED,
)
def connect_whatsapp(orgId: str, body: Annotated[ConnectWhatsAppBody, Body()]) -> Response[Envelope[Connection]]:
    return _connect(orgId, WHATSAPP_PROVIDER, body.phone_number_id, body.access_token, body.display_phone_number)


@ops.get(
    "/organizations/<orgId>/integrations/whatsapp",
    "listWhatsAppConnections",
    "WhatsApp Cloud connections",
    "The organization's connected WhatsApp Cloud numbers (never their tokens).",
    who=MANAGER,
)
def whatsapp_connections(orgId: str) -> ListEnvelope[Connection]:
    return _index(orgId, WHATSAPP_PROVIDER)


@ops.delete(
    "/organizations/<orgId>/integrations/whatsapp/<connectionId>",
    "disconnectWhatsAppNumber",
    "Disconnect a WhatsApp number",
    "Disconnects the number and deletes its stored token; leads it brought stay.",
    who=MANAGER,
    errors={404: ["CONNECTION_NOT_FOUND"]},
)
def disconnect_whatsapp(orgId: str, connectionId: str) -> Envelope[Connection]:
    return _disconnect(orgId, WHATSAPP_PROVIDER, connectionId)
