"""Integration connections (spec "Ingestion routes on an active connection"): owner/admin connect and
disconnect a Meta Page or a WhatsApp number; the token goes to Secrets Manager, never to the database or
back to the dashboard; one active connection per external account."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from leadcrm.ingestion.tables import integration_connections
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.aws import aws_client
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import connection_row, fresh_id

TOKEN = "EAAGm0PX4ZCpsBA-secret-page-token"


def _meta(caller, body: dict | None = None, *, method: str = "POST", suffix: str = ""):
    return call_api(method, f"/organizations/{caller.org_id}/integrations/meta{suffix}", sub=caller.sub, body=body)


def _secret_value(arn: str) -> dict:
    return json.loads(aws_client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_an_owner_connects_a_page_and_gets_the_connection_without_its_token(owner):
    page_id = fresh_id()
    response = _meta(owner, {"pageId": page_id, "accessToken": TOKEN, "pageName": "Studio"})

    assert response.status == 201
    connection = response.data
    assert (connection["provider"], connection["externalAccountId"], connection["status"]) == (
        "meta_lead_ads",
        page_id,
        "active",
    )
    assert connection["displayName"] == "Studio"
    assert TOKEN not in json.dumps(response.body)
    assert "secretArn" not in connection


def test_the_token_is_kept_in_a_secret_named_after_the_page_and_the_database_keeps_only_its_arn(owner):
    page_id = fresh_id()
    connection = _meta(owner, {"pageId": page_id, "accessToken": TOKEN}).data
    row = connection_row(connection["id"])
    assert row["secret_arn"].startswith("arn:aws:secretsmanager:")
    assert f":secret:leadcrm/integrations/meta_lead_ads/{page_id}-" in row["secret_arn"]
    assert _secret_value(row["secret_arn"]) == {"accessToken": TOKEN}
    assert TOKEN not in json.dumps({k: str(v) for k, v in row.items()})


def test_an_admin_may_connect_too(owner):
    admin = make_caller(role="admin", organization=owner.organization)
    assert _meta(admin, {"pageId": fresh_id(), "accessToken": TOKEN}).status == 201


def test_a_coach_may_not_connect(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    response = _meta(coach, {"pageId": fresh_id(), "accessToken": TOKEN})
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")


def test_a_page_connected_to_another_organization_is_a_409_and_no_secret_is_left_behind(owner):
    page_id = fresh_id()
    _meta(owner, {"pageId": page_id, "accessToken": TOKEN})
    other = make_caller(role="owner")
    secrets_before = len(aws_client("secretsmanager").list_secrets()["SecretList"])

    response = _meta(other, {"pageId": page_id, "accessToken": "another-token-123"})

    assert (response.status, response.error_code) == (409, "CONNECTION_IN_USE")
    assert len(aws_client("secretsmanager").list_secrets()["SecretList"]) == secrets_before


def test_reconnecting_the_same_page_replaces_the_token_of_the_same_connection(owner):
    page_id = fresh_id()
    first = _meta(owner, {"pageId": page_id, "accessToken": TOKEN}).data
    again = _meta(owner, {"pageId": page_id, "accessToken": "a-fresh-token-456"})

    assert again.status == 200
    assert again.data["id"] == first["id"]
    assert _secret_value(connection_row(first["id"])["secret_arn"]) == {"accessToken": "a-fresh-token-456"}


def test_a_reconnect_overwrites_the_value_of_the_same_secret(owner):
    page_id = fresh_id()
    first = _meta(owner, {"pageId": page_id, "accessToken": TOKEN}).data
    arn = connection_row(first["id"])["secret_arn"]

    _meta(owner, {"pageId": page_id, "accessToken": "a-fresh-token-456"})

    assert connection_row(first["id"])["secret_arn"] == arn
    assert _secret_value(f"leadcrm/integrations/meta_lead_ads/{page_id}") == {"accessToken": "a-fresh-token-456"}


def test_a_reconnect_moves_a_token_kept_under_the_old_per_connection_name_to_the_page_name(owner):
    from leadcrm.platform.db.engine import get_engine as engine

    page_id = fresh_id()
    connection = _meta(owner, {"pageId": page_id, "accessToken": TOKEN}).data
    secrets = aws_client("secretsmanager")
    legacy = secrets.create_secret(
        Name=f"leadcrm/integrations/meta_lead_ads/{connection['id']}", SecretString=json.dumps({"accessToken": TOKEN})
    )["ARN"]
    connection_id = connection_row(connection["id"])["id"]
    with engine().begin() as conn:  # as a connection made before secrets were named after the page
        conn.execute(
            integration_connections.update()
            .where(integration_connections.c.id == connection_id)
            .values(secret_arn=legacy)
        )

    assert _meta(owner, {"pageId": page_id, "accessToken": "a-fresh-token-456"}).status == 200

    assert f"meta_lead_ads/{page_id}-" in connection_row(connection["id"])["secret_arn"]
    with pytest.raises(secrets.exceptions.ResourceNotFoundException):
        secrets.get_secret_value(SecretId=legacy)


def test_the_same_organization_reconnects_a_page_after_disconnecting_it(owner):
    page_id = fresh_id()
    first = _meta(owner, {"pageId": page_id, "accessToken": TOKEN}).data
    _meta(owner, method="DELETE", suffix=f"/{first['id']}")

    again = _meta(owner, {"pageId": page_id, "accessToken": "a-fresh-token-456"})

    assert again.status == 201
    assert _secret_value(connection_row(again.data["id"])["secret_arn"]) == {"accessToken": "a-fresh-token-456"}


def test_disconnecting_deletes_the_secret_and_frees_the_page_for_another_organization(owner):
    page_id = fresh_id()
    connection = _meta(owner, {"pageId": page_id, "accessToken": TOKEN}).data
    arn = connection_row(connection["id"])["secret_arn"]

    response = _meta(owner, method="DELETE", suffix=f"/{connection['id']}")

    assert response.status == 200
    assert response.data["status"] == "disconnected"
    assert response.data["disconnectedAt"] is not None
    assert connection_row(connection["id"])["secret_arn"] is None
    secrets = aws_client("secretsmanager")
    with pytest.raises(secrets.exceptions.ResourceNotFoundException):
        secrets.get_secret_value(SecretId=arn)
    assert _meta(make_caller(role="owner"), {"pageId": page_id, "accessToken": TOKEN}).status == 201


def test_disconnecting_twice_answers_the_same_disconnected_connection(owner):
    connection = _meta(owner, {"pageId": fresh_id(), "accessToken": TOKEN}).data
    first = _meta(owner, method="DELETE", suffix=f"/{connection['id']}")
    second = _meta(owner, method="DELETE", suffix=f"/{connection['id']}")
    assert second.status == 200
    assert second.data["disconnectedAt"] == first.data["disconnectedAt"]


def test_another_organizations_connection_answers_404_like_a_random_id(owner):
    connection = _meta(owner, {"pageId": fresh_id(), "accessToken": TOKEN}).data
    other = make_caller(role="owner")
    foreign = _meta(other, method="DELETE", suffix=f"/{connection['id']}")
    random = _meta(other, method="DELETE", suffix=f"/{fresh_id()}")
    assert (foreign.status, foreign.error_code) == (404, "CONNECTION_NOT_FOUND")
    assert (random.status, random.error_code) == (404, "CONNECTION_NOT_FOUND")
    assert connection_row(connection["id"])["status"] == "active"


def test_a_meta_connection_is_not_reachable_through_the_whatsapp_routes(owner):
    connection = _meta(owner, {"pageId": fresh_id(), "accessToken": TOKEN}).data
    response = call_api(
        "DELETE", f"/organizations/{owner.org_id}/integrations/whatsapp/{connection['id']}", sub=owner.sub
    )
    assert response.status == 404


def test_the_list_shows_the_organizations_connections_of_the_provider_only(owner):
    page = _meta(owner, {"pageId": fresh_id(), "accessToken": TOKEN}).data
    call_api(
        "POST",
        f"/organizations/{owner.org_id}/integrations/whatsapp",
        sub=owner.sub,
        body={"phoneNumberId": fresh_id(), "accessToken": TOKEN},
    )
    _meta(make_caller(role="owner"), {"pageId": fresh_id(), "accessToken": TOKEN})

    listed = _meta(owner, method="GET")

    assert listed.status == 200
    assert [c["id"] for c in listed.data] == [page["id"]]
    assert listed.body["nextCursor"] is None


def test_a_whatsapp_number_is_connected_by_its_phone_number_id(owner):
    phone_number_id = fresh_id()
    response = call_api(
        "POST",
        f"/organizations/{owner.org_id}/integrations/whatsapp",
        sub=owner.sub,
        body={"phoneNumberId": phone_number_id, "accessToken": TOKEN, "displayPhoneNumber": "+1 555 078 3881"},
    )
    assert response.status == 201
    assert (response.data["provider"], response.data["externalAccountId"]) == ("whatsapp_cloud", phone_number_id)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"pageId": "123"},
        {"accessToken": TOKEN},
        {"pageId": "not-digits", "accessToken": TOKEN},
        {"pageId": "123", "accessToken": "has spaces in it"},
        {"pageId": "123", "accessToken": TOKEN, "unknown": 1},
    ],
)
def test_a_bad_connect_body_is_a_400_and_nothing_is_stored(owner, body):
    response = _meta(owner, body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(integration_connections.c.id).where(integration_connections.c.organization_id == owner.org_id)
        ).all()
    assert rows == []


def test_two_organizations_connecting_one_page_at_once_leave_the_winners_token_in_its_secret(monkeypatch):
    """Through the service (the API handler, like a Lambda container, serves one request at a time)."""
    from leadcrm.directory.rules import Actor, Role
    from leadcrm.ingestion.connections import connect
    from leadcrm.platform.db.uow import UnitOfWork
    from leadcrm.platform.errors import Conflict
    from tests.support.concurrency import run_together
    from tests.support.ingestion_helpers import wide_pool

    page_id = fresh_id()
    callers = [make_caller(role="owner") for _ in range(4)]

    def connect_as(caller) -> str:
        actor = Actor(caller.user.id, caller.org_id, caller.membership.id, Role.OWNER, frozenset())
        try:
            with UnitOfWork() as uow:
                connect(uow, actor, "meta_lead_ads", page_id, f"token-of-{caller.org_id}", None)
            return "connected"
        except Conflict:
            return "in_use"

    with wide_pool(monkeypatch):
        outcomes, errors = run_together([(lambda c=c: connect_as(c)) for c in callers])

    assert errors == [None] * 4
    assert sorted(outcomes) == ["connected", "in_use", "in_use", "in_use"]
    winner = callers[outcomes.index("connected")]
    assert _secret_value(f"leadcrm/integrations/meta_lead_ads/{page_id}") == {
        "accessToken": f"token-of-{winner.org_id}"
    }
