"""WhatsApp conversations (issue 24): send in a lead's WhatsApp thread, and the templates synced from the
organization's WhatsApp Business account.

A send is committed `queued` and handed to the graph_fetch function (outside the VPC, the only one that
reaches Graph), which queues Graph's answer back for ingestion: the message becomes `sent` with its wamid
(then `delivered`, `read` through status webhooks) or `failed`. The answer is 201 with the queued message;
`GET …/messages` shows it move on.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.conversations.schemas_conversations import (
    Conversation,
    ConversationWithMessage,
    Message,
    WhatsAppSendBody,
    WhatsAppTemplate,
    WhatsAppTemplateSync,
    WhatsAppTemplateSyncBody,
)
from api.fields import QueryText
from api.http import caller, entity_id, json_response
from api.idempotent import claim_send
from api.operations import MANAGER, Operations
from api.schemas import Envelope, ListEnvelope
from leadcrm.conversations import whatsapp
from leadcrm.conversations.queries import get_thread
from leadcrm.directory.access import require_staff
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.ingestion.whatsapp import sending_numbers
from leadcrm.platform import idempotency
from leadcrm.platform.adapters import ingestion_queue
from leadcrm.platform.adapters.aws import error_code
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict
from leadcrm.platform.ids import parse_uuid

router = APIGatewayHttpRouter()
ops = Operations(router, "Conversations")

THREAD = "/organizations/<orgId>/conversations/<conversationId>"
TEMPLATES = "/organizations/<orgId>/whatsapp-templates"
SEND_KIND, SYNC_KIND = "whatsapp.send", "whatsapp.templates_sync"


@ops.post(
    f"{THREAD}/whatsapp-messages",
    "sendWhatsAppMessage",
    "Send a WhatsApp message in a lead's WhatsApp thread",
    "Through the organization's connected number (the one the lead last wrote to, else the first connected; "
    "none: 409 WHATSAPP_NOT_CONNECTED). Gated before anything is written: a lead that revoked WhatsApp → 403 "
    "LEAD_CHANNEL_BLOCKED. `text` is allowed only inside the 24-hour customer-service window after the lead's "
    "last inbound message, else 409 WHATSAPP_WINDOW_CLOSED with `closedAt` (null: the lead never wrote); a "
    "`template` must be an approved synced one (404 TEMPLATE_NOT_FOUND, 409 TEMPLATE_NOT_APPROVED) with as many "
    "parameters as its body takes (400 TEMPLATE_PARAMETERS_MISMATCH). Answers 201 with the message `queued` "
    "(or `failed` when it could not be handed on); it becomes `sent` with its wamid, then `delivered` and `read` "
    "(`deliveryStatus`). With an `Idempotency-Key`, a retry answers the first outcome and never sends twice.",
    errors={
        400: ["CHANNEL_NOT_SUPPORTED", "CONTACT_HAS_NO_PHONE", "TEMPLATE_PARAMETERS_MISMATCH"],
        403: ["LEAD_CHANNEL_BLOCKED"],
        404: ["CONVERSATION_NOT_FOUND", "TEMPLATE_NOT_FOUND"],
        409: ["SEND_IN_PROGRESS", "TEMPLATE_NOT_APPROVED", "WHATSAPP_NOT_CONNECTED", "WHATSAPP_WINDOW_CLOSED"],
    },
    ok={
        201: {"description": "Queued for Graph (or failed and kept), or the first outcome replayed"},
        404: {"description": "CONVERSATION_NOT_FOUND, TEMPLATE_NOT_FOUND"},
    },
)
def send_whatsapp(
    orgId: str,
    conversationId: str,
    body: Annotated[WhatsAppSendBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key")] = None,
) -> Response[Envelope[ConversationWithMessage]]:
    request = {**body.model_dump(mode="json"), "conversationId": str(parse_uuid(conversationId) or conversationId)}
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        scope = f"conversations.whatsapp:{actor.organization_id}"
        replay = claim_send(uow, scope, idempotency_key, request)
        if replay is not None:
            return replay
        conversation_id = entity_id(conversationId, "CONVERSATION_NOT_FOUND")
        template = (
            whatsapp.TemplateChoice(body.template.name, body.template.language, tuple(body.template.parameters))
            if body.template is not None
            else None
        )
        queued = whatsapp.queue_message(
            uow.connection,
            actor,
            conversation_id,
            text=body.text,
            template=template,
            numbers=sending_numbers(uow.connection, actor.organization_id),
        )
        uow.commit()
    failure = None
    try:
        ingestion_queue.to_graph_fetch(SEND_KIND, {"send": queued.send})
    except Exception as error:  # the queue refused it: the message is kept, failed, and shown as such
        failure = f"{error_code(error)}: the send could not be queued"
    with UnitOfWork() as uow:
        message_id = queued.message["id"]
        message = (
            whatsapp.fail_queued(uow.connection, message_id, failure)
            if failure
            else whatsapp.read_message(uow.connection, message_id)
        )
        thread = get_thread(uow.connection, actor.organization_id, queued.conversation_id)
        answer = Envelope[ConversationWithMessage](data=_with_message(thread, message))
        if idempotency_key is not None:
            stored = idempotency.StoredResponse(201, answer.model_dump(mode="json", by_alias=True))
            idempotency.remember(uow.connection, scope, idempotency_key, stored)
        uow.commit()
    return json_response(201, answer)


def _with_message(thread: dict[str, Any], message: dict[str, Any]) -> ConversationWithMessage:
    return ConversationWithMessage(
        conversation=Conversation.model_validate(thread), message=Message.model_validate(message)
    )


@ops.get(
    TEMPLATES,
    "listWhatsAppTemplates",
    "The WhatsApp message templates synced from the WhatsApp Business account",
    "What a send outside the 24-hour window picks from: name, language, status (only `APPROVED` can be sent), "
    "category, components and how many body parameters it takes; `status` filters. By name and language; "
    "one page (`nextCursor` is always null).",
)
def list_templates(
    orgId: str, status: Annotated[QueryText | None, Query(min_length=1, max_length=40)] = None
) -> ListEnvelope[WhatsAppTemplate]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = whatsapp.list_templates(uow.connection, actor.organization_id, status)
    return ListEnvelope[WhatsAppTemplate](data=[WhatsAppTemplate.model_validate(r) for r in rows], next_cursor=None)


@ops.post(
    f"{TEMPLATES}/sync",
    "syncWhatsAppTemplates",
    "Sync the templates of a WhatsApp Business account",
    "Queues a read of the account's message templates from Graph with the organization's connected number's "
    "token (none: 409 WHATSAPP_NOT_CONNECTED); when it is done they replace the account's synced templates. "
    "Answers 202. Syncing again is harmless.",
    who=MANAGER,
    errors={409: ["WHATSAPP_NOT_CONNECTED"]},
    ok={202: {"description": "The sync is queued"}},
)
def sync_templates(
    orgId: str, body: Annotated[WhatsAppTemplateSyncBody, Body()]
) -> Response[Envelope[WhatsAppTemplateSync]]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONNECT_INTEGRATIONS)(caller(uow, router, orgId))
        numbers = sending_numbers(uow.connection, actor.organization_id)
    if not numbers:
        raise Conflict("The organization has no connected WhatsApp number.", code="WHATSAPP_NOT_CONNECTED")
    ingestion_queue.to_graph_fetch(
        SYNC_KIND,
        {
            "organizationId": str(actor.organization_id),
            "businessAccountId": body.business_account_id,
            "phoneNumberId": numbers[0],
        },
    )
    sync = WhatsAppTemplateSync(business_account_id=body.business_account_id, phone_number_id=numbers[0], queued=True)
    return json_response(202, Envelope[WhatsAppTemplateSync](data=sync))
