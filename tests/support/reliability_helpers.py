"""What the reliability suite (tests/reliability) builds on: the app's route list, organizations with one
user per role, fresh entities made through the API itself, and a fingerprint of everything an organization
owns (to prove a request through another organization's path changed nothing of it).
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from leadcrm.platform.db.engine import get_engine
from tests.support.api import ApiResponse, call_api
from tests.support.factories import Organization, make_membership, make_organization, make_user

ROLES = ("owner", "admin", "coach", "member")


def app_routes() -> set[str]:
    """Every route the API function serves, as `METHOD /openapi/{path}` (the resolver's own list)."""
    from api.handler import every_route_loaded

    app = every_route_loaded()  # route modules load on demand (api.routing): all of them, here
    return {f"{route.method} {route.openapi_path}" for route in (*app._static_routes, *app._dynamic_routes)}


def openapi_routes() -> set[str]:
    from api.handler import openapi_schema

    return {f"{method.upper()} {path}" for path, ops in openapi_schema()["paths"].items() for method in ops}


@dataclass
class OrgWorld:
    """An organization with lead management, a user per role (subjects by role), and entity makers.

    Every maker creates a new entity through the API as the owner, so a cell that changes or deletes it
    never disturbs the next cell.
    """

    organization: Organization
    subjects: dict[str, str]
    membership_ids: dict[str, uuid.UUID]
    user_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    _default_pipeline: str | None = field(default=None, repr=False)

    @property
    def id(self) -> uuid.UUID:
        return self.organization.id

    @property
    def owner(self) -> str:
        return self.subjects["owner"]

    def api(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        """The owner calls `path` (relative to /organizations/{orgId}); anything but 2xx is a broken fixture."""
        response = call_api(method, f"/organizations/{self.id}{path}", sub=self.owner, **kwargs)
        assert 200 <= response.status < 300, f"{method} {path}: {response.status} {response.body}"
        return response

    # -- entity makers: each returns the new entity's id as a string ------------------------------------
    def lead(self, **body: Any) -> str:
        return self.api("POST", "/leads", body={"name": f"Lead {uuid.uuid4().hex[:8]}", **body}).data["id"]

    def lead_with_follow_up(self) -> str:
        lead_id = self.lead()
        self.api("PUT", f"/leads/{lead_id}/follow-up", body={"at": in_days(1), "type": "call"})
        return lead_id

    def pipeline(self) -> str:
        return self.api("POST", "/pipelines", body={"name": f"Pipeline {uuid.uuid4().hex[:8]}"}).data["id"]

    def stages(self, pipeline_id: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/pipelines/{pipeline_id}").data["stages"]

    def stage_of(self, pipeline_id: str, category: str) -> str:
        return next(s["id"] for s in self.stages(pipeline_id) if s["category"] == category)

    def extra_stage(self, pipeline_id: str) -> str:
        """A stage the pipeline can do without (archiving it keeps win coverage)."""
        body = {"name": f"Extra {uuid.uuid4().hex[:6]}", "category": "contacted"}
        return self.api("POST", f"/pipelines/{pipeline_id}/stages", body=body).data["id"]

    def default_pipeline(self) -> str:
        if self._default_pipeline is None:
            pipelines = self.api("GET", "/pipelines").data
            self._default_pipeline = next(p["id"] for p in pipelines if p["isDefault"])
        return self._default_pipeline

    def placement(self) -> tuple[str, str]:
        """A lead placed on a second pipeline: (leadId, that pipelineId)."""
        lead_id, pipeline_id = self.lead(), self.pipeline()
        self.api("POST", f"/leads/{lead_id}/pipelines", body={"pipelineId": pipeline_id})
        return lead_id, pipeline_id

    def tag(self) -> str:
        return self.api("POST", "/leads/tags", body={"name": f"Tag {uuid.uuid4().hex[:8]}"}).data["id"]

    def campaign(self) -> str:
        return self.api("POST", "/leads/campaigns", body={"name": f"Campaign {uuid.uuid4().hex[:8]}"}).data["id"]

    def task(self) -> str:
        return self.api("POST", "/tasks", body={"title": f"Task {uuid.uuid4().hex[:8]}"}).data["id"]

    def new_member_membership(self) -> str:
        """A membership of a fresh member of the organization (what link-member attaches a lead to)."""
        user = make_user()
        return str(make_membership(self.organization, user, role="member").id)

    # -- deals ----------------------------------------------------------------------------------------
    def deal_pipeline(self) -> dict[str, Any]:
        return self.api("GET", "/deals/pipeline").data

    def deal_stage(self, kind: str) -> str:
        return next(s["id"] for s in self.deal_pipeline()["stages"] if s["kind"] == kind)

    def deal(self, **overrides: Any) -> dict[str, Any]:
        body = {
            "title": "Annual plan",
            "offerType": "plan",
            "valueMinor": 120_000,
            "currency": "EUR",
            "expectedCloseDate": in_days(30)[:10],
            "leadId": self.lead(),
            **overrides,
        }
        return self.api("POST", "/deals", body=body).data

    DEAL_EVIDENCE = {  # what each move along the deal pipeline needs (spec §8), in phase order
        "discovery": {"activityAt": "2026-11-20T10:00:00+00:00"},
        "proposal": {"documentRef": "proposal.pdf"},
        "negotiation": {"activityNote": "Agreed the schedule"},
        "won": {"closeReason": "Signed"},
        "lost": {"lossReason": "price"},
    }

    def walked_deal(self, kind: str) -> dict[str, Any]:
        """A deal moved step by step from new through negotiation to `kind` ("won" or "lost")."""
        deal = self.deal()
        for step in ("discovery", "proposal", "negotiation", kind):
            body = {"version": deal["version"], "stageId": self.deal_stage(step), **self.DEAL_EVIDENCE[step]}
            deal = self.api("POST", f"/deals/{deal['id']}/move", body=body).data
        return deal

    def second_deal_stage(self) -> None:
        body = {
            "name": f"Trial {uuid.uuid4().hex[:4]}",
            "kind": "discovery",
            "probability": 30,
            "forecastCategory": "pipeline",
        }
        self.api("POST", "/deals/pipeline/stages", body=body)

    # -- tickets --------------------------------------------------------------------------------------
    TICKET_WALK = {  # status → the actions (and bodies) that reach it from a new ticket
        "unassigned": (),
        "assigned": ("assign",),
        "in_progress": ("assign", "respond"),
        "awaiting_customer": ("assign", "respond", "request-info"),
        "resolved": ("assign", "respond", "resolve"),
        "closed": ("assign", "respond", "resolve", "confirm"),
    }

    def ticket(self, status: str = "unassigned") -> str:
        lead_id = self.lead(email=f"{uuid.uuid4().hex[:10]}@example.com")
        ticket_id = self.api("POST", "/tickets", body={"subject": "It does not work", "leadId": lead_id}).data["id"]
        bodies = {
            "assign": {"assigneeUserId": str(self.user_ids["owner"])},
            "respond": {"message": "Looking into it"},
            "request-info": {"message": "Which browser?"},
            "resolve": {"resolution": "Cleared the cache"},
            "confirm": None,
        }
        for action in self.TICKET_WALK[status]:
            self.api("POST", f"/tickets/{ticket_id}/{action}", body=bodies[action])
        return ticket_id

    def escalated_ticket(self) -> str:
        """An assigned ticket past its escalation threshold, as the sweep leaves it."""
        ticket_id = self.ticket("in_progress")
        with get_engine().begin() as conn:
            conn.execute(text("UPDATE tickets SET status = 'escalated' WHERE id = :t"), {"t": ticket_id})
        return ticket_id

    def survey_token(self) -> str:
        """A closed ticket's survey link token, as the sweep mails it (the table keeps its digest)."""
        from leadcrm.tickets.sweep import token_digest

        ticket_id, token = self.ticket("closed"), uuid.uuid4().hex
        with get_engine().begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO ticket_surveys (id, organization_id, ticket_id, token_digest)"
                    " VALUES (:i, :o, :t, :d) ON CONFLICT (ticket_id) DO UPDATE SET token_digest = :d"
                ),
                {"i": uuid.uuid4(), "o": self.id, "t": ticket_id, "d": token_digest(token)},
            )
        return token

    def ticket_queue(self) -> str:
        return self.api("POST", "/ticket-queues", body={"name": f"Queue {uuid.uuid4().hex[:8]}"}).data["id"]

    def routing_rule(self) -> str:
        body = {"name": f"Rule {uuid.uuid4().hex[:6]}", "keywords": ["refund"], "queueId": self.ticket_queue()}
        return self.api("POST", "/ticket-routing-rules", body=body).data["id"]

    def routing_rule_ids(self) -> list[str]:
        self.routing_rule()
        return [r["id"] for r in self.api("GET", "/ticket-routing-rules").data]

    def assignment_rule(self) -> str:
        body = {"name": f"Rule {uuid.uuid4().hex[:6]}", "strategy": "fixed", "userIds": [str(self.user_ids["coach"])]}
        return self.api("POST", "/lead-assignment-rules", body=body).data["id"]

    def assignment_rule_ids(self) -> list[str]:
        self.assignment_rule()
        return [r["id"] for r in self.api("GET", "/lead-assignment-rules").data]

    # -- conversations, consent, bulk email -----------------------------------------------------------
    def emailable_lead(self) -> str:
        lead_id = self.lead(email=f"{uuid.uuid4().hex[:10]}@example.com")
        self.api("PUT", f"/leads/{lead_id}/consent/email", body={"status": "granted", "legalBasis": "consent"})
        return lead_id

    def conversation(self) -> str:
        body = {"leadId": self.emailable_lead(), "subject": "Hello", "body": "Welcome!"}
        return self.api("POST", "/conversations", body=body).data["conversation"]["id"]

    def whatsapp_thread(self) -> str:
        """A lead's WhatsApp thread on a connected number, the lead's message just in (the window open)."""
        from leadcrm.ingestion.whatsapp import receive_webhook
        from tests.support.ingestion_helpers import whatsapp_payload

        number = str(uuid.uuid4().int)[:16]
        self.api("POST", "/integrations/whatsapp", body={"phoneNumberId": number, "accessToken": "waba-token-1234"})
        wa_id = "4477" + str(uuid.uuid4().int)[:8]
        lead_id = self.lead(phone=f"+{wa_id}")
        receive_webhook(whatsapp_payload(number, wamid=f"wamid.{uuid.uuid4().hex}", wa_id=wa_id))
        threads = self.api("GET", "/conversations", query={"leadId": lead_id, "channel": "whatsapp"}).data
        return threads[0]["id"]

    def bulk_email(self) -> str:
        body = {"subject": "News", "body": "Hello", "audience": {"leadIds": [self.emailable_lead()]}}
        return self.api("POST", "/bulk-emails", body=body).data["id"]

    def unsubscribe_token(self) -> str:
        from leadcrm.conversations.rules.reply_addresses import unsubscribe_token
        from leadcrm.platform import mail_keys

        return unsubscribe_token(mail_keys.signing_keys()[0], uuid.UUID(self.emailable_lead()))

    # -- qualification, merges ------------------------------------------------------------------------
    SCORING_RULES = [  # 50 points for a company of 50 or more: companySize 100 reaches the threshold of 50
        {"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 50},
        {"kind": "engagement", "signal": "touches", "weight": 10, "max": 40},
    ]
    ALL_MET = {
        name: {"status": "met", "evidence": f"{name} confirmed on the call"}
        for name in ("budget", "authority", "need", "timeline")
    }

    def scoring_model(self) -> None:
        if not self.api("GET", "/scoring-models").data:
            self.api("POST", "/scoring-models", body={"rules": self.SCORING_RULES, "qualifyThreshold": 50})

    def scored_lead(self, company_size: int = 100, *, criteria_met: bool = False) -> str:
        self.scoring_model()
        lead_id = self.lead()
        body = {
            "category": "firmographic",
            "field": "companySize",
            "value": company_size,
            "source": "clearbit",
            "confidence": 1.0,
        }
        self.api("POST", f"/leads/{lead_id}/enrichments", body=body)
        if criteria_met:
            self.api("PUT", f"/leads/{lead_id}/qualification/criteria", body=self.ALL_MET)
        return lead_id

    def disqualified_lead(self) -> str:
        lead_id = self.scored_lead(10, criteria_met=True)
        self.api("POST", f"/leads/{lead_id}/qualification/disqualify", body={"reasonCode": "no_budget"})
        return lead_id

    def merge(self) -> str:
        survivor, duplicate = self.lead(), self.lead()
        return self.api("POST", f"/leads/{survivor}/merge", body={"mergedLeadId": duplicate}).data["mergeId"]

    # -- ingestion ------------------------------------------------------------------------------------
    def connection(self, provider: str) -> str:
        external_id = str(uuid.uuid4().int)[:16]
        body = (
            {"pageId": external_id, "accessToken": "page-token-1234"}
            if provider == "meta"
            else {"phoneNumberId": external_id, "accessToken": "waba-token-1234"}
        )
        return self.api("POST", f"/integrations/{provider}", body=body).data["id"]

    # -- outbound webhooks (written directly: an organization may hold only 20 endpoints, and the matrix
    # makes one per cell) -------------------------------------------------------------------------------
    def webhook_subscription(self) -> str:
        subscription_id = uuid.uuid4()
        with get_engine().begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO webhook_subscriptions (id, organization_id, url, event_types, secret) "
                    "VALUES (:id, :org, 'https://93.184.216.34/hook', ARRAY['lead.created'], 'whsec_dGVzdA==')"
                ),
                {"id": subscription_id, "org": self.id},
            )
        return str(subscription_id)

    def webhook_delivery(self) -> tuple[str, str]:
        subscription_id, delivery_id = self.webhook_subscription(), uuid.uuid4()
        with get_engine().begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO webhook_deliveries (id, organization_id, subscription_id, event_id, event_type, "
                    "payload, occurred_at, status, attempts, next_attempt_at) VALUES (:id, :org, :sub, :event, "
                    "'lead.created', '{}'::jsonb, now(), 'failed', 3, NULL)"
                ),
                {"id": delivery_id, "org": self.id, "sub": subscription_id, "event": uuid.uuid4()},
            )
        return subscription_id, str(delivery_id)

    def import_job(self, *, uploaded: bool = False) -> str:
        created = self.api("POST", "/leads/import", body={"fileName": "leads.csv"}).data
        if uploaded:
            import requests

            upload = created["upload"]
            response = requests.request(
                upload.get("method", "PUT"),
                upload["url"],
                data=b"name,email\nDana,dana@example.com\n",
                headers=upload["headers"],
            )
            assert response.status_code == 200, response.text
        return created["job"]["id"]


