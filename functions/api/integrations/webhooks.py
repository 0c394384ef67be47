"""Outbound webhook subscriptions and their delivery logs (owner/admin; issue 25, README "Outbound webhooks")."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.integrations.schemas_integrations import (
    CreateWebhookSubscriptionBody,
    UpdateWebhookSubscriptionBody,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookSubscription,
    WebhookSubscriptionWithSecret,
)
from api.operations import MANAGER, Operations
from api.params import DEFAULT_PAGE_SIZE, CursorParam, PageSize
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.integrations import deliveries, queries, subscriptions
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Integrations")

BASE = "/organizations/<orgId>/webhook-subscriptions"
ONE = f"{BASE}/<subscriptionId>"
NOT_FOUND = "WEBHOOK_SUBSCRIPTION_NOT_FOUND"
URL_CODES = [
    "WEBHOOK_URL_INVALID",
    "WEBHOOK_URL_NOT_HTTPS",
    "WEBHOOK_URL_UNRESOLVABLE",
    "WEBHOOK_ADDRESS_NOT_PUBLIC",
    "PERSONAL_DATA_NOT_ALLOWED",
]


def _with_secret(row: dict[str, Any], secret: str) -> WebhookSubscriptionWithSecret:
    return WebhookSubscriptionWithSecret.model_validate({**row, "secret": secret})


@ops.post(
    BASE,
    "createWebhookSubscription",
    "Subscribe an endpoint to events",
    (
        "Subscribes an HTTPS endpoint on a public address to event types; the answer carries the signing secret, "
        "shown this once. The URL's name is resolved now: a private, loopback, link-local, CGNAT, multicast or "
        "IPv6 unique-local address is 400 WEBHOOK_ADDRESS_NOT_PUBLIC; http is 400 WEBHOOK_URL_NOT_HTTPS. "
        "Personal data needs the plan's webhook_personal_data (400 PERSONAL_DATA_NOT_ALLOWED). At most 20 per "
        "organization (409 WEBHOOK_SUBSCRIPTION_LIMIT). Not idempotent: a retried create makes a second endpoint."
    ),
    who=MANAGER,
    errors={400: URL_CODES, 409: ["WEBHOOK_SUBSCRIPTION_LIMIT"]},
    ok={201: {"description": "Subscribed; the secret is in the answer this once"}},
)
def create_subscription(
    orgId: str, body: Annotated[CreateWebhookSubscriptionBody, Body()]
) -> Response[Envelope[WebhookSubscriptionWithSecret]]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        row, secret = subscriptions.create(
            uow.connection, actor, body.url, [t.value for t in body.event_types], body.include_personal_data
        )
        uow.commit()
    return json_response(201, Envelope[WebhookSubscriptionWithSecret](data=_with_secret(row, secret)))


@ops.get(
    BASE,
    "listWebhookSubscriptions",
    "Webhook subscriptions",
    "The organization's endpoints, newest first, enabled or not (with why not); never their secrets.",
    who=MANAGER,
)
def list_subscriptions(orgId: str) -> ListEnvelope[WebhookSubscription]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        rows = subscriptions.list_subscriptions(uow.connection, actor.organization_id)
    return ListEnvelope[WebhookSubscription](
        data=[WebhookSubscription.model_validate(r) for r in rows], next_cursor=None
    )


@ops.get(
    ONE,
    "getWebhookSubscription",
    "A webhook subscription",
    "One endpoint: its event types, whether it is enabled and, when disabled, why.",
    who=MANAGER,
    errors={404: [NOT_FOUND]},
)
def get_subscription(orgId: str, subscriptionId: str) -> Envelope[WebhookSubscription]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        row = subscriptions.get(uow.connection, actor.organization_id, entity_id(subscriptionId, NOT_FOUND))
    return Envelope[WebhookSubscription](data=WebhookSubscription.model_validate(row))


@ops.patch(
    ONE,
    "updateWebhookSubscription",
    "Change a webhook subscription",
    (
        "Changes the URL (checked as at create), the event types, personal data, or `enabled`: true re-enables an "
        "endpoint disabled for failing (its pending deliveries go out again), false disables it. Idempotent."
    ),
    who=MANAGER,
    errors={400: URL_CODES, 404: [NOT_FOUND]},
)
def update_subscription(
    orgId: str, subscriptionId: str, body: Annotated[UpdateWebhookSubscriptionBody, Body()]
) -> Envelope[WebhookSubscription]:
    changes = body.model_dump(exclude_unset=True)
    if "event_types" in changes:
        changes["event_types"] = [str(t) for t in changes["event_types"]]
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        row = subscriptions.update_subscription(uow.connection, actor, entity_id(subscriptionId, NOT_FOUND), changes)
        uow.commit()
    return Envelope[WebhookSubscription](data=WebhookSubscription.model_validate(row))


@ops.delete(
    ONE,
    "deleteWebhookSubscription",
    "Delete a webhook subscription",
    "Deletes the endpoint and its delivery log; nothing more is sent to it.",
    who=MANAGER,
    errors={404: [NOT_FOUND]},
    ok={204: {"description": "Deleted"}},
)
def delete_subscription(orgId: str, subscriptionId: str) -> Response[None]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        subscriptions.delete_subscription(uow.connection, actor, entity_id(subscriptionId, NOT_FOUND))
        uow.commit()
    return Response(status_code=204)


@ops.post(
    f"{ONE}/rotate-secret",
    "rotateWebhookSecret",
    "Rotate a webhook signing secret",
    "A new signing secret, shown this once; every send from now on is signed with it (the old one stops).",
    who=MANAGER,
    errors={404: [NOT_FOUND]},
)
def rotate_secret(orgId: str, subscriptionId: str) -> Envelope[WebhookSubscriptionWithSecret]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        row, secret = subscriptions.rotate_secret(uow.connection, actor, entity_id(subscriptionId, NOT_FOUND))
        uow.commit()
    return Envelope[WebhookSubscriptionWithSecret](data=_with_secret(row, secret))


@ops.get(
    f"{ONE}/deliveries",
    "listWebhookDeliveries",
    "A webhook subscription's delivery log",
    (
        "Its deliveries, newest first: event, status (pending, succeeded, failed), attempts, the last answer's "
        "response code and latency, when the next attempt is due. Never a body."
    ),
    who=MANAGER,
    errors={404: [NOT_FOUND]},
)
def list_deliveries(
    orgId: str,
    subscriptionId: str,
    status: Annotated[WebhookDeliveryStatus | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[WebhookDelivery]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        subscription_id = entity_id(subscriptionId, NOT_FOUND)
        subscriptions.get(uow.connection, actor.organization_id, subscription_id)
        page = queries.list_deliveries(
            uow.connection,
            actor.organization_id,
            subscription_id,
            status=status.value if status else None,
            limit=limit,
            cursor=cursor,
        )
    return ListEnvelope[WebhookDelivery](
        data=[WebhookDelivery.model_validate(r) for r in page.items], next_cursor=page.next_cursor
    )


@ops.post(
    f"{ONE}/deliveries/<deliveryId>/replay",
    "replayWebhookDelivery",
    "Send a delivery again",
    (
        "Sends the delivery again with the same id (the webhook-id header receivers deduplicate on), signed now, "
        "with a new day of retries. 409 WEBHOOK_SUBSCRIPTION_DISABLED while the endpoint is disabled."
    ),
    who=MANAGER,
    errors={404: [NOT_FOUND, "WEBHOOK_DELIVERY_NOT_FOUND"], 409: ["WEBHOOK_SUBSCRIPTION_DISABLED"]},
    ok={202: {"description": "Queued for sending"}},
)
def replay_delivery(orgId: str, subscriptionId: str, deliveryId: str) -> Response[Envelope[WebhookDelivery]]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MANAGE_WEBHOOKS)(caller(uow, router, orgId))
        row = deliveries.replay(
            uow.connection,
            actor,
            entity_id(subscriptionId, NOT_FOUND),
            entity_id(deliveryId, "WEBHOOK_DELIVERY_NOT_FOUND"),
        )
        uow.commit()
    return json_response(202, Envelope[WebhookDelivery](data=WebhookDelivery.model_validate(row)))
