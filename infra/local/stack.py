"""The whole product on one machine: PostgreSQL, moto, the five traffic functions (each in warm containers of its
own), pollers, a scheduler and HTTP."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from infra.local import aws, docs, faults, ses
from infra.local.auth import KEY_FILE, MAX_TTL_SECONDS, TOKEN_DAYS, JwtAuthorizer, LocalAuthority, TokenRefused
from infra.local.clock import CLOCK_ROUTES
from infra.local.containers import ContainerPool
from infra.local.gateway import PUBLIC_API_PREFIXES, http_api_event, lambda_result, make_server
from infra.local.graph import LocalGraph
from infra.local.pollers import QueuePoller, Scheduler
from infra.local.postgres import LocalPostgres
from infra.local.whatsapp import LocalWhatsApp

logger = logging.getLogger("leadcrm.local")

# Local defaults for the Meta webhook secrets (README: Configuration). Override with the same env names.
LOCAL_META_APP_SECRET = "local-app-secret"
LOCAL_META_VERIFY_TOKEN = "local-verify-token"
JOB_RATES_SECONDS = {
    "outbox_relay": 60,
    "retention_cleanup": 900,
    "daily_digest": 900,
    "rescore_leads": 300,
    "nurture_reevaluation": 3600,
    "merge_snapshot_purge": 3600,
    "deal_rotting_sweep": 3600,
    "ticket_sweep": 60,
    "bulk_email": 60,
    "queued_email_sweep": 300,
    "webhook_delivery_sweep": 60,
    "analytics_fold": 60,
}
# Outbound webhooks' private addresses allowed locally (a receiver on this machine); unset in AWS.
LOCAL_WEBHOOK_ALLOW_PRIVATE_HOSTS = "127.0.0.1"
# Local pseudonym master key (README: Configuration); AWS reads it from Secrets Manager (PSEUDONYM_SECRET_ARN).
LOCAL_PSEUDONYM_KEY = "local-pseudonym-key"
ROLES = ("owner", "admin", "coach", "member")
GRAPH_PREFIX = "/_local/graph/"
JSON = {"content-type": "application/json"}

Reply = tuple[int, dict[str, str], bytes]
SENT_EMAILS_PAGE = 100
MAX_SENT_EMAILS_PAGE = 500


def _encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(f"sent:{offset}".encode()).rstrip(b"=").decode()


def _decode_offset(cursor: str) -> int | None:
    """The position a `nextCursor` names (the list only grows, so a position stays where it was)."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError):
        return None
    prefix, _, number = text.partition(":")
    return int(number) if prefix == "sent" and number.isdigit() and len(number) <= 9 else None


def _json(status: int, body: dict[str, Any]) -> Reply:
    return status, dict(JSON), json.dumps(body, default=str).encode()


def _error(status: int, code: str, message: str) -> Reply:
    return _json(status, {"error": {"code": code, "message": message}})