def make_world(name: str = "Reliability") -> OrgWorld:
    org = make_organization(name=f"{name} {uuid.uuid4().hex[:6]}")
    subjects: dict[str, str] = {}
    membership_ids: dict[str, uuid.UUID] = {}
    user_ids: dict[str, uuid.UUID] = {}
    for role in ROLES:
        user = make_user()
        membership_ids[role] = make_membership(org, user, role=role).id
        assert user.auth_subject is not None
        subjects[role] = user.auth_subject
        user_ids[role] = user.id
    return OrgWorld(organization=org, subjects=subjects, membership_ids=membership_ids, user_ids=user_ids)


def in_days(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat()


# What an organization owns: every row of every table with an organization_id column (all columns, so any
# write shows), and the organization's own row (its settings, e.g. the default assignee). Built from the
# schema, so a new area's tables are covered the day they land. One statement (one scalar subquery per
# table, rows in a stable order, each table's text digested where it is: only the digests travel): the
# authorization matrix takes two digests for most of its ~2,000 cells.
def _owned_tables() -> tuple[str, ...]:
    from leadcrm.platform.db.schema import all_tables

    return tuple(sorted(t.name for t in all_tables().sorted_tables if "organization_id" in t.c))


@functools.cache
def _fingerprint_statement(ignoring: frozenset[str]) -> str:
    columns = ["(SELECT md5(to_jsonb(o)::text) FROM organizations o WHERE id = :o) AS organization"]
    columns += [
        f"(SELECT md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) FROM"
        f" (SELECT to_jsonb(t)::text AS r FROM {name} t WHERE organization_id = :o) owned) AS {name}"
        for name in _owned_tables()
        if name not in ignoring
    ]
    return "SELECT " + ",\n  ".join(columns)


def org_fingerprint(organization_id: uuid.UUID, *, ignoring: frozenset[str] = frozenset()) -> str:
    """A digest of everything the organization owns; `ignoring` names tables a caller expects to change
    (e.g. the digest's own delivery records)."""
    with get_engine().connect() as conn:
        row = conn.execute(text(_fingerprint_statement(ignoring)), {"o": organization_id}).one()
    return hashlib.sha256(repr(tuple(row)).encode()).hexdigest()


def run_with_fingerprint(organization_id: uuid.UUID, call: Callable[[], ApiResponse]) -> tuple[ApiResponse, bool]:
    """(the response, whether the organization's rows are exactly as before the call)."""
    before = org_fingerprint(organization_id)
    response = call()
    return response, org_fingerprint(organization_id) == before


# -- many Lambda containers at once ---------------------------------------------------------------------


def in_containers(work: Callable[[], Any], count: int, *, timeout: float = 60) -> list[Any]:
    """Runs `work` in `count` forked processes released together, as `count` Lambda containers would run
    one delivery each: every process has its own database connection and its own copy of the handlers'
    module state (the HTTP resolver keeps the current event on the app, so threads cannot stand in for
    containers). Returns each process's result (it must pickle); an error in any of them fails here."""
    import multiprocessing
    import queue as queue_module

    context = multiprocessing.get_context("fork")
    start = context.Barrier(count)
    results = context.Queue()

    def container(slot: int) -> None:
        import leadcrm.platform.db.engine as engine_module

        engine_module._engine = None  # never touch the parent's pooled connection: build one of our own
        try:
            start.wait(timeout)
            results.put((slot, True, work()))
        except BaseException as error:
            results.put((slot, False, repr(error)))

    processes = [context.Process(target=container, args=(slot,), daemon=True) for slot in range(count)]
    for process in processes:
        process.start()
    collected: dict[int, Any] = {}
    errors: list[str] = []
    try:
        for _ in range(count):
            slot, ok, value = results.get(timeout=timeout)
            if ok:
                collected[slot] = value
            else:
                errors.append(f"container {slot}: {value}")
    except queue_module.Empty:
        errors.append(f"only {len(collected) + len(errors)} of {count} containers answered within {timeout} s")
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
    assert not errors, "\n".join(errors)
    return [collected[slot] for slot in sorted(collected)]
