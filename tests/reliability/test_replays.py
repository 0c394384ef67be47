"""Every idempotent entry, delivered 3 times in a row and 10 times at once, has one effect.

An entry is a row of ENTRIES: `prepare()` makes fresh state and returns a `Delivery` whose `deliver()` is one
delivery exactly as AWS makes it (the same HTTP request with the same Idempotency-Key; the same SQS record
redelivered) and whose `effect()` counts what the entry changes. A first delivery must change the counts
(so the row tests something); more deliveries, in a row or at once in separate processes (one Lambda
container each), must leave them exactly where one delivery put them.

Adding an entry is adding a row. Entries reach the code as AWS does: HTTP requests through the API
handler; Meta and WhatsApp webhooks signed to the receiver and drained stage by stage (graph_fetch, then
ingestion: `meta_delivery`); SES mail as a new S3 object and its S3 event through SQS to ingestion;
platform and domain events as the SQS record the bus put on the task_lifecycle queue.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select, text

from infra.local.graph import LocalGraph
from leadcrm.leads.tables import leads, minisite_events
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.db.engine import get_engine
from tests.support.api import ApiResponse, call_api
from tests.support.aws import Queue
from tests.support.capture_helpers import capture, lead_count, receipts_of
from tests.support.conversion_helpers import insert_lead as insert_person_lead
from tests.support.conversion_helpers import make_person, unique_email
from tests.support.events import eventbridge_envelope, lambda_context, sqs_event, sqs_record, sqs_record_from_message
from tests.support.reliability_helpers import OrgWorld, in_containers, in_days, make_world

IN_A_ROW = 3
AT_ONCE = 10


@dataclass(frozen=True)
class Delivery:
    deliver: Callable[[], Any]
    effect: Callable[[], tuple[int, ...]]


@dataclass(frozen=True)
class Stage:
    """What the stack provides an entry: the task_lifecycle queue behind the bus, the ingestion queue, and
    Meta's Graph stand-in (served over HTTP from this process, so forked containers reach it too)."""

    lifecycle: Queue
    ingestion: Queue
    graph_fetch: Queue
    graph: LocalGraph
    meta_events: Queue | None = None


@dataclass(frozen=True)
class Entry:
    name: str
    prepare: Callable[[Stage], Delivery]

    def __str__(self) -> str:
        return self.name


def _count(query: str, **params: Any) -> int:
    with get_engine().connect() as conn:
        return conn.execute(text(query), params).scalar_one()


def _accepted(response: ApiResponse, *statuses: int) -> ApiResponse:
    assert response.status in statuses, f"{response.status} {response.body}"
    return response


# -- HTTP entries with an Idempotency-Key ---------------------------------------------------------------------


def _public_capture(_: Stage) -> Delivery:
    world, key = make_world(), str(uuid.uuid4())
    body = {"name": "Dana Replay", "email": f"dana.{uuid.uuid4().hex[:8]}@example.com"}

    def deliver() -> int:
        return _accepted(capture(world.id, body, headers={"idempotency-key": key}), 201).status

    # Without the key a repeat would add a duplicate receipt on the lead: counting receipts proves the key.
    return Delivery(deliver, lambda: (lead_count(world.id), len(receipts_of(world.id))))


def _staff_create(_: Stage) -> Delivery:
    world, key = make_world(), str(uuid.uuid4())
    path = f"/organizations/{world.id}/leads"

    def deliver() -> int:
        body = {"name": "Ada Replay"}  # a name alone is no duplicate: without the key each call creates
        return _accepted(
            call_api("POST", path, sub=world.owner, body=body, headers={"idempotency-key": key}), 201
        ).status

    return Delivery(deliver, lambda: (lead_count(world.id),))


def _pipeline_create(_: Stage) -> Delivery:
    world, key = make_world(), str(uuid.uuid4())
    path = f"/organizations/{world.id}/pipelines"

    def deliver() -> int:
        body = {"name": "Replayed pipeline"}
        return _accepted(
            call_api("POST", path, sub=world.owner, body=body, headers={"idempotency-key": key}), 201
        ).status

    def effect() -> tuple[int, ...]:
        with get_engine().connect() as conn:
            return (conn.execute(select(func.count()).where(pipelines.c.organization_id == world.id)).scalar_one(),)

    return Delivery(deliver, effect)


def _stage_add(_: Stage) -> Delivery:
    world, key = make_world(), str(uuid.uuid4())
    pipeline_id = world.pipeline()
    path = f"/organizations/{world.id}/pipelines/{pipeline_id}/stages"

    def deliver() -> int:
        body = {"name": "Replayed stage", "category": "contacted"}
        return _accepted(
            call_api("POST", path, sub=world.owner, body=body, headers={"idempotency-key": key}), 201
        ).status

    def effect() -> tuple[int, ...]:
        with get_engine().connect() as conn:
            count = select(func.count()).where(pipeline_stages.c.pipeline_id == uuid.UUID(pipeline_id))
            return (conn.execute(count).scalar_one(),)

    return Delivery(deliver, effect)