class LocalStack:
    def __init__(
        self, data_dir: Path, port: int, cors_origin: str = "*", concurrency: Mapping[str, int] | None = None
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.cors_origin = cors_origin
        self.postgres: LocalPostgres | None = None
        # Each function's warm containers, up to its concurrency limit (containers.py).
        self.lambdas = ContainerPool(concurrency)
        # The issuer is this server's own URL, known only once it is bound: both are set in start().
        self.authority: LocalAuthority
        self.authorizer: JwtAuthorizer
        self.pollers: list[QueuePoller] = []
        self.scheduler = Scheduler(self.lambdas, JOB_RATES_SECONDS)
        self.graph = LocalGraph(faults.registry)  # Meta Graph: leads for graph_fetch, CRM events from meta_events
        self.whatsapp = LocalWhatsApp(faults.registry)  # the WhatsApp Cloud API under it (infra/local/whatsapp.py)

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        self.lambdas.preload()  # the handlers' imports, in the forkserver, while PostgreSQL and moto start
        database_url = os.environ.get("DATABASE_URL")
        if not database_url:
            self.postgres = LocalPostgres(self.data_dir / "postgres")
            database_url = self.postgres.start()
        self.moto, endpoint = aws.start_moto()
        ses.remember_sending_options()  # what moto's SES does not keep: configuration set, tags
        aws.point_sdk_at(endpoint)
        faults.install()  # before any client is made: the functions' clients carry it too
        os.environ["DATABASE_URL"] = database_url
        os.environ.setdefault("DB_POOL_SIZE", "8")  # the stack's own routes, on the HTTP threads (containers: 1)
        os.environ.setdefault("META_APP_SECRET", LOCAL_META_APP_SECRET)
        os.environ.setdefault("META_VERIFY_TOKEN", LOCAL_META_VERIFY_TOKEN)
        os.environ.setdefault("PSEUDONYM_KEY", LOCAL_PSEUDONYM_KEY)
        os.environ["EVENT_BUS_NAME"] = aws.EVENT_BUS
        os.environ["SES_CONFIGURATION_SET"] = aws.CONFIGURATION_SET
        os.environ.setdefault("INBOUND_EMAIL_DOMAIN", aws.MAIL_DOMAIN)
        self.resources = aws.provision()
        os.environ["INGESTION_QUEUE_URL"] = self.resources.ingestion_queue_url
        os.environ["GRAPH_FETCH_QUEUE_URL"] = self.resources.graph_fetch_queue_url
        os.environ["META_EVENTS_QUEUE_URL"] = self.resources.meta_events_queue_url
        os.environ["WEBHOOK_DELIVERY_QUEUE_URL"] = self.resources.webhook_delivery_queue_url
        # Outbound webhooks may reach a receiver on this machine (README "Outbound webhooks"); never in AWS.
        os.environ.setdefault("WEBHOOK_ALLOW_PRIVATE_HOSTS", LOCAL_WEBHOOK_ALLOW_PRIVATE_HOSTS)
        os.environ["LEAD_IMPORTS_BUCKET"] = aws.IMPORTS_BUCKET
        os.environ["WEBHOOK_BODIES_BUCKET"] = aws.WEBHOOK_BODIES_BUCKET

        from leadcrm.platform.db.migrate import upgrade

        upgrade()
        # Bound (and queuing connections) before the containers start: their environment names this URL.
        self.server = make_server(self.port, self.dispatch)
        self.port = self.server.server_address[1]
        self.authority = LocalAuthority(self.data_dir / KEY_FILE, issuer=f"http://127.0.0.1:{self.port}/_local")
        # What API Gateway is configured with (issuer, audiences) plus the JWKS it fetches from the issuer.
        self.authorizer = self.authority.authorizer()
        # Graph is this server's /_local/graph.
        os.environ.setdefault("META_GRAPH_BASE_URL", f"http://127.0.0.1:{self.port}/_local/graph")
        os.environ.setdefault("TICKET_SURVEY_URL", f"http://127.0.0.1:{self.port}/public/ticket-surveys/")
        # Links in mail (the bulk unsubscribe link) point back at this server.
        os.environ.setdefault("PUBLIC_API_URL", f"http://127.0.0.1:{self.port}")
        self.lambdas.start()  # the environment is complete: the containers take it as it is now (warming up)
        self.pollers = [
            QueuePoller(self.lambdas, "graph_fetch", self.resources.graph_fetch_queue_url),
            QueuePoller(self.lambdas, "meta_events", self.resources.meta_events_queue_url),
            QueuePoller(self.lambdas, "webhook_delivery", self.resources.webhook_delivery_queue_url),
            QueuePoller(self.lambdas, "ingestion", self.resources.ingestion_queue_url),
            QueuePoller(self.lambdas, "task_lifecycle", self.resources.task_lifecycle_queue_url),
        ]
        for thread in (*self.pollers, self.scheduler):
            thread.start()

    def wait_until_warm(self) -> None:
        """Each function has its first warm container (they start while the stack does the rest)."""
        self.lambdas.wait_until_warm()

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        for thread in (*self.pollers, self.scheduler):
            thread.stop()
        self.server.shutdown()
        self.lambdas.stop()
        self.moto.stop()
        if self.postgres:
            self.postgres.stop()

    # --- HTTP ------------------------------------------------------------------------------------------
    def dispatch(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Reply:
        headers = {k.lower(): v for k, v in headers.items()}
        if method == "POST" and path.startswith(GRAPH_PREFIX) and path.endswith("/events"):
            dataset_id = path.removeprefix(GRAPH_PREFIX).removesuffix("/events")
            try:
                sent = json.loads(body or b"{}")
            except ValueError:
                sent = None
            return _json(*self.graph.receive_events(dataset_id, headers.get("authorization"), sent))
        if path.startswith(GRAPH_PREFIX) and path.endswith(("/messages", "/message_templates")):
            return self.whatsapp_graph(method, path, headers, body)
        if method == "GET" and path.startswith(GRAPH_PREFIX):
            status, answer = self.graph.read(path.removeprefix(GRAPH_PREFIX), headers.get("authorization"))
            return _json(status, answer)
        if path.startswith("/_local/"):
            return self.local_route(method, path, body, query)
        if docs.is_docs_path(path):  # Swagger UI over /openapi.json: the local stack's own page, not the API's
            return docs.serve(method, path)
        if method == "OPTIONS":  # CORS preflight, answered by API Gateway itself
            return (
                204,
                self._cors(
                    {
                        "access-control-allow-methods": "GET,POST,PUT,PATCH,DELETE,OPTIONS",
                        "access-control-allow-headers": "authorization,content-type,idempotency-key",
                        "access-control-max-age": "600",
                    }
                ),
                b"",
            )
        if path.startswith("/webhooks/"):
            event = http_api_event(method, path, query, headers, body, claims=None)
            return lambda_result(self.lambdas.invoke("webhooks", event))
        claims = None
        if not path.startswith(PUBLIC_API_PREFIXES):
            try:
                claims = self.authorizer.claims(headers.get("authorization"))
            except TokenRefused as refusal:  # the JWT authorizer refuses before Lambda runs, in its own words
                challenge = f'Bearer scope="" error="invalid_token" error_description="{refusal}"'
                return 401, self._cors({**JSON, "www-authenticate": challenge}), b'{"message":"Unauthorized"}'
        event = http_api_event(method, path, query, headers, body, claims=claims)
        status, reply_headers, payload = lambda_result(self.lambdas.invoke("api", event))
        # As API Gateway does: the request id, which is the correlation id of the request's log lines.
        reply_headers = {**reply_headers, "apigw-requestid": event["requestContext"]["requestId"]}
        return status, self._cors(reply_headers), payload

    def _cors(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "access-control-allow-origin": self.cors_origin}

    def local_route(self, method: str, path: str, body: bytes, query: str = "") -> Reply:
        route = LOCAL_ROUTES.get((method, path))
        if route is None:
            return _error(404, "ROUTE_NOT_FOUND", f"No local route {method} {path}.")
        if path == "/_local/email":
            return route(self, body)
        if method in ("GET", "DELETE"):  # their input is the query string
            return route(self, dict(parse_qsl(query, keep_blank_values=True)))
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "MALFORMED_JSON", "The body is not valid JSON.")
        if not isinstance(data, dict):
            return _error(400, "VALIDATION_FAILED", "The body must be a JSON object.")
        return route(self, data)

    def demo_organization(self) -> dict[str, Any]:
        """The demo organization of earlier runs (kept in the data dir), or a new one."""
        from sqlalchemy import select

        from leadcrm.directory.tables import organizations, users
        from leadcrm.platform.db.engine import get_engine
        from leadcrm.platform.ids import parse_uuid

        saved = self.data_dir / "demo.json"
        if saved.exists():
            demo = json.loads(saved.read_text())
            with get_engine().connect() as conn:
                found = conn.execute(
                    select(organizations.c.id).where(organizations.c.id == parse_uuid(demo["organizationId"]))
                ).first()
                people = conn.execute(
                    select(users.c.id, users.c.auth_subject, users.c.email).where(
                        users.c.id.in_([parse_uuid(u["userId"]) for u in demo["users"].values()])
                    )
                ).all()
            if found and len(people) == len(demo["users"]):
                by_id = {str(p.id): p for p in people}
                for user in demo["users"].values():  # fresh tokens: old ones may have expired
                    person = by_id[user["userId"]]
                    user["token"] = self.authority.issue(person.auth_subject, person.email)
                return demo
        demo = json.loads(self.create_org({"name": "Demo Studio"})[2])["data"]
        saved.write_text(json.dumps(demo, indent=2))
        return demo

    # --- local-only routes -----------------------------------------------------------------------------
    def create_org(self, data: dict[str, Any]) -> Reply:
        """A demo organization with one user per role, made as the admin command makes one: the directory's
        platform-event consumers apply organization.created, user.created and membership.created."""
        from leadcrm.directory.administration import AdminError, DirectoryAdmin, Person
        from leadcrm.platform.db.uow import UnitOfWork
        from leadcrm.wiring import handle_event

        name = str(data.get("name") or "Demo Studio")
        suffix = uuid.uuid4().hex[:8]
        people = {
            role: Person(
                email=f"{role}+{suffix}@demo.leadcrm.local",
                subject=str(uuid.uuid4()),
                first_name=role.title(),
                last_name="Demo",
            )
            for role in ROLES
        }
        try:
            with UnitOfWork() as uow:
                admin = DirectoryAdmin(uow.connection, lambda kind, detail: handle_event(uow.connection, kind, detail))
                created = admin.create_organization(
                    name=name, owner=people["owner"], timezone=str(data.get("timezone") or "UTC")
                )
                organization_id = created["organizationId"]
                user_ids = {"owner": created["owner"]["userId"]}
                for role in ROLES[1:]:
                    added = admin.add_member(organization_id=organization_id, person=people[role], role=role)
                    user_ids[role] = added["userId"]
                uow.commit()
        except AdminError as refused:
            return _error(400, "VALIDATION_FAILED", str(refused))
        users = {
            role: {"userId": user_ids[role], "token": self.authority.issue(person.subject or "", person.email)}
            for role, person in people.items()
        }
        return _json(201, {"data": {"organizationId": organization_id, "name": name, "users": users}})

    def create_local_user(self, data: dict[str, Any]) -> Reply:
        from sqlalchemy import func, select

        from leadcrm.directory.provisioning import add_membership, create_user
        from leadcrm.directory.rules import Role
        from leadcrm.directory.tables import organizations, users
        from leadcrm.platform.db.engine import get_engine
        from leadcrm.platform.ids import parse_uuid

        role = data.get("role", "member")
        if role not in ROLES:
            return _error(400, "VALIDATION_FAILED", f"role must be one of {', '.join(ROLES)}.")
        # The account's phone as the platform would hold it (stored as written): self-signup's same-person
        # rules compare it with leads' phones.
        phone = data.get("phone")
        if phone is not None and not (isinstance(phone, str) and 3 <= len(phone.strip()) <= 32):
            return _error(400, "VALIDATION_FAILED", "phone must be a string of 3 to 32 characters.")
        if phone is not None and "\x00" in phone:
            return _error(400, "VALIDATION_FAILED", "phone must not contain NUL characters.")
        organization_id = None
        if data.get("organizationId") is not None:
            organization_id = parse_uuid(str(data["organizationId"]))
        subject = str(uuid.uuid4())
        email = data.get("email") or f"user+{subject[:8]}@demo.leadcrm.local"
        if not isinstance(email, str) or "@" not in email or "\x00" in email or len(email) > 254:
            return _error(400, "VALIDATION_FAILED", "email must be an address of at most 254 characters.")
        with get_engine().begin() as conn:
            if data.get("organizationId") is not None and (
                organization_id is None
                or conn.execute(select(organizations.c.id).where(organizations.c.id == organization_id)).first() is None
            ):
                return _error(404, "ORGANIZATION_NOT_FOUND", "No such organization.")
            # one account per email, any case (uq_users_account_lower_email): a second is a 409, not a 500
            taken = select(users.c.id).where(users.c.kind == "account", func.lower(users.c.email) == email.lower())
            if conn.execute(taken).first() is not None:
                return _error(409, "EMAIL_IN_USE", "A user with this email exists: sign in as them (/_local/tokens).")
            user_id = create_user(
                conn,
                auth_subject=subject,
                email=email,
                first_name=data.get("firstName"),
                last_name=data.get("lastName"),
                phone=phone.strip() if phone is not None else None,
            )
            if organization_id is not None:
                add_membership(conn, organization_id, user_id, Role(role))
        return _json(201, {"data": {"userId": str(user_id), "token": self.authority.issue(subject, email)}})

    def mint_token(self, data: dict[str, Any]) -> Reply:
        """A token for any subject: a user made through directory events signs in with its authSubject."""
        unknown = sorted(set(data) - {"sub", "email", "ttlSeconds"})
        if unknown:
            return _error(400, "VALIDATION_FAILED", f"Unknown field(s): {', '.join(unknown)}.")
        subject, email, ttl = data.get("sub"), data.get("email"), data.get("ttlSeconds", TOKEN_DAYS * 86400)
        if not isinstance(subject, str) or not subject.strip() or len(subject) > 255:
            return _error(400, "VALIDATION_FAILED", "sub must be a non-empty string of at most 255 characters.")
        if email is not None and (not isinstance(email, str) or len(email) > 320):
            return _error(400, "VALIDATION_FAILED", "email must be a string of at most 320 characters.")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or not 1 <= ttl <= MAX_TTL_SECONDS:
            return _error(400, "VALIDATION_FAILED", f"ttlSeconds must be an integer from 1 to {MAX_TTL_SECONDS}.")
        token, expires_at = self.authority.mint(subject, email, ttl)
        return _json(201, {"data": {"token": token, "expiresAt": expires_at.isoformat()}})

    def serve_jwks(self, data: dict[str, Any]) -> Reply:
        return _json(200, self.authority.jwks())

    def serve_openid_configuration(self, data: dict[str, Any]) -> Reply:
        return _json(200, self.authority.openid_configuration())

    def deliver_email(self, raw: bytes) -> Reply:
        from leadcrm.platform.adapters.aws import client

        if not raw.strip():
            return _error(400, "VALIDATION_FAILED", "Send a raw RFC 822 message as the body.")
        key = f"{aws.INBOUND_PREFIX}{uuid.uuid4()}"
        client("s3").put_object(Bucket=aws.INBOUND_BUCKET, Key=key, Body=raw)
        return _json(202, {"data": {"bucket": aws.INBOUND_BUCKET, "key": key}})

    def list_sent_emails(self, data: dict[str, Any]) -> Reply:
        """What SES sent, oldest first, with each mail's Reply-To, headers, configuration set and tags;
        `?limit=` (1–500, default 100) and `?cursor=` (a `nextCursor`)."""
        try:
            limit = int(data.get("limit") or SENT_EMAILS_PAGE)
        except ValueError:
            limit = 0
        if not 1 <= limit <= MAX_SENT_EMAILS_PAGE:
            return _error(400, "VALIDATION_FAILED", f"limit must be an integer from 1 to {MAX_SENT_EMAILS_PAGE}.")
        start = 0
        if data.get("cursor"):
            start = _decode_offset(str(data["cursor"]))
            if start is None:
                return _error(400, "INVALID_CURSOR", "The cursor is not one this route returned.")
        sent = ses.sent_emails()
        page = sent[start : start + limit]
        more = start + limit < len(sent)
        return _json(200, {"data": page, "nextCursor": _encode_offset(start + limit) if more else None})

    def inject_ses_event(self, data: dict[str, Any]) -> Reply:
        """SES's event about a sent mail, in AWS's shape, on the default bus as SES puts it: the same rule
        routes it to task_lifecycle. `{messageId, type, bounceType?, timestamp?}`; the same messageId, type
        and timestamp again is a replay of the same event."""
        unknown = sorted(set(data) - {"messageId", "type", "bounceType", "timestamp"})
        if unknown:
            return _error(400, "VALIDATION_FAILED", f"Unknown field(s): {', '.join(unknown)}.")
        message_id, kind = data.get("messageId"), data.get("type")
        if not isinstance(message_id, str) or not isinstance(kind, str):
            return _error(400, "VALIDATION_FAILED", "Send {messageId: string, type: string, bounceType?, timestamp?}.")
        timestamp = None
        if data.get("timestamp") is not None:
            try:
                timestamp = datetime.fromisoformat(str(data["timestamp"]))
            except ValueError:
                timestamp = None
            if timestamp is None or timestamp.tzinfo is None:
                return _error(400, "VALIDATION_FAILED", "timestamp must be an ISO 8601 instant with a zone.")
        mail = next((m for m in ses.sent_emails() if m["messageId"] == message_id), None)
        if mail is None:
            return _error(404, "MESSAGE_NOT_FOUND", "SES sent no mail with this messageId.")
        bounce_type = data.get("bounceType")
        try:
            detail_type, detail = ses.ses_event(
                mail, kind, bounce_type=str(bounce_type) if bounce_type is not None else None, timestamp=timestamp
            )
        except ses.EventRefused as refused:
            return _error(refused.status, refused.code, str(refused))
        event_id = ses.publish(detail_type, detail)
        return _json(202, {"data": {"eventId": event_id, "detailType": detail_type, "detail": detail}})

    def put_event(self, data: dict[str, Any]) -> Reply:
        from leadcrm.platform.adapters.aws import client

        if not isinstance(data.get("detailType"), str) or not isinstance(data.get("detail"), dict):
            return _error(400, "VALIDATION_FAILED", "Send {detailType: string, detail: object, source?: string}.")
        source = str(data.get("source") or "platform.local")
        response = client("events").put_events(
            Entries=[
                {
                    "EventBusName": aws.EVENT_BUS,
                    "Source": source,
                    "DetailType": data["detailType"],
                    "Detail": json.dumps(data["detail"]),
                }
            ]
        )
        return _json(202, {"data": {"eventId": response["Entries"][0].get("EventId")}})

    def register_graph_lead(self, data: dict[str, Any]) -> Reply:
        lead_id = self.graph.register(data)
        if lead_id is None:
            return _error(400, "VALIDATION_FAILED", "Send the lead as Graph returns it, with a string id.")
        return _json(201, {"data": {"id": lead_id}})

    def meta_events(self, data: dict[str, Any]) -> Reply:
        """The CRM events the local Conversions API received, oldest first."""
        return _json(200, {"data": self.graph.recorded_events()})

    def whatsapp_graph(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Reply:
        """The Cloud API's send and template list, under the local Graph (infra/local/whatsapp.py)."""
        account = path.removeprefix(GRAPH_PREFIX).split("/")[0]
        if method == "POST" and path.endswith("/messages"):
            try:
                data = json.loads(body or b"null")
            except ValueError:
                data = None
            return _json(*self.whatsapp.send(account, headers.get("authorization"), data))
        if method == "GET" and path.endswith("/message_templates"):
            return _json(*self.whatsapp.templates(account, headers.get("authorization")))
        return _error(405, "METHOD_NOT_ALLOWED", "POST …/messages, GET …/message_templates.")

    def list_whatsapp_sent(self, data: dict[str, Any]) -> Reply:
        """What the WhatsApp stand-in was asked to send, oldest first."""
        return _json(200, {"data": self.whatsapp.sent()})

    def register_whatsapp_templates(self, data: dict[str, Any]) -> Reply:
        account, templates = data.get("businessAccountId"), data.get("templates")
        if not isinstance(account, str) or not account or not isinstance(templates, list):
            return _error(400, "VALIDATION_FAILED", "Send {businessAccountId: string, templates: [...]}.")
        if not all(isinstance(t, dict) for t in templates):
            return _error(400, "VALIDATION_FAILED", "Each template is an object (name, language, status, …).")
        self.whatsapp.register_templates(account, templates)
        return _json(201, {"data": {"businessAccountId": account, "templates": len(templates)}})

    def tick(self, data: dict[str, Any]) -> Reply:
        job = data.get("job")
        if job is not None and job not in JOB_RATES_SECONDS:
            return _error(400, "UNKNOWN_JOB", f"job must be one of {', '.join(JOB_RATES_SECONDS)}.")
        return _json(200, {"data": self.scheduler.run_now(job)})

    def idle(self, data: dict[str, Any]) -> Reply:
        from leadcrm.platform.adapters.aws import client
        from leadcrm.platform.db.engine import get_engine
        from leadcrm.platform.outbox import undelivered_count

        sqs = client("sqs")
        waiting = {}
        for name in aws.WORK_QUEUES:
            attributes = sqs.get_queue_attributes(
                QueueUrl=self.resources.queues[name],
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            waiting[name] = sum(int(v) for v in attributes.values())
        with get_engine().connect() as conn:
            unpublished = undelivered_count(conn)
        busy = [p.function for p in self.pollers if p.busy]
        idle = not busy and not any(waiting.values()) and unpublished == 0
        return _json(200, {"data": {"idle": idle, "queues": waiting, "busy": busy, "unpublishedEvents": unpublished}})


LOCAL_ROUTES = {
    ("POST", "/_local/orgs"): LocalStack.create_org,
    ("POST", "/_local/users"): LocalStack.create_local_user,
    ("POST", "/_local/tokens"): LocalStack.mint_token,
    ("GET", "/_local/.well-known/jwks.json"): LocalStack.serve_jwks,
    ("GET", "/_local/.well-known/openid-configuration"): LocalStack.serve_openid_configuration,
    ("POST", "/_local/email"): LocalStack.deliver_email,
    ("GET", "/_local/sent-emails"): LocalStack.list_sent_emails,
    ("POST", "/_local/ses/events"): LocalStack.inject_ses_event,
    ("POST", "/_local/events"): LocalStack.put_event,
    ("POST", "/_local/tick"): LocalStack.tick,
    ("POST", "/_local/graph/leads"): LocalStack.register_graph_lead,
    ("GET", "/_local/meta/events"): LocalStack.meta_events,
    ("GET", "/_local/whatsapp/sent"): LocalStack.list_whatsapp_sent,
    ("POST", "/_local/whatsapp/templates"): LocalStack.register_whatsapp_templates,
    ("GET", "/_local/idle"): LocalStack.idle,
    ("POST", "/_local/faults"): faults.arm_route,
    ("GET", "/_local/faults"): faults.list_route,
    ("DELETE", "/_local/faults"): faults.clear_route,
    **CLOCK_ROUTES,  # GET/POST/DELETE /_local/clock (infra/local/clock.py)
}
