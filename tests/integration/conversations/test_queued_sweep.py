"""The queued sweep: mail left `queued` because the function died between committing it and recording SES's
answer. Never claimed (the send never reached SES): retried once, through the claim, with the gate checked
again. Claimed (it may have reached SES): `unknown`, never re-sent, unless an SES event proves SES took it.
Whatever happens and however often the sweep runs, no message is mailed twice."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from botocore.exceptions import ClientError
from sqlalchemy import func, select, update

from leadcrm.conversations import sending
from leadcrm.conversations.queued_sweep import run_queued_email_sweep
from leadcrm.conversations.rules.delivery import MailRef
from leadcrm.conversations.tables import conversation_messages
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.wiring import JOBS
from tests.support.conversations_helpers import (
    email_lead,
    messages_of,
    open_conversation,
    revoke_email,
    sent_mails,
    verify_sender,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead, lead_row
from tests.support.ses_events import CONFIGURATION_SET, deliver_ses_events, ses_detail
from tests.support.tickets_helpers import actor_of


@pytest.fixture(autouse=True)
def _ses(event_bus, monkeypatch) -> None:
    verify_sender()
    monkeypatch.setenv("SES_CONFIGURATION_SET", CONFIGURATION_SET)
    # The sweep looks at every organization and the database outlives each test: what earlier tests left
    # queued long ago is resolved first, so the counts below are this test's own.
    run_queued_email_sweep(send=lambda mail: f"drained-{uuid.uuid4()}")


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _thread(owner, lead: dict[str, Any]) -> uuid.UUID:
    response = open_conversation(owner, {"leadId": lead["id"], "channel": "email"})
    assert response.status in (200, 201), response.body
    return uuid.UUID(response.data["conversation"]["id"])


def _died_after_commit(owner, lead: dict[str, Any], *, claimed: bool, minutes_ago: int = 10) -> uuid.UUID:
    """A send whose function died after committing the queued message (and, if `claimed`, its claim): what
    the API's first transaction leaves behind, `minutes_ago` old."""
    conversation_id = _thread(owner, lead)
    with UnitOfWork() as uow:
        queued = sending.queue_email(uow.connection, actor_of(owner), conversation_id, "Trial on Friday?", "Trial")
        uow.commit()
    message_id = queued.message["id"]
    if claimed:
        assert sending.claim_send(message_id)
    with get_engine().begin() as conn:
        conn.execute(
            update(conversation_messages)
            .where(conversation_messages.c.id == message_id)
            .values(created_at=func.now() - timedelta(minutes=minutes_ago))
        )
    return message_id


def _row(message_id: uuid.UUID) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(
            conn.execute(select(conversation_messages).where(conversation_messages.c.id == message_id)).mappings().one()
        )


def _mails_to(address: str) -> int:
    return sum(1 for mail in sent_mails() if str(mail["To"]) == address)


def test_the_sweep_is_a_scheduled_job():
    assert JOBS["queued_email_sweep"].target is run_queued_email_sweep  # imported on first use (wiring)


def test_a_message_that_never_reached_ses_is_retried_once_and_sent(owner):
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=False)
    stats = run_queued_email_sweep()
    assert (stats["retried"], stats["sent"], stats["unknown"]) == (1, 1, 0)
    row = _row(message_id)
    assert (row["status"], row["send_attempts"]) == ("sent", 1) and row["provider_message_id"]
    assert _mails_to("dana@example.com") == 1
    assert lead_row(lead["id"])["status"] == "contacted"  # recorded as the API would have


def test_the_retried_mail_is_the_message_it_was_queued_as(owner):
    lead = create_lead(owner, email="dana@example.com")
    _died_after_commit(owner, lead, claimed=False)
    run_queued_email_sweep()
    [mail] = sent_mails()
    assert mail["Subject"] == "Trial" and mail["Reply-To"].startswith("contact+")


def test_a_message_that_may_have_reached_ses_becomes_unknown_and_is_never_resent(owner):
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=True)
    stats = run_queued_email_sweep()
    assert (stats["unknown"], stats["retried"]) == (1, 0)
    row = _row(message_id)
    assert row["status"] == "unknown" and "not re-sent" in row["error"]
    assert _mails_to("dana@example.com") == 0
    run_queued_email_sweep()
    assert _mails_to("dana@example.com") == 0


