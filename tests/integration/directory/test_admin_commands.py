"""The operators' admin commands (make admin): through the admin function's handler, on moto and PostgreSQL.

Each write goes through the directory's platform-event consumers, in one transaction, logged with who ran it.
"""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete, func, select

from leadcrm.analytics.tables import analytics_daily_funnel
from leadcrm.directory.tables import memberships, organizations
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path

OPERATOR = "arn:aws:iam::123456789012:user/ops-dana"


@pytest.fixture(autouse=True)
def _bus(event_bus: str) -> None:
    """Admin writes publish their outbox events after commit; the bus exists."""


@pytest.fixture
def admin(ctx: Any):
    from admin.handler import lambda_handler

    def run(command: str, **args: Any) -> dict[str, Any]:
        return lambda_handler({"command": command, "args": args, "operator": OPERATOR}, ctx)

    return run


def _organization(admin, **overrides: Any) -> tuple[str, str]:
    subject = f"user_{uuid.uuid4().hex}"
    args = {"name": "Dana's Studio", "ownerEmail": f"{subject}@example.com", "ownerSubject": subject, **overrides}
    answer = admin("create-organization", **args)
    assert answer["ok"], answer
    return answer["data"]["organizationId"], subject


def _count_organizations() -> int:
    with get_engine().connect() as conn:
        return conn.execute(select(func.count()).select_from(organizations)).scalar_one()


def test_create_organization_admits_its_owner(admin) -> None:
    org_id, subject = _organization(admin, timezone="Asia/Jerusalem", country="il")
    assert call_api("GET", leads_path(org_id), sub=subject).status == 200
    shown = admin("show-organization", organizationId=org_id)["data"]
    assert (shown["timezone"], shown["country"]) == ("Asia/Jerusalem", "IL")
    assert [m["role"] for m in shown["members"]] == ["owner"]


def test_a_refused_command_writes_nothing(admin) -> None:
    before = _count_organizations()
    answer = admin("create-organization", name="Studio", ownerEmail="not-an-address", ownerSubject="s")
    assert answer == {"ok": False, "error": {"code": "INVALID_EMAIL", "message": answer["error"]["message"]}}
    assert _count_organizations() == before


def test_an_invalid_timezone_is_refused_with_its_reason_before_anything_is_made(admin) -> None:
    before = _count_organizations()
    answer = admin("create-organization", name="S", ownerEmail="a@example.com", ownerSubject="s", timezone="Mars/Base")
    assert answer["error"]["code"] == "INVALID_ORGANIZATION"
    assert "timezone" in answer["error"]["message"]
    assert _count_organizations() == before


def test_a_missing_argument_is_named(admin) -> None:
    answer = admin("add-member", organizationId=str(uuid.uuid4()), role="coach")
    assert answer["error"] == {"code": "MISSING_ARGUMENT", "message": "email is required."}


def test_an_unknown_organization_is_refused(admin) -> None:
    answer = admin("add-member", organizationId=str(uuid.uuid4()), email="c@example.com", subject="c", role="coach")
    assert answer["error"]["code"] == "ORGANIZATION_NOT_FOUND"


def test_an_unknown_command_is_refused(admin) -> None:
    assert admin("drop-database")["error"]["code"] == "UNKNOWN_COMMAND"


def test_an_added_coach_is_staff_at_once(admin) -> None:
    org_id, _ = _organization(admin)
    added = admin("add-member", organizationId=org_id, email="coach@example.com", subject="coach-sub", role="coach")
    assert added["ok"], added
    assert call_api("GET", leads_path(org_id), sub="coach-sub").status == 200


def test_adding_an_existing_member_twice_is_refused(admin) -> None:
    org_id, subject = _organization(admin)
    again = admin("add-member", organizationId=org_id, email=f"{subject}@example.com", subject=subject, role="coach")
    assert again["error"]["code"] == "ALREADY_A_MEMBER"


