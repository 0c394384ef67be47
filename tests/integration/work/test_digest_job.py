"""The morning digest (`daily_digest`): each staff member's urgent counts by SES in the organization's
morning, once per organization-local day; nothing when there is nothing urgent; a failed send is recorded."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

import boto3
import pytest
from sqlalchemy import select, update

from leadcrm.directory.tables import organizations, users
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.tables import staff_digest_deliveries
from tests.support.erase_helpers import make_task
from tests.support.factories import make_caller, make_organization
from tests.support.lead_moves_helpers import create_lead, set_lead_columns

REGION = "eu-west-1"
# 22:30 UTC on 10 March is 07:30 on 11 March in Tokyo (UTC+9): Tokyo is in its morning, UTC is not.
TOKYO_MORNING = datetime(2026, 3, 10, 22, 30, tzinfo=UTC)
TOKYO_TODAY = date(2026, 3, 11)


@pytest.fixture
def verified_sender() -> None:
    boto3.client("sesv2", region_name=REGION).create_email_identity(EmailIdentity="mail.leadcrm.local")


def _sent_to(*addresses: str) -> list[Any]:
    from moto.ses.models import ses_backends

    wanted = set(addresses)
    return [
        message
        for message in ses_backends["123456789012"][REGION].sent_messages
        if wanted & set(message.destinations.get("ToAddresses", []))
    ]


def _set_timezone(org_id: uuid.UUID, timezone: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org_id).values(timezone=timezone))


def _deliveries(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(staff_digest_deliveries).where(staff_digest_deliveries.c.organization_id == org_id)
        ).mappings()
        return [dict(r) for r in rows]


def _run(now: datetime = TOKYO_MORNING) -> dict[str, int]:
    from leadcrm.work.digest import run_daily_digest

    return run_daily_digest(now)


@pytest.fixture
def tokyo_owner():
    owner = make_caller(role="owner", organization=make_organization(name="Tokyo Studio"))
    _set_timezone(owner.org_id, "Asia/Tokyo")
    return owner


def test_a_staff_member_gets_their_counts_in_the_organizations_morning(verified_sender, tokyo_owner):
    coach = make_caller(role="coach", organization=tokyo_owner.organization)
    make_task(tokyo_owner.org_id, assignee=coach.user.id, due_date=date(2026, 3, 9))
    make_task(tokyo_owner.org_id, assignee=coach.user.id, due_date=TOKYO_TODAY)
    make_task(tokyo_owner.org_id, assignee=coach.user.id, due_date=TOKYO_TODAY)
    make_task(tokyo_owner.org_id, assignee=coach.user.id, due_date=date(2026, 3, 12))  # tomorrow: not urgent
    _run()
    (message,) = _sent_to(coach.user.email)
    assert message.source == "LeadCRM <no-reply@mail.leadcrm.local>"
    assert message.subject == "Tokyo Studio: 1 overdue task, 2 tasks due today"
    assert "Overdue tasks: 1" in message.body and "Tasks due today: 2" in message.body
    assert "Leads needing attention" not in message.body  # lead counts are for owner/admin only
    (delivery,) = [d for d in _deliveries(tokyo_owner.org_id) if d["user_id"] == coach.user.id]
    assert (delivery["status"], delivery["local_date"], delivery["counts"]) == (
        "sent",
        TOKYO_TODAY,
        {"overdueTasks": 1, "dueTodayTasks": 2},
    )
    assert delivery["provider_message_id"] == message.id


def test_running_twice_the_same_local_day_sends_nothing_more(verified_sender, tokyo_owner):
    make_task(tokyo_owner.org_id, assignee=tokyo_owner.user.id, due_date=TOKYO_TODAY)
    _run()
    _run(datetime(2026, 3, 11, 0, 45, tzinfo=UTC))  # 09:45 in Tokyo, same day
    assert len(_sent_to(tokyo_owner.user.email)) == 1
    assert len(_deliveries(tokyo_owner.org_id)) == 1


def test_the_next_local_morning_sends_again(verified_sender, tokyo_owner):
    make_task(tokyo_owner.org_id, assignee=tokyo_owner.user.id, due_date=TOKYO_TODAY)
    _run()
    _run(datetime(2026, 3, 11, 22, 15, tzinfo=UTC))  # 07:15 on 12 March in Tokyo
    assert len(_sent_to(tokyo_owner.user.email)) == 2
    assert sorted(d["local_date"] for d in _deliveries(tokyo_owner.org_id)) == [TOKYO_TODAY, date(2026, 3, 12)]


@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 3, 10, 21, 59, tzinfo=UTC),  # 06:59 in Tokyo: not yet
        datetime(2026, 3, 11, 1, 0, tzinfo=UTC),  # 10:00 in Tokyo: the morning is over
    ],
)
def test_nothing_is_sent_outside_the_organizations_morning(verified_sender, tokyo_owner, now):
    make_task(tokyo_owner.org_id, assignee=tokyo_owner.user.id, due_date=date(2026, 3, 1))
    _run(now)
    assert _sent_to(tokyo_owner.user.email) == []
    assert _deliveries(tokyo_owner.org_id) == []


def test_an_organization_in_another_timezone_waits_for_its_own_morning(verified_sender):
    london = make_caller(role="owner")
    _set_timezone(london.org_id, "Europe/London")
    make_task(london.org_id, assignee=london.user.id, due_date=date(2026, 3, 1))
    _run()  # 22:30 in London
    assert _sent_to(london.user.email) == []
    _run(datetime(2026, 3, 11, 7, 5, tzinfo=UTC))  # 07:05 in London (GMT in March)
    assert len(_sent_to(london.user.email)) == 1


def test_nothing_is_sent_when_every_count_is_zero(verified_sender, tokyo_owner):
    make_task(tokyo_owner.org_id, assignee=tokyo_owner.user.id, due_date=date(2026, 3, 20))
    make_task(tokyo_owner.org_id, assignee=tokyo_owner.user.id, due_date=date(2026, 3, 1), status="completed")
    _run()
    assert _sent_to(tokyo_owner.user.email) == []
    assert _deliveries(tokyo_owner.org_id) == []


def test_members_staff_without_email_and_former_staff_get_no_digest(verified_sender, tokyo_owner):
    member = make_caller(role="member", organization=tokyo_owner.organization)
    gone = make_caller(role="coach", organization=tokyo_owner.organization, deleted=True)
    silent = make_caller(role="coach", organization=tokyo_owner.organization)
    with get_engine().begin() as conn:
        conn.execute(update(users).where(users.c.id == silent.user.id).values(email=None))
    for person in (member, gone, silent):
        make_task(tokyo_owner.org_id, assignee=person.user.id, due_date=date(2026, 3, 1))
    _run()
    assert _sent_to(member.user.email, gone.user.email) == []
    assert _deliveries(tokyo_owner.org_id) == []


def test_an_owner_is_told_the_leads_needing_attention(verified_sender, tokyo_owner):
    lead = create_lead(tokyo_owner, "Due Follow Up")
    set_lead_columns(lead["id"], next_action_at=datetime(2026, 3, 10, 1, 0, tzinfo=UTC))
    from tests.support.erase_helpers import set_task_status, task_rows

    for task in task_rows(lead_id=lead["id"]):  # no open contact task stands for the follow-up
        set_task_status(task["id"], "completed")
    _run()
    (message,) = _sent_to(tokyo_owner.user.email)
    assert "Leads needing attention: 1" in message.body
    assert "Due Follow Up" not in message.body and "Due Follow Up" not in message.subject


def test_a_failed_send_is_recorded_and_not_retried_the_same_day(tokyo_owner):
    """No verified sender identity: SES refuses the mail."""
    make_task(tokyo_owner.org_id, assignee=tokyo_owner.user.id, due_date=TOKYO_TODAY)
    _run()
    (delivery,) = _deliveries(tokyo_owner.org_id)
    assert delivery["status"] == "failed"
    assert delivery["error"].startswith("MessageRejected")
    assert delivery["sent_at"] is None
    boto3.client("sesv2", region_name=REGION).create_email_identity(EmailIdentity="mail.leadcrm.local")
    _run(datetime(2026, 3, 10, 23, 0, tzinfo=UTC))
    assert _sent_to(tokyo_owner.user.email) == []
    assert [d["status"] for d in _deliveries(tokyo_owner.org_id)] == ["failed"]


def test_the_scheduled_invocation_runs_the_job(verified_sender, ctx):
    from task_lifecycle.handler import lambda_handler

    result = lambda_handler({"job": "daily_digest"}, ctx)
    assert result["job"] == "daily_digest"
    assert {"organizations", "sent", "failed"} <= set(result)