def test_a_message_queued_moments_ago_is_left_to_the_send_still_under_way(owner):
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=False, minutes_ago=1)
    assert run_queued_email_sweep()["retried"] == 0
    assert _row(message_id)["status"] == "queued"


def test_however_often_the_sweep_runs_a_message_is_mailed_once(owner):
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=False)
    for _ in range(3):
        run_queued_email_sweep()
    assert _mails_to("dana@example.com") == 1
    assert _row(message_id)["status"] == "sent"


def test_the_sweep_and_a_late_sender_cannot_both_send(owner):
    """The claim is a compare-and-set: whoever claims first sends, the other does not."""
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=False)
    assert sending.claim_send(message_id) is True
    assert sending.claim_send(message_id) is False
    run_queued_email_sweep()  # claimed now: it may be with SES, so it is unknown, not sent again
    assert _row(message_id)["status"] == "unknown"
    assert _mails_to("dana@example.com") == 0


def test_a_lead_that_revoked_email_meanwhile_is_not_mailed_by_the_retry(owner):
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=False)
    revoke_email(owner, lead["id"])
    stats = run_queued_email_sweep()
    assert (stats["retried"], stats["blocked"]) == (1, 1)
    row = _row(message_id)
    assert row["status"] == "failed" and row["error"].startswith("LEAD_CHANNEL_BLOCKED")
    assert _mails_to("dana@example.com") == 0


def test_an_ses_event_for_a_message_left_queued_proves_it_was_sent(owner):
    """The function died after SES took the mail: SES's events, tagged with the message, say so."""
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=True)
    tag = MailRef.conversation(message_id).tag_value()
    deliver_ses_events(("send", ses_detail("send", message_id="ses-id-never-recorded", to="dana@example.com", tag=tag)))
    row = _row(message_id)
    assert (row["status"], row["provider_message_id"]) == ("sent", "ses-id-never-recorded")
    assert run_queued_email_sweep()["unknown"] == 0
    assert _mails_to("dana@example.com") == 0


def test_an_ses_event_arriving_after_unknown_corrects_it_to_sent(owner):
    lead = create_lead(owner, email="dana@example.com")
    message_id = _died_after_commit(owner, lead, claimed=True)
    run_queued_email_sweep()
    tag = MailRef.conversation(message_id).tag_value()
    deliver_ses_events(("delivery", ses_detail("delivery", message_id="late-ses-id", to="dana@example.com", tag=tag)))
    row = _row(message_id)
    assert (row["status"], row["delivery_status"], row["error"]) == ("sent", "delivered", None)


def test_a_failure_recorded_after_ses_proved_the_mail_was_taken_keeps_it_sent(owner):
    """The SES call timed out after SES accepted the mail, and its Send event came first."""
    lead = create_lead(owner, email="dana@example.com")
    conversation_id = _thread(owner, lead)
    with UnitOfWork() as uow:
        queued = sending.queue_email(uow.connection, actor_of(owner), conversation_id, "Hello", None)
        uow.commit()
    assert sending.claim_send(queued.message["id"])
    tag = MailRef.conversation(queued.message["id"]).tag_value()
    deliver_ses_events(("send", ses_detail("send", message_id="accepted-id", to="dana@example.com", tag=tag)))
    with UnitOfWork() as uow:
        recorded = sending.record_delivery(uow, actor_of(owner), queued, sending.Delivery(error="ReadTimeout: …"))
        uow.commit()
    assert (recorded["status"], recorded["provider_message_id"]) == ("sent", "accepted-id")


def test_an_api_send_leaves_nothing_for_the_sweep(owner):
    lead = create_lead(owner, email="dana@example.com")
    message = email_lead(owner, lead["id"], "Hello").data["message"]
    with get_engine().begin() as conn:
        conn.execute(
            update(conversation_messages)
            .where(conversation_messages.c.id == uuid.UUID(message["id"]))
            .values(created_at=func.now() - timedelta(hours=1))
        )
    assert run_queued_email_sweep() == {
        "retried": 0,
        "sent": 0,
        "failed": 0,
        "blocked": 0,
        "unknown": 0,
        "deferred": 0,
    }
    assert [m["status"] for m in messages_of(message["conversationId"])] == ["sent"]