def test_set_role_applies_to_the_next_request(admin) -> None:
    org_id, _ = _organization(admin)
    admin("add-member", organizationId=org_id, email="c2@example.com", subject="c2-sub", role="coach")
    changed = admin("set-role", organizationId=org_id, member="c2@example.com", role="member")
    assert changed["ok"] and changed["data"]["previousRole"] == "coach"
    assert call_api("GET", leads_path(org_id), sub="c2-sub").status == 403


def test_remove_member_refuses_the_next_request(admin) -> None:
    org_id, _ = _organization(admin)
    added = admin("add-member", organizationId=org_id, email="c3@example.com", subject="c3-sub", role="admin")
    assert admin("remove-member", organizationId=org_id, member=added["data"]["userId"])["ok"]
    response = call_api("GET", leads_path(org_id), sub="c3-sub")
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")
    with get_engine().connect() as conn:
        live = conn.execute(
            select(func.count()).where(
                memberships.c.id == uuid.UUID(added["data"]["membershipId"]), memberships.c.deleted_at.is_(None)
            )
        ).scalar_one()
    assert live == 0


@pytest.fixture
def admin_log() -> Iterator[io.StringIO]:
    """The admin function's JSON log lines, formatted as Lambda writes them (with the appended keys)."""
    from admin.handler import logger

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    std_logger = logging.getLogger(logger.name)
    std_logger.addHandler(handler)
    yield stream
    std_logger.removeHandler(handler)


def test_every_command_is_logged_with_its_operator(admin, admin_log: io.StringIO) -> None:
    org_id, _ = _organization(admin)
    admin("show-organization", organizationId=org_id)
    lines = [json.loads(line) for line in admin_log.getvalue().splitlines()]
    done = [line for line in lines if line.get("message") == "admin command done"]
    assert {(line["command"], line["operator"]) for line in done} == {
        ("create-organization", OPERATOR),
        ("show-organization", OPERATOR),
    }


def test_the_cli_maps_its_flags_onto_the_admin_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.admin import command_args, parser

    options = parser().parse_args(
        ["add-member", "--organization", "o-1", "--email", "e@example.com", "--first-name", "Dana", "--role", "coach"]
    )
    assert command_args(options) == {
        "organizationId": "o-1",
        "email": "e@example.com",
        "firstName": "Dana",
        "role": "coach",
    }


def test_the_cli_runs_locally_against_the_configured_database(capsys: pytest.CaptureFixture[str]) -> None:
    from infra.admin import main

    code = main(
        ["create-organization", "--name", "CLI Studio", "--owner-email", "cli@example.com", "--owner-subject", "cli"]
    )
    out = capsys.readouterr().out
    answer = json.loads(out[out.index("{\n") :])
    assert code == 0 and answer["ok"] and answer["data"]["name"] == "CLI Studio"
    assert call_api("GET", leads_path(answer["data"]["organizationId"]), sub="cli").status == 200


def test_rebuild_analytics_rollups_recomputes_an_organizations_rollups(admin) -> None:
    org_id, subject = _organization(admin)
    created = call_api("POST", leads_path(org_id), sub=subject, body={"name": "Noa", "phone": "+972501234567"})
    assert created.status == 201, created.body
    with get_engine().begin() as conn:
        conn.execute(
            delete(analytics_daily_funnel).where(analytics_daily_funnel.c.organization_id == uuid.UUID(org_id))
        )
    answer = admin("rebuild-analytics-rollups", organizationId=org_id)
    assert answer == {"ok": True, "data": {"organizationId": org_id, "leadsCounted": 1}}
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(func.count()).where(analytics_daily_funnel.c.organization_id == uuid.UUID(org_id))
        ).scalar_one()
    assert rows > 0


def test_rebuild_analytics_rollups_of_an_unknown_organization_is_refused(admin) -> None:
    answer = admin("rebuild-analytics-rollups", organizationId=str(uuid.uuid4()))
    assert answer["error"]["code"] == "ORGANIZATION_NOT_FOUND"
