"""Conversations (staff): threads, messages, send email, internal notes, read and assign (issue 7).

`/organizations/{orgId}/conversations…`, behind the same staff gate as the CRM. Another organization's
thread, lead or member answers 404 exactly like a random id. Sending answers 201 with the message as it
ended: `sent` with the provider's id, or `failed` with the error (the message is kept either way).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.conversations.schemas_conversations import (
    AssignConversationBody,
    Conversation,
    ConversationPatchBody,
    ConversationWithMessage,
    Message,
    NoteBody,
    OpenConversationBody,
    SendMessageBody,
)
from api.http import caller, entity_id, json_response
from api.idempotent import claim_send
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, AssigneeParam, CursorParam, PageSize, assignee_of
from api.schemas import Envelope, ListEnvelope
from leadcrm.conversations import queries, sending
from leadcrm.conversations import threads as service
from leadcrm.conversations.rules.messages import Channel, ConversationStatus, decode_keyset_cursor
from leadcrm.directory.access import require_staff
from leadcrm.directory.rules import Actor
from leadcrm.platform import idempotency
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import parse_uuid

router = APIGatewayHttpRouter()
ops = Operations(router, "Conversations")

BASE = "/organizations/<orgId>/conversations"
THREAD = f"{BASE}/<conversationId>"
NOT_FOUND = {404: {"description": "CONVERSATION_NOT_FOUND"}}
# A route that names responses documents its success status itself (the resolver adds 200 only otherwise).
OK = {200: {"description": "OK"}, **NOT_FOUND}
SEND_RESPONSES = {
    201: {"description": "Sent (or failed and kept: `status: failed`), or the first outcome replayed"},
    400: {"description": "CONTACT_HAS_NO_EMAIL, CHANNEL_NOT_SUPPORTED"},
    403: {"description": "LEAD_CHANNEL_BLOCKED (the lead revoked email), MEMBER_EMAIL_OPTED_OUT"},
    **NOT_FOUND,
}




def _with_message(thread: dict, message: dict | None) -> ConversationWithMessage:
    return ConversationWithMessage(
        conversation=Conversation.model_validate(thread),
        message=Message.model_validate(message) if message is not None else None,
    )


@ops.post(
    BASE,
    "openConversation",
    "Find or create a contact's thread, and send a first message",
    "Idempotent on (organization, channel, contact): the same lead or member always gets the same "
    "thread (201 when it was made, 200 when it existed). With `body`, the message is sent (201) through the "
    "gates of `POST …/messages`.",
    errors={
        400: [
            "ASSIGNEE_NOT_STAFF",
            "CHANNEL_NOT_SUPPORTED",
            "CONTACT_HAS_NO_EMAIL",
            "LEAD_NEEDS_CONTACT",
            "NO_STAGE_FOR_STATUS",
        ],
        403: ["LEAD_CHANNEL_BLOCKED", "MEMBER_EMAIL_OPTED_OUT"],
        404: ["CONVERSATION_NOT_FOUND", "LEAD_NOT_FOUND", "MEMBER_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["SEND_IN_PROGRESS"],
    },
    ok={
        **SEND_RESPONSES,
        200: {"description": "The thread existed (no body: nothing sent)"},
        404: {"description": "LEAD_NOT_FOUND, MEMBER_NOT_FOUND"},
    },
)
def open_conversation(
    orgId: str,
    body: Annotated[OpenConversationBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key")] = None,
) -> Response[Envelope[ConversationWithMessage]]:
    def thread_of(uow: UnitOfWork, actor: Actor) -> uuid.UUID:
        thread, _ = service.open_thread(
            uow.connection, actor, body.channel, lead_id=body.lead_id, membership_id=body.membership_id
        )
        return thread["id"]

    if body.body is not None:
        return _send(orgId, thread_of, body.body, body.subject, idempotency_key, body.model_dump(mode="json"))
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row, created = service.open_thread(
            uow.connection, actor, body.channel, lead_id=body.lead_id, membership_id=body.membership_id
        )
        thread = queries.get_thread(uow.connection, actor.organization_id, row["id"])
        uow.commit()
    return json_response(201 if created else 200, Envelope[ConversationWithMessage](data=_with_message(thread, None)))


@ops.get(
    BASE,
    "listConversations",
    "The inbox: threads, newest activity first",
    "Filters combine with AND: `status` (open/closed), `assignee` (`me`, `unassigned` or a user id), "
    "`unread=true`, `leadId`, `channel`. Keyset pages: pass `nextCursor` back as `cursor`.",
)
def inbox(
    orgId: str,
    status: Annotated[ConversationStatus | None, Query()] = None,
    assignee: AssigneeParam = None,
    unread: Annotated[bool, Query()] = False,
    leadId: Annotated[uuid.UUID | None, Query()] = None,
    channel: Annotated[Channel | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[Conversation]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))  # the gate before any rule of the request
        filters = queries.InboxFilters(
            status=status,
            assignee=assignee_of(assignee, actor),
            unread_only=unread,
            lead_id=leadId,
            channel=channel,
            limit=limit,
            after=decode_keyset_cursor(cursor) if cursor is not None else None,
        )
        page = queries.list_inbox(uow.connection, actor, filters)
    return ListEnvelope[Conversation](
        data=[Conversation.model_validate(item) for item in page.items], next_cursor=page.next_cursor
    )


@ops.get(
    THREAD,
    "getConversation",
    "One thread",
    "The thread with its contact, status, assignee and unread state.",
    errors={404: ["CONVERSATION_NOT_FOUND"]},
    ok=OK,
)
def read_conversation(orgId: str, conversationId: str) -> Envelope[Conversation]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        thread = queries.get_thread(
            uow.connection, actor.organization_id, entity_id(conversationId, "CONVERSATION_NOT_FOUND")
        )
    return Envelope[Conversation](data=Conversation.model_validate(thread))


@ops.patch(
    THREAD,
    "updateConversation",
    "Close or re-open a thread",
    "Closes or re-opens the thread; a closed thread re-opens by itself when the contact writes again.",
    errors={404: ["CONVERSATION_NOT_FOUND"]},
    ok=OK,
)
def patch_conversation(
    orgId: str, conversationId: str, body: Annotated[ConversationPatchBody, Body()]
) -> Envelope[Conversation]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        thread = service.set_status(
            uow.connection, actor, entity_id(conversationId, "CONVERSATION_NOT_FOUND"), body.status
        )
        uow.commit()
    return Envelope[Conversation](data=Conversation.model_validate(thread))


@ops.get(
    f"{THREAD}/messages",
    "listConversationMessages",
    "A thread's messages, newest first",
    "Outbound (queued, sent, failed, unknown: interrupted after it may have reached SES, never "
    "re-sent), inbound (received) and internal notes. Keyset pages. An outbound message's `deliveryStatus` is "
    "what SES said after it took the mail.",
    errors={404: ["CONVERSATION_NOT_FOUND"]},
    ok=OK,
)
def messages(
    orgId: str,
    conversationId: str,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[Message]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))  # the gate before any rule of the request
        after = decode_keyset_cursor(cursor) if cursor is not None else None
        page = queries.list_messages(
            uow.connection, actor.organization_id, entity_id(conversationId, "CONVERSATION_NOT_FOUND"), limit, after
        )
    return ListEnvelope[Message](data=[Message.model_validate(m) for m in page.items], next_cursor=page.next_cursor)


@ops.post(
    f"{THREAD}/messages",
    "sendConversationMessage",
    "Send an email in a thread",
    "Gated before anything is written: a lead that revoked email → 403 LEAD_CHANNEL_BLOCKED; a "
    "member with `notificationPrefs.newMessage.email: false` → 403 MEMBER_EMAIL_OPTED_OUT. The subject is "
    "stored by the first message (a blank one → a default in the contact's language) and reused with `Re:`; "
    "Reply-To is the thread's signed address; In-Reply-To/References name the contact's last message. A "
    "delivery failure answers 201 with `status: failed` and the error: the message is kept. With an "
    "`Idempotency-Key`, a retry answers the first outcome and never mails twice (409 SEND_IN_PROGRESS while "
    "the first is still being sent).",
    errors={
        400: [
            "ASSIGNEE_NOT_STAFF",
            "CHANNEL_NOT_SUPPORTED",
            "CONTACT_HAS_NO_EMAIL",
            "LEAD_NEEDS_CONTACT",
            "NO_STAGE_FOR_STATUS",
        ],
        403: ["LEAD_CHANNEL_BLOCKED", "MEMBER_EMAIL_OPTED_OUT"],
        404: ["CONVERSATION_NOT_FOUND", "LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["SEND_IN_PROGRESS"],
    },
    ok=SEND_RESPONSES,
)
def send_message(
    orgId: str,
    conversationId: str,
    body: Annotated[SendMessageBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key")] = None,
) -> Response[Envelope[ConversationWithMessage]]:
    # The id is judged in the unit of work, after the gate (a refused caller learns nothing of it)
    request = {**body.model_dump(mode="json"), "conversationId": str(parse_uuid(conversationId) or conversationId)}
    return _send(
        orgId,
        lambda uow, actor: entity_id(conversationId, "CONVERSATION_NOT_FOUND"),
        body.body,
        body.subject,
        idempotency_key,
        request,
    )


def _send(
    orgId: str,
    thread_of: Callable[[UnitOfWork, Actor], uuid.UUID],
    text: str,
    subject: str | None,
    idempotency_key: str | None,
    request: dict[str, Any],
) -> Response[Envelope[ConversationWithMessage]]:
    """The send's two transactions (see conversations.threads). With an Idempotency-Key, the key is claimed
    with the queued message and answered with the outcome: a retried request never mails twice."""
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        scope = f"conversations.send:{actor.organization_id}"
        replay = claim_send(uow, scope, idempotency_key, request)
        if replay is not None:
            return replay
        queued = sending.queue_email(uow.connection, actor, thread_of(uow, actor), text, subject)
        uow.commit()

    def remember(conn: Any, thread: dict[str, Any], message: dict[str, Any]) -> None:
        if idempotency_key is not None:
            answer = Envelope[ConversationWithMessage](data=_with_message(thread, message))
            stored = idempotency.StoredResponse(201, answer.model_dump(mode="json", by_alias=True))
            idempotency.remember(conn, scope, idempotency_key, stored)

    thread, message = sending.complete_send(actor, queued, on_recorded=remember)
    return json_response(201, Envelope[ConversationWithMessage](data=_with_message(thread, message)))


@ops.post(
    f"{THREAD}/notes",
    "addConversationNote",
    "Add an internal note",
    "Never sent and never gated.",
    errors={404: ["CONVERSATION_NOT_FOUND"]},
    ok={201: {"description": "The note"}, **NOT_FOUND},
)
def add_note(orgId: str, conversationId: str, body: Annotated[NoteBody, Body()]) -> Response[Envelope[Message]]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        conversation_id = entity_id(conversationId, "CONVERSATION_NOT_FOUND")
        message = service.add_note(uow.connection, actor, conversation_id, body.body)
        uow.commit()
    return json_response(201, Envelope[Message](data=Message.model_validate(message)))


@ops.post(
    f"{THREAD}/read",
    "markConversationRead",
    "Mark a thread read",
    "Marks every message of the thread read for the organization.",
    errors={404: ["CONVERSATION_NOT_FOUND"]},
    ok=OK,
)
def mark_read(orgId: str, conversationId: str) -> Envelope[Conversation]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        thread = service.mark_read(uow.connection, actor, entity_id(conversationId, "CONVERSATION_NOT_FOUND"))
        uow.commit()
    return Envelope[Conversation](data=Conversation.model_validate(thread))


@ops.put(
    f"{THREAD}/assignee",
    "assignConversation",
    "Assign a thread",
    "To an active member of the organization (400 ASSIGNEE_NOT_MEMBER otherwise), or null.",
    errors={400: ["ASSIGNEE_NOT_MEMBER"], 404: ["CONVERSATION_NOT_FOUND"]},
    ok={400: {"description": "ASSIGNEE_NOT_MEMBER"}, **OK},
)
def assign(orgId: str, conversationId: str, body: Annotated[AssignConversationBody, Body()]) -> Envelope[Conversation]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        thread = service.assign(
            uow.connection, actor, entity_id(conversationId, "CONVERSATION_NOT_FOUND"), body.assignee_user_id
        )
        uow.commit()
    return Envelope[Conversation](data=Conversation.model_validate(thread))