# -- SES refusing for now (throttled, unavailable, credentials): SES answered and did not take the mail ----------
def _refused_for_now(code: str = "TooManyRequestsException", status: int = 429):
    def send(*_args: Any, **_kwargs: Any) -> str:
        raise ClientError(
            {
                "Error": {"Code": code, "Message": "Maximum sending rate exceeded."},
                "ResponseMetadata": {"HTTPStatusCode": status},
            },
            "SendEmail",
        )

    return send


def _throttled_send(owner, lead: dict[str, Any]) -> dict[str, Any]:
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_refused_for_now()):
        response = email_lead(owner, lead["id"], "Hello", subject="Trial")
    assert response.status == 201, response.body
    return response.data["message"]


def test_a_throttled_send_stays_queued_with_the_reason_and_its_claim_released(owner):
    lead = create_lead(owner, email="dana@example.com")
    message = _throttled_send(owner, lead)
    assert message["status"] == "queued" and message["error"].startswith("TooManyRequestsException")
    row = _row(uuid.UUID(message["id"]))
    assert (row["status"], row["send_attempts"]) == ("queued", 0)
    assert lead_row(lead["id"])["status"] == "new" and _mails_to("dana@example.com") == 0


@pytest.mark.parametrize(
    ("code", "status"), [("ServiceUnavailable", 503), ("InternalFailure", 500), ("ExpiredTokenException", 403)]
)
def test_an_ses_outage_or_expired_credentials_also_leave_the_message_queued(owner, code, status):
    lead = create_lead(owner, email="dana@example.com")
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_refused_for_now(code, status)):
        message = email_lead(owner, lead["id"], "Hello").data["message"]
    assert message["status"] == "queued" and message["error"].startswith(code)


def test_the_sweep_sends_a_throttled_message_at_once_without_waiting_for_the_lease(owner):
    lead = create_lead(owner, email="dana@example.com")
    message = _throttled_send(owner, lead)
    stats = run_queued_email_sweep()
    assert (stats["retried"], stats["sent"]) == (1, 1)
    row = _row(uuid.UUID(message["id"]))
    assert (row["status"], row["error"]) == ("sent", None) and row["provider_message_id"]
    assert _mails_to("dana@example.com") == 1
    assert lead_row(lead["id"])["status"] == "contacted"


def test_a_message_still_throttled_on_the_retry_waits_for_the_next_sweep_and_is_mailed_once(owner):
    lead = create_lead(owner, email="dana@example.com")
    message = _throttled_send(owner, lead)
    assert run_queued_email_sweep(send=_refused_for_now())["deferred"] == 1
    assert _row(uuid.UUID(message["id"]))["status"] == "queued"
    run_queued_email_sweep()
    run_queued_email_sweep()
    assert _row(uuid.UUID(message["id"]))["status"] == "sent" and _mails_to("dana@example.com") == 1


def test_a_message_refused_for_now_past_the_retry_window_fails(owner):
    lead = create_lead(owner, email="dana@example.com")
    message = _throttled_send(owner, lead)
    with get_engine().begin() as conn:
        conn.execute(
            update(conversation_messages)
            .where(conversation_messages.c.id == uuid.UUID(message["id"]))
            .values(created_at=func.now() - sending.RETRY_WINDOW - timedelta(minutes=1))
        )
    assert run_queued_email_sweep(send=_refused_for_now())["failed"] == 1
    row = _row(uuid.UUID(message["id"]))
    assert row["status"] == "failed" and row["error"].startswith("TooManyRequestsException")


def test_a_send_ses_rejects_for_good_is_not_retried(owner):
    lead = create_lead(owner, email="dana@example.com")
    rejected = _refused_for_now("MessageRejected", 400)
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=rejected):
        message = email_lead(owner, lead["id"], "Hello").data["message"]
    assert message["status"] == "failed"
    assert run_queued_email_sweep()["retried"] == 0 and _mails_to("dana@example.com") == 0