def _sales_result(_: Stage) -> Delivery:
    world, key = make_world(), str(uuid.uuid4())
    lead_id = world.lead()
    path = f"/organizations/{world.id}/sales-workspace/leads/{lead_id}/results"
    body = {"version": 1, "outcome": "no_answer", "note": "rang", "followUp": {"at": in_days(1)}}

    def deliver() -> int:
        # Without the key the second delivery would be a stale version (409), never a second touch; the
        # key makes it the first answer.
        return _accepted(
            call_api("POST", path, sub=world.owner, body=body, headers={"idempotency-key": key}), 200
        ).status

    def effect() -> tuple[int, ...]:
        version = _count("SELECT version FROM leads WHERE id = :l", l=lead_id)
        return (_activities(lead_id, "call_logged"), _tasks(lead_id, "pending"), version)

    return Delivery(deliver, effect)


# -- task_lifecycle: SQS redelivery of the same record ---------------------------------------------------------


def _to_task_lifecycle(record: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    def deliver() -> dict[str, Any]:
        from task_lifecycle.handler import lambda_handler

        result = lambda_handler(sqs_event(record), lambda_context("leadcrm-task-lifecycle"))
        assert result == {"batchItemFailures": []}, result
        return result

    return deliver


def _published(queue: Queue, detail_type: str, aggregate_id: str) -> dict[str, Any]:
    """The record the bus put on the task_lifecycle queue for this event, as Lambda would receive it."""
    for message in queue.receive_all():
        envelope = json.loads(message["Body"])
        if envelope["detail-type"] == detail_type and envelope["detail"]["aggregateId"] == aggregate_id:
            return sqs_record_from_message(message, queue_name=queue.name)
    raise AssertionError(f"no {detail_type} for {aggregate_id} on the queue")


def _platform_record(detail_type: str, detail: dict[str, Any]) -> dict[str, Any]:
    envelope = eventbridge_envelope(detail_type, detail, source="platform.local")
    return sqs_record(envelope, queue_name="leadcrm-task-lifecycle")


def _activities(lead_id: str, kind: str | None = None) -> int:
    query = "SELECT count(*) FROM lead_activity_events WHERE lead_id = :l"
    return _count(query + (" AND type = :t" if kind else ""), l=lead_id, **({"t": kind} if kind else {}))


def _tasks(lead_id: str, status: str) -> int:
    return _count("SELECT count(*) FROM tasks WHERE linked_lead_id = :l AND status = :s", l=lead_id, s=status)


def _lead_created(stage: Stage) -> Delivery:
    world = make_world()
    lead_id = world.lead()
    record = _published(stage.lifecycle, "lead.created", lead_id)
    return Delivery(_to_task_lifecycle(record), lambda: (_activities(lead_id, "lead_created"),))


def _lead_lost(stage: Stage) -> Delivery:
    world = make_world()
    lead_id = world.lead()
    world.api("POST", "/tasks", body={"title": "Call Dana", "type": "contact_lead", "linkedLeadId": lead_id})
    world.api("PATCH", f"/leads/{lead_id}", body={"status": "lost", "lostReason": "not_interested"})
    record = _published(stage.lifecycle, "lead.status_changed", lead_id)
    return Delivery(_to_task_lifecycle(record), lambda: (_tasks(lead_id, "cancelled"), _activities(lead_id)))


def _lead_returned(stage: Stage) -> Delivery:
    world = make_world()
    lead_id = world.lead()
    world.api("PATCH", f"/leads/{lead_id}", body={"status": "lost", "lostReason": "not_interested"})
    for message in stage.lifecycle.receive_all():  # the lost move's events run first, as they would in AWS
        _to_task_lifecycle(sqs_record_from_message(message, queue_name=stage.lifecycle.name))()
    world.api("POST", f"/leads/{lead_id}/reopen", body={})
    record = _published(stage.lifecycle, "lead.returned", lead_id)
    return Delivery(
        _to_task_lifecycle(record),
        lambda: (_tasks(lead_id, "pending") + _tasks(lead_id, "in_progress"), _activities(lead_id)),
    )


def _minisite_event(detail_type: str) -> Callable[[Stage], Delivery]:
    def prepare(_: Stage) -> Delivery:
        world, event_id = make_world(), uuid.uuid4()
        detail = {"organizationId": str(world.id), "eventId": str(event_id), "title": "Open day"}

        def effect() -> tuple[int, ...]:
            with get_engine().connect() as conn:
                row = conn.execute(select(minisite_events).where(minisite_events.c.id == event_id)).mappings().first()
            return (0,) if row is None else (1, int(row["archived_at"] is not None), int(row["updated_at"].timestamp()))

        # updated_at moves on every write: the same second proves a redelivery wrote nothing more
        return Delivery(_to_task_lifecycle(_platform_record(detail_type, detail)), effect)

    return prepare


def _self_signup(_: Stage) -> Delivery:
    world, email = make_world(), unique_email("signup")
    lead_id = insert_person_lead(world.id, name="Dana", email=email)
    person = make_person(world.id, first_name="Dana", last_name="Cohen", email=email)
    detail = {"organizationId": str(world.id), "userId": str(person.user_id), "membershipId": str(person.membership_id)}

    def effect() -> tuple[int, ...]:
        linked = select(func.count()).where(leads.c.id == lead_id, leads.c.converted_membership_id.isnot(None))
        with get_engine().connect() as conn:
            linked_count = conn.execute(linked).scalar_one()
        return (linked_count, _activities(str(lead_id)))

    return Delivery(_to_task_lifecycle(_platform_record("membership.self_signup", detail)), effect)


def _entitlement_activated(_: Stage) -> Delivery:
    world, email = make_world(), unique_email("buyer")
    lead_id = insert_person_lead(world.id, name="Dana", email=email)
    person = make_person(None, first_name="Dana", last_name="Cohen", email=email)
    detail = {
        "organizationId": str(world.id),
        "userId": str(person.user_id),
        "entitlementId": str(uuid.uuid4()),
        "courseId": str(uuid.uuid4()),
        "courseName": "Pilates 101",
        "transition": "pending_to_active",
    }
    return Delivery(
        _to_task_lifecycle(_platform_record("entitlement.activated", detail)),
        lambda: (
            _count("SELECT count(*) FROM lead_tag_assignments WHERE lead_id = :l", l=lead_id),
            _activities(str(lead_id)),
        ),
    )


def _join_released(_: Stage) -> Delivery:
    world, email = make_world(), unique_email("released")
    lead_id = world.lead(email=email)
    world.api("PATCH", f"/leads/{lead_id}", body={"status": "lost", "lostReason": "not_interested"})
    person = make_person(None, first_name="Dana", last_name="Cohen", email=email)
    detail = {"organizationId": str(world.id), "userId": str(person.user_id), "membershipId": str(uuid.uuid4())}
    return Delivery(
        _to_task_lifecycle(_platform_record("membership.join_released", detail)),
        lambda: (
            _count("SELECT return_count FROM leads WHERE id = :l", l=lead_id),
            _count("SELECT count(*) FROM outbox WHERE aggregate_id = :l AND type = 'lead.returned'", l=lead_id),
            _activities(lead_id),
        ),
    )


# -- webhooks → ingestion (the path the Meta / WhatsApp processors will hang off) -----------------------------


def meta_delivery(stage: Stage, body: dict[str, Any], path: str = "/webhooks/meta/leadgen") -> Callable[[], int]:
    """One delivery of a signed Meta notification to the receiver, then what it enqueued drained stage by
    stage as the event source mappings would: graph_fetch (a leadgen: read from Graph outside the VPC,
    queued as `meta.lead`), then the ingestion consumer. Returns how many messages the stages took."""
    import hashlib
    import hmac

    from tests.integration.conftest import META_APP_SECRET
    from tests.support.events import function_url_event

    raw = json.dumps(body).encode()
    signature = "sha256=" + hmac.new(META_APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()

    def drain(queue: Queue, handler: Callable[[dict[str, Any], Any], dict[str, Any]], function: str) -> int:
        records = [sqs_record_from_message(m, queue_name=queue.name) for m in queue.receive_all()]
        if records:
            result = handler(sqs_event(*records), lambda_context(function))
            assert result == {"batchItemFailures": []}, result
        return len(records)

    def deliver() -> int:
        from graph_fetch.handler import lambda_handler as fetch
        from ingestion.handler import lambda_handler as ingest
        from webhooks.handler import lambda_handler as receive

        answer = receive(
            function_url_event("POST", path, body=raw, headers={"x-hub-signature-256": signature}),
            lambda_context("leadcrm-webhooks"),
        )
        assert answer["statusCode"] == 200, answer
        taken = drain(stage.graph_fetch, fetch, "leadcrm-graph-fetch")
        return taken + drain(stage.ingestion, ingest, "leadcrm-ingestion")

    return deliver


# -- ingestion: Meta, WhatsApp, SES inbound mail -------------------------------------------------------------


# -- task_lifecycle: the platform's directory events (organization.*, user.*, membership.*) -------------------


def _written(table: str, row_id: uuid.UUID, condition: str = "true") -> tuple[int, ...]:
    """Whether the row exists and meets `condition`, and when it was last written (µs: any rewrite shows)."""
    with get_engine().connect() as conn:
        row = conn.execute(
            text(f"SELECT ({condition}) AS met, updated_at FROM {table} WHERE id = :i"), {"i": row_id}
        ).first()
    return (0, 0) if row is None else (int(row.met), int(row.updated_at.timestamp() * 1_000_000))


def _directory_event(detail_type: str) -> Callable[[Stage], Delivery]:
    """One platform directory event: its row is written once, however often and however concurrently told."""
    from tests.support.directory_sync_helpers import (
        membership_deletion,
        membership_detail,
        organization_detail,
        user_detail,
    )

    def prepare(_: Stage) -> Delivery:
        world = make_world()
        fresh = uuid.uuid4()
        coach = (world.membership_ids["coach"], world.id, world.user_ids["coach"])
        detail, effect = {
            "organization.created": (organization_detail(fresh), lambda: _written("organizations", fresh)),
            "organization.updated": (
                organization_detail(world.id, name="Renamed"),
                lambda: _written("organizations", world.id, "name = 'Renamed'"),
            ),
            "organization.deleted": (
                {"organizationId": str(world.id), "deletedAt": "2026-12-01T09:00:00Z"},
                lambda: _written("organizations", world.id, "deleted_at IS NOT NULL"),
            ),
            "user.created": (user_detail(fresh, email=unique_email("platform")), lambda: _written("users", fresh)),
            "user.updated": (
                user_detail(world.user_ids["member"], first_name="Renamed"),
                lambda: _written("users", world.user_ids["member"], "first_name = 'Renamed'"),
            ),
            "membership.created": (
                membership_detail(fresh, world.id, make_person(None).user_id),
                lambda: _written("memberships", fresh),
            ),
            "membership.updated": (
                membership_detail(*coach, role="member"),
                lambda: (*_written("memberships", coach[0], "role = 'member'"), *_org_counts(world.id, "outbox")),
            ),
            "membership.deleted": (
                membership_deletion(world.membership_ids["member"], world.id, 0),
                lambda: _written("memberships", world.membership_ids["member"], "deleted_at IS NOT NULL"),
            ),
        }[detail_type]
        return Delivery(_to_task_lifecycle(_platform_record(detail_type, detail)), effect)

    return prepare


def _org_counts(org_id: uuid.UUID, *tables: str) -> tuple[int, ...]:
    return tuple(_count(f"SELECT count(*) FROM {t} WHERE organization_id = :o", o=org_id) for t in tables)


def _meta_leadgen(stage: Stage) -> Delivery:
    """Meta retries a webhook it did not see answered (and SQS redelivers): one leadgen_id, one lead."""
    from tests.support.ingestion_helpers import fresh_id, graph_lead, leadgen_payload

    world, page_id, leadgen_id = make_world(), fresh_id(), fresh_id()
    world.api("POST", "/integrations/meta", body={"pageId": page_id, "accessToken": "page-token-1234"})
    stage.graph.register(graph_lead(leadgen_id, email=f"{leadgen_id}@example.com", phone=None))
    deliver = meta_delivery(stage, leadgen_payload(page_id, leadgen_id))
    return Delivery(
        deliver, lambda: _org_counts(world.id, "leads", "lead_attributions", "lead_receipts", "ingested_events")
    )


def _whatsapp_ctwa(stage: Stage) -> Delivery:
    """A click-to-WhatsApp message redelivered: one ctwa_clid, one lead."""
    from tests.support.ingestion_helpers import ctwa_referral, fresh_id, whatsapp_payload

    world, number_id = make_world(), fresh_id()
    world.api("POST", "/integrations/whatsapp", body={"phoneNumberId": number_id, "accessToken": "waba-token-1234"})
    payload = whatsapp_payload(
        number_id,
        wamid=f"wamid.{fresh_id()}",
        wa_id=f"4477{fresh_id()[:8]}",
        referral=ctwa_referral(ctwa_clid=fresh_id()),
    )
    deliver = meta_delivery(stage, payload, path="/webhooks/whatsapp")
    return Delivery(
        deliver, lambda: _org_counts(world.id, "leads", "lead_attributions", "lead_receipts", "ingested_events")
    )


def _inbound_mail(raw: bytes) -> Callable[[], int]:
    """SES stores every receipt of a message under a key of its own (a retried delivery is a new object with
    the same Message-ID) and S3's event reaches the ingestion function through SQS."""

    def deliver() -> int:
        from tests.support.conversations_helpers import deliver_inbound

        result = deliver_inbound(raw)
        assert result == {"batchItemFailures": []}, result
        return 1

    return deliver


def _ses_reply(_: Stage) -> Delivery:
    from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, reply_address
    from leadcrm.platform import mail_keys
    from tests.support.conversations_helpers import MAIL_DOMAIN, fixture_mail

    world = make_world()
    conversation_id = world.conversation()
    target = AddressTarget(AddressKind.CONVERSATION, uuid.UUID(conversation_id))
    address = reply_address(mail_keys.signing_key(), target, MAIL_DOMAIN)
    raw = fixture_mail("gmail_reply_multipart_qp.eml", address)

    def effect() -> tuple[int, ...]:
        return (
            _count(
                "SELECT count(*) FROM conversation_messages WHERE conversation_id = :c AND direction = 'inbound'",
                c=conversation_id,
            ),
            _count("SELECT unread_count FROM conversations WHERE id = :c", c=conversation_id),
            _count(
                "SELECT count(*) FROM outbox WHERE aggregate_id = :c AND type = 'conversation.inbound_received'",
                c=conversation_id,
            ),
        )

    return Delivery(_inbound_mail(raw), effect)


def _support_mail(_: Stage) -> Delivery:
    from tests.support.conversations_helpers import fixture_mail

    world = make_world()
    address = world.api("GET", "/ticket-settings").data["supportAddress"]
    raw = fixture_mail("gmail_reply_multipart_qp.eml", address)
    return Delivery(
        _inbound_mail(raw),
        lambda: (
            *_org_counts(world.id, "tickets", "ticket_events", "ticket_messages"),
            _org_counts(world.id, "conversation_messages")[0] + 1,
        ),
    )


# -- staff creates with an Idempotency-Key (deals, tickets, conversation sends) -----------------------------


def _keyed_post(world: OrgWorld, path: str, body: dict[str, Any], *statuses: int) -> Callable[[], int]:
    key = str(uuid.uuid4())

    def deliver() -> int:
        response = call_api(
            "POST", f"/organizations/{world.id}{path}", sub=world.owner, body=body, headers={"idempotency-key": key}
        )
        return _accepted(response, *statuses).status

    return deliver


def _deal_create(_: Stage) -> Delivery:
    world = make_world()
    body = {
        "title": "Annual plan",
        "offerType": "plan",
        "valueMinor": 120_000,
        "currency": "EUR",
        "expectedCloseDate": "2027-01-15",
        "leadId": world.lead(),
    }
    return Delivery(_keyed_post(world, "/deals", body, 201), lambda: _org_counts(world.id, "deals", "deal_history"))


def _ticket_create(_: Stage) -> Delivery:
    world = make_world()
    body = {"subject": "Cannot book", "leadId": world.lead()}
    return Delivery(
        _keyed_post(world, "/tickets", body, 201), lambda: _org_counts(world.id, "tickets", "ticket_events")
    )


def _assignment_rule_create(_: Stage) -> Delivery:
    world = make_world()
    body = {"name": "Coach takes all", "strategy": "fixed", "userIds": [str(world.user_ids["coach"])]}
    return Delivery(
        _keyed_post(world, "/lead-assignment-rules", body, 201), lambda: _org_counts(world.id, "lead_assignment_rules")
    )


def _conversation_send(_: Stage) -> Delivery:
    """A send mails once: a concurrent retry of the same key is told the send is in progress (409)."""
    world = make_world()
    conversation_id = world.conversation()
    body = {"body": "Shall we book Thursday?"}
    return Delivery(
        _keyed_post(world, f"/conversations/{conversation_id}/messages", body, 201, 409),
        lambda: (
            _count(
                "SELECT count(*) FROM conversation_messages WHERE conversation_id = :c AND direction = 'outbound'",
                c=conversation_id,
            ),
        ),
    )


def _graph_fetch_requests(stage: Stage) -> int:
    from tests.support.aws import aws_client

    attributes = aws_client("sqs").get_queue_attributes(
        QueueUrl=stage.graph_fetch.url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def _whatsapp_send(stage: Stage) -> Delivery:
    """A WhatsApp send is queued for graph_fetch once: one message, one request on the graph-fetch queue."""
    world = make_world()
    conversation_id = world.whatsapp_thread()
    body = {"text": "Shall we book Thursday?"}
    return Delivery(
        _keyed_post(world, f"/conversations/{conversation_id}/whatsapp-messages", body, 201, 409),
        lambda: (
            _count(
                "SELECT count(*) FROM conversation_messages WHERE conversation_id = :c AND direction = 'outbound'",
                c=conversation_id,
            ),
            _graph_fetch_requests(stage),
        ),
    )


def _whatsapp_inbound(stage: Stage) -> Delivery:
    """Meta redelivers an inbound message: one wamid, one message, one unread, one event."""
    from tests.support.ingestion_helpers import fresh_id, whatsapp_payload

    world, number_id, wa_id = make_world(), fresh_id(), f"4477{fresh_id()[:8]}"
    world.api("POST", "/integrations/whatsapp", body={"phoneNumberId": number_id, "accessToken": "waba-token-1234"})
    world.lead(phone=f"+{wa_id}")
    deliver = meta_delivery(
        stage, whatsapp_payload(number_id, wamid=f"wamid.{fresh_id()}", wa_id=wa_id), path="/webhooks/whatsapp"
    )
    return Delivery(
        deliver,
        lambda: (
            *_org_counts(world.id, "conversations", "conversation_messages"),
            _count("SELECT coalesce(sum(unread_count), 0) FROM conversations WHERE organization_id = :o", o=world.id),
            _count(
                "SELECT count(*) FROM outbox WHERE organization_id = :o AND type = 'conversation.inbound_received'",
                o=world.id,
            ),
        ),
    )


def _whatsapp_status(stage: Stage) -> Delivery:
    """Meta redelivers a status webhook: the status is kept once and the message moves once."""
    from leadcrm.ingestion.whatsapp import record_send_outcome
    from tests.support.aws import aws_client
    from tests.support.whatsapp_helpers import status_payload

    world = make_world()
    conversation_id = world.whatsapp_thread()
    sent = world.api("POST", f"/conversations/{conversation_id}/whatsapp-messages", body={"text": "Hi"}).data
    sqs = aws_client("sqs")  # graph_fetch's part is played below: its request is taken off the queue
    for message in stage.graph_fetch.receive_all():
        sqs.delete_message(QueueUrl=stage.graph_fetch.url, ReceiptHandle=message["ReceiptHandle"])
    wamid = f"wamid.{uuid.uuid4().hex}"
    record_send_outcome(world.id, uuid.UUID(sent["message"]["id"]), wamid=wamid, error=None)
    number = _scalar("SELECT from_address FROM conversation_messages WHERE id = :m", m=sent["message"]["id"])
    deliver = meta_delivery(stage, status_payload(number, wamid, "delivered"), path="/webhooks/whatsapp")
    return Delivery(
        deliver,
        lambda: (
            _count("SELECT count(*) FROM whatsapp_status_events WHERE wamid = :w", w=wamid),
            _count(
                "SELECT count(*) FROM conversation_messages"
                " WHERE provider_message_id = :w AND delivery_status = 'delivered'",
                w=wamid,
            ),
        ),
    )


def _conversation_open_and_send(_: Stage) -> Delivery:
    world = make_world()
    body = {"leadId": world.emailable_lead(), "subject": "Welcome", "body": "Hello!"}
    return Delivery(
        _keyed_post(world, "/conversations", body, 201, 409),
        lambda: _org_counts(world.id, "conversations", "conversation_messages"),
    )


# -- task_lifecycle: the platform's membership.status_changed (owner departure) ----------------------------


def _membership_status_changed(_: Stage) -> Delivery:
    """A staff member leaves: their open lead goes to the owner in one handover, however often it is told."""
    world = make_world()
    lead_id = world.lead()
    world.api("PATCH", f"/leads/{lead_id}", body={"assigneeUserId": str(world.user_ids["coach"])})
    detail = {
        "organizationId": str(world.id),
        "membershipId": str(world.membership_ids["coach"]),
        "status": "cancelled",
        "changedAt": "2026-11-29T09:00:00Z",
    }
    return Delivery(
        _to_task_lifecycle(_platform_record("membership.status_changed", detail)),
        lambda: (
            *_org_counts(world.id, "ownership_handovers"),
            _count(
                "SELECT count(*) FROM outbox WHERE organization_id = :o AND type = 'ownership.handed_over'", o=world.id
            ),
            _count(
                "SELECT count(*) FROM leads WHERE id = :l AND assigned_to_user_id = :u",
                l=lead_id,
                u=world.user_ids["owner"],
            ),
            _activities(lead_id),
        ),
    )


def _inbound_received(stage: Stage) -> Delivery:
    """A lead's reply is one touch on its attribution log, however often the bus delivers the event."""
    from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, reply_address
    from leadcrm.platform import mail_keys
    from tests.support.conversations_helpers import MAIL_DOMAIN, fixture_mail

    world = make_world()
    conversation_id = world.conversation()
    lead_id = str(_scalar("SELECT lead_id FROM conversations WHERE id = :c", c=conversation_id))
    target = AddressTarget(AddressKind.CONVERSATION, uuid.UUID(conversation_id))
    _inbound_mail(
        fixture_mail("gmail_reply_multipart_qp.eml", reply_address(mail_keys.signing_key(), target, MAIL_DOMAIN))
    )()
    record = _published(stage.lifecycle, "conversation.inbound_received", conversation_id)
    return Delivery(
        _to_task_lifecycle(record),
        lambda: (_count("SELECT count(*) FROM lead_touches WHERE lead_id = :l", l=lead_id),),
    )


def _ses_event(kind: str) -> Callable[[Stage], Delivery]:
    """SES's event about a 1:1 mail, as the default bus's rule puts it on the task_lifecycle queue."""

    def prepare(_: Stage) -> Delivery:
        from leadcrm.conversations.rules.delivery import MailRef
        from tests.support.ses_events import ses_detail, ses_envelope

        world = make_world()
        lead_id = world.emailable_lead()
        sent = world.api("POST", "/conversations", body={"leadId": lead_id, "body": "Welcome!"}).data["message"]
        to = _scalar("SELECT email FROM leads WHERE id = :l", l=lead_id)
        tag = MailRef.conversation(uuid.UUID(sent["id"])).tag_value()
        detail = ses_detail(kind, message_id=sent["providerMessageId"], to=to, tag=tag)
        record = sqs_record(ses_envelope(kind, detail), queue_name="leadcrm-task-lifecycle")
        ses_id = sent["providerMessageId"]
        return Delivery(
            _to_task_lifecycle(record),
            lambda: (
                _count("SELECT count(*) FROM ses_delivery_events WHERE ses_message_id = :m", m=ses_id),
                _count("SELECT count(*) FROM lead_consent_events WHERE lead_id = :l", l=lead_id),
                _count("SELECT count(*) FROM lead_activity_events WHERE lead_id = :l", l=lead_id),
                _count(
                    "SELECT count(*) FROM conversation_messages WHERE id = :m AND delivery_status IS NOT NULL",
                    m=sent["id"],
                ),  # fmt: skip
            ),
        )

    return prepare


# -- Conversions API for CRM: the settings PUT, the CRM event of a Meta lead's status change, its hand-off ------


def _meta_crm_lead(stage: Stage) -> tuple[OrgWorld, str, str]:
    """A Meta lead of a page whose CRM events are on, its lead.created already handled; (world, lead, page)."""
    from tests.support.ingestion_helpers import fresh_id, graph_lead, leadgen_payload

    world, page_id, leadgen_id = make_world(), fresh_id(), fresh_id()
    connection = world.api("POST", "/integrations/meta", body={"pageId": page_id, "accessToken": "page-token-1234"})
    world.api("PUT", f"/integrations/meta/{connection.data['id']}/crm-events",
              body={"datasetId": "1234567890123456", "enabled": True})  # fmt: skip
    stage.graph.register(graph_lead(leadgen_id, email=f"{leadgen_id}@example.com", phone=None))
    meta_delivery(stage, leadgen_payload(page_id, leadgen_id))()
    lead_id = str(_scalar("SELECT lead_id FROM ingested_events WHERE external_ref = :r", r=leadgen_id))
    for message in stage.lifecycle.receive_all():  # lead.created: recorded, handed over
        _to_task_lifecycle(sqs_record_from_message(message, queue_name=stage.lifecycle.name))()
    for message in stage.lifecycle.receive_all():
        _to_task_lifecycle(sqs_record_from_message(message, queue_name=stage.lifecycle.name))()
    return world, lead_id, connection.data["id"]


def _crm_rows(lead_id: str) -> tuple[int, ...]:
    return (
        _count("SELECT count(*) FROM meta_crm_events WHERE lead_id = :l", l=lead_id),
        _count("SELECT count(*) FROM meta_crm_events WHERE lead_id = :l AND status = 'queued'", l=lead_id),
        _count("SELECT count(*) FROM outbox WHERE aggregate_id = :l AND type = 'lead.crm_event_recorded'", l=lead_id),
    )


def _meta_crm_settings(_: Stage) -> Delivery:
    """PUT replaces the settings whole: the same settings again write nothing, not even updated_at."""
    world = make_world()
    connection_id = world.connection("meta")
    path = f"/organizations/{world.id}/integrations/meta/{connection_id}/crm-events"

    def deliver() -> int:
        body = {"datasetId": "1234567890123456", "enabled": True, "sendHashedContact": True}
        return _accepted(call_api("PUT", path, sub=world.owner, body=body), 200).status

    def effect() -> tuple[int, ...]:
        rows = _count("SELECT count(*) FROM meta_crm_settings WHERE organization_id = :o", o=world.id)
        stamp = _scalar("SELECT max(updated_at) FROM meta_crm_settings WHERE organization_id = :o", o=world.id)
        return (rows, int(stamp.timestamp() * 1_000_000) if stamp else 0)

    return Delivery(deliver, effect)


def _meta_lead_status_changed(stage: Stage) -> Delivery:
    """A Meta lead's move: one CRM event, however often the status change is delivered."""
    world, lead_id, _ = _meta_crm_lead(stage)
    world.api("PATCH", f"/leads/{lead_id}", body={"status": "contacted"})
    record = _published(stage.lifecycle, "lead.status_changed", lead_id)
    return Delivery(_to_task_lifecycle(record), lambda: _crm_rows(lead_id))


def _crm_event_recorded(stage: Stage) -> Delivery:
    """The hand-off to the sender: queued once, however often lead.crm_event_recorded is delivered."""
    world, lead_id, _ = _meta_crm_lead(stage)
    world.api("PATCH", f"/leads/{lead_id}", body={"status": "contacted"})
    _to_task_lifecycle(_published(stage.lifecycle, "lead.status_changed", lead_id))()
    record = _published(stage.lifecycle, "lead.crm_event_recorded", lead_id)
    assert stage.meta_events is not None

    def effect() -> tuple[int, ...]:
        stamp = _scalar("SELECT max(updated_at) FROM meta_crm_events WHERE lead_id = :l", l=lead_id)
        return (*_crm_rows(lead_id), int(stamp.timestamp() * 1_000_000))

    return Delivery(_to_task_lifecycle(record), effect)


def _webhook_subscription(world: Any) -> str:
    body = {"url": "https://93.184.216.34/hook", "eventTypes": ["lead.created"]}
    return str(_accepted(world.api("POST", "/webhook-subscriptions", body=body), 201).data["id"])


def _lead_created_to_a_webhook(stage: Stage) -> Delivery:
    """A lead.created is one outbound webhook delivery per subscribed endpoint, however often it arrives."""
    world = make_world()
    subscription_id = _webhook_subscription(world)
    lead_id = world.lead()
    record = _published(stage.lifecycle, "lead.created", lead_id)
    return Delivery(
        _to_task_lifecycle(record),
        lambda: (_count("SELECT count(*) FROM webhook_deliveries WHERE subscription_id = :s", s=subscription_id),),
    )


def _webhook_attempt_reported(stage: Stage) -> Delivery:
    """webhook_delivery's report of one failed attempt is recorded once: one attempt counted, one backoff."""
    world = make_world()
    subscription_id = _webhook_subscription(world)
    lead_id = world.lead()
    _to_task_lifecycle(_published(stage.lifecycle, "lead.created", lead_id))()
    delivery_id = str(_scalar("SELECT id FROM webhook_deliveries WHERE subscription_id = :s", s=subscription_id))
    detail = {"deliveryId": delivery_id, "attempt": 1, "outcome": "failed", "statusCode": 500, "latencyMs": 12}
    envelope = eventbridge_envelope("webhook.delivery_attempted", detail, source="leadcrm.webhook_delivery")
    record = sqs_record(envelope, queue_name="leadcrm-task-lifecycle")
    return Delivery(
        _to_task_lifecycle(record),
        lambda: (
            _count("SELECT attempts FROM webhook_deliveries WHERE id = :d", d=delivery_id),
            _count("SELECT count(*) FROM webhook_deliveries WHERE id = :d AND status = 'pending'", d=delivery_id),
        ),
    )


def _scalar(query: str, **params: Any) -> Any:
    with get_engine().connect() as conn:
        return conn.execute(text(query), params).scalar_one()


ENTRIES = [
    Entry("api: public capture with Idempotency-Key", _public_capture),
    Entry("api: staff create with Idempotency-Key", _staff_create),
    Entry("api: pipeline create with Idempotency-Key", _pipeline_create),
    Entry("api: stage add with Idempotency-Key", _stage_add),
    Entry("api: sales workspace result with Idempotency-Key", _sales_result),
    Entry("task_lifecycle: lead.created", _lead_created),
    Entry("task_lifecycle: lead.created to a webhook subscription", _lead_created_to_a_webhook),
    Entry("task_lifecycle: webhook.delivery_attempted", _webhook_attempt_reported),
    Entry("task_lifecycle: lead.status_changed to lost", _lead_lost),
    Entry("task_lifecycle: lead.returned", _lead_returned),
    Entry("task_lifecycle: minisite_event.published", _minisite_event("minisite_event.published")),
    Entry("task_lifecycle: minisite_event.updated", _minisite_event("minisite_event.updated")),
    Entry("task_lifecycle: minisite_event.archived", _minisite_event("minisite_event.archived")),
    Entry("task_lifecycle: membership.self_signup", _self_signup),
    Entry("task_lifecycle: entitlement.activated", _entitlement_activated),
    Entry("task_lifecycle: membership.join_released", _join_released),
    Entry("task_lifecycle: membership.status_changed", _membership_status_changed),
    Entry("task_lifecycle: organization.created", _directory_event("organization.created")),
    Entry("task_lifecycle: organization.updated", _directory_event("organization.updated")),
    Entry("task_lifecycle: organization.deleted", _directory_event("organization.deleted")),
    Entry("task_lifecycle: user.created", _directory_event("user.created")),
    Entry("task_lifecycle: user.updated", _directory_event("user.updated")),
    Entry("task_lifecycle: membership.created", _directory_event("membership.created")),
    Entry("task_lifecycle: membership.updated", _directory_event("membership.updated")),
    Entry("task_lifecycle: membership.deleted", _directory_event("membership.deleted")),
    Entry("task_lifecycle: conversation.inbound_received", _inbound_received),
    Entry("task_lifecycle: lead.status_changed of a Meta lead (CRM event)", _meta_lead_status_changed),
    Entry("task_lifecycle: lead.crm_event_recorded", _crm_event_recorded),
    Entry("api: Meta CRM events settings PUT", _meta_crm_settings),
    Entry("task_lifecycle: Email Sent", _ses_event("send")),
    Entry("task_lifecycle: Email Delivered", _ses_event("delivery")),
    Entry("task_lifecycle: Email Bounced", _ses_event("bounce")),
    Entry("task_lifecycle: Email Complaint Received", _ses_event("complaint")),
    Entry("task_lifecycle: Email Rejected", _ses_event("reject")),
    Entry("task_lifecycle: Email Delivery Delayed", _ses_event("deliveryDelay")),
    Entry("ingestion: Meta leadgen webhook", _meta_leadgen),
    Entry("ingestion: WhatsApp click-to-WhatsApp webhook", _whatsapp_ctwa),
    Entry("ingestion: SES inbound reply to a thread", _ses_reply),
    Entry("ingestion: SES mail to the support address", _support_mail),
    Entry("api: deal create with Idempotency-Key", _deal_create),
    Entry("api: ticket create with Idempotency-Key", _ticket_create),
    Entry("api: assignment rule create with Idempotency-Key", _assignment_rule_create),
    Entry("api: conversation send with Idempotency-Key", _conversation_send),
    Entry("api: conversation open and send with Idempotency-Key", _conversation_open_and_send),
    Entry("api: WhatsApp send with Idempotency-Key", _whatsapp_send),
    Entry("ingestion: WhatsApp inbound message webhook", _whatsapp_inbound),
    Entry("ingestion: WhatsApp status webhook", _whatsapp_status),
]


@pytest.fixture
def stage(
    lifecycle_queue: Queue,
    ingestion_queue: Queue,
    graph_fetch_queue: Queue,
    meta_events_queue: Queue,
    meta_secrets,
    monkeypatch,
) -> Iterator[Stage]:
    """The bus and the task_lifecycle queue behind it (the API's events are published after commit), the
    ingestion queue the webhook receiver feeds, Graph, the inbound mail bucket and a verified sender."""
    from tests.support.conversations_helpers import make_inbound_bucket, verify_sender
    from tests.support.ingestion_helpers import graph_stand_in

    verify_sender()
    make_inbound_bucket()
    with graph_stand_in(monkeypatch) as graph:
        yield Stage(lifecycle_queue, ingestion_queue, graph_fetch_queue, graph, meta_events_queue)


@pytest.mark.parametrize("entry", ENTRIES, ids=str)
def test_delivered_three_times_in_a_row_it_has_one_effect(entry: Entry, stage: Stage):
    delivery = entry.prepare(stage)
    before = delivery.effect()
    delivery.deliver()
    once = delivery.effect()
    assert once != before, "the first delivery changed nothing: this row tests nothing"
    for _ in range(IN_A_ROW - 1):
        delivery.deliver()
        assert delivery.effect() == once


@pytest.mark.parametrize("entry", ENTRIES, ids=str)
def test_delivered_ten_times_at_once_it_has_one_effect(entry: Entry, stage: Stage):
    reference = entry.prepare(stage)
    reference.deliver()
    expected = reference.effect()
    delivery = entry.prepare(stage)
    before = delivery.effect()

    in_containers(delivery.deliver, AT_ONCE)

    assert delivery.effect() != before
    assert _comparable(delivery.effect()) == _comparable(expected)


def _comparable(effect: tuple[int, ...]) -> tuple[int, ...]:
    """Counts compare across two fresh preparations; timestamps (a minisite event's updated_at) do not."""
    return tuple(v if v < 1_000_000_000 else 0 for v in effect)


def test_a_meta_notification_delivered_three_times_is_accepted_and_consumed_each_time(stage: Stage):
    body = {"object": "page", "entry": [{"id": "1", "changes": [{"field": "leadgen", "value": {"leadgen_id": "7"}}]}]}
    deliver = meta_delivery(stage, body)  # a page nobody connected: graph_fetch takes it and drops it
    assert [deliver() for _ in range(IN_A_ROW)] == [1] * IN_A_ROW


def test_every_event_task_lifecycle_handles_has_a_replay_row():
    from leadcrm.wiring import EVENT_REACTIONS as _HANDLERS

    names = [entry.name.removeprefix("task_lifecycle: ") for entry in ENTRIES]
    # a row names its detail-type, then maybe what it is about ("lead.status_changed to lost"); SES's
    # detail-types have spaces of their own ("Email Bounced")
    missing = {handler for handler in _HANDLERS if not any(n == handler or n.startswith(f"{handler} ") for n in names)}
    assert missing == set(), "task_lifecycle consumers without a row in ENTRIES"
