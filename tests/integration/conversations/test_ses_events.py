"""SES's sending events, through the task_lifecycle function as its queue hands them (EventBridge envelopes of
AWS's documented records): every send names the configuration set and tags its mail; a message records
delivered, bounced or complained; a Permanent bounce or a complaint suppresses the address with its own legal
basis, so later 1:1 and bulk sends are blocked and staff see why; transient bounces and delays only record
status; a replayed event changes nothing; a bulk email pauses itself past its bounce rate."""

from __future__ import annotations

import uuid
from typing import Any
from unittest import mock

import pytest
from botocore.stub import ANY, Stubber
from sqlalchemy import func, select, update

from leadcrm.conversations.bulk_email import run_bulk_email
from leadcrm.conversations.rules.delivery import MailRef
from leadcrm.conversations.tables import ses_delivery_events
from leadcrm.leads.tables import leads
from leadcrm.platform.adapters import ses
from leadcrm.platform.adapters.aws import client
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.conversations_helpers import (
    consent_ledger,
    consent_state,
    email_lead,
    messages_of,
    send,
    sent_mails,
    verify_sender,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, create_lead
from tests.support.ses_events import CONFIGURATION_SET, deliver_ses_events, redeliver, ses_detail, ses_envelope


@pytest.fixture(autouse=True)
def _ses(event_bus, monkeypatch) -> None:
    verify_sender()
    monkeypatch.setenv("SES_CONFIGURATION_SET", CONFIGURATION_SET)


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _first_mail(owner, address: str = "dana@example.com") -> tuple[dict[str, Any], dict[str, Any]]:
    """A lead and the 1:1 message just mailed to it (sent, with its SES id)."""
    lead = create_lead(owner, email=address)
    response = email_lead(owner, lead["id"], "Would you like a trial class?", subject="Trial class")
    assert response.status == 201, response.body
    return lead, response.data["message"]


def _event(kind: str, message: dict[str, Any], to: str = "dana@example.com", **fields: Any) -> dict[str, Any]:
    return ses_detail(
        kind,
        message_id=message["providerMessageId"],
        to=to,
        tag=MailRef.conversation(uuid.UUID(message["id"])).tag_value(),
        **fields,
    )


def _message(message: dict[str, Any]) -> dict[str, Any]:
    [row] = [m for m in messages_of(message["conversationId"]) if str(m["id"]) == message["id"]]
    return row


def _consent(owner, lead) -> dict[str, Any]:
    response = call_api("GET", leads_path(owner.org_id, lead["id"]) + "/consent", sub=owner.sub)
    assert response.status == 200, response.body
    return response.data


def _no_failures(answer: dict[str, Any]) -> None:
    assert answer == {"batchItemFailures": []}


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _run_bulk(**kwargs: Any) -> dict[str, int]:
    clock = _Clock()
    return run_bulk_email(sleep=clock.sleep, clock=clock, **kwargs)


def _bulk(owner, leads: list[dict[str, Any]]) -> dict[str, Any]:
    response = call_api(
        "POST",
        f"/organizations/{owner.org_id}/bulk-emails",
        sub=owner.sub,
        body={"subject": "Open house", "body": "Come!", "audience": {"leadIds": [lead["id"] for lead in leads]}},
    )
    assert response.status == 202, response.body
    return response.data


def _job(owner, job_id: str) -> dict[str, Any]:
    return call_api("GET", f"/organizations/{owner.org_id}/bulk-emails/{job_id}", sub=owner.sub).data


def _recipients(owner, job_id: str, **query: str) -> dict[str, dict[str, Any]]:
    response = call_api(
        "GET", f"/organizations/{owner.org_id}/bulk-emails/{job_id}/recipients", sub=owner.sub, query=query or None
    )
    assert response.status == 200, response.body
    return {r["leadId"]: r for r in response.data}


def _bulk_event(kind: str, job_id: str, recipient: dict[str, Any], to: str, **fields: Any) -> dict[str, Any]:
    tag = MailRef.bulk(uuid.UUID(job_id), uuid.UUID(recipient["leadId"])).tag_value()
    return ses_detail(kind, message_id=recipient["providerMessageId"], to=to, tag=tag, **fields)


# -- every send names the configuration set -----------------------------------------------------------------


def _spy_on_sends() -> tuple[list[dict[str, Any]], Any]:
    """SES v2 SendEmail as moto answers it, with each call's parameters kept."""
    calls: list[dict[str, Any]] = []
    real = client("sesv2").send_email

    def spy(**params: Any) -> Any:
        calls.append(params)
        return real(**params)

    return calls, mock.patch.object(client("sesv2"), "send_email", side_effect=spy)


def test_a_conversation_send_names_the_configuration_set_and_tags_its_message(owner):
    lead = create_lead(owner, email="dana@example.com")
    calls, spying = _spy_on_sends()
    with spying:
        message = email_lead(owner, lead["id"], "Hello").data["message"]
    [params] = calls
    assert params["ConfigurationSetName"] == CONFIGURATION_SET
    assert params["EmailTags"] == [
        {"Name": "leadcrm-mail", "Value": MailRef.conversation(uuid.UUID(message["id"])).tag_value()}
    ]


def test_a_bulk_send_names_the_configuration_set_and_tags_its_recipient(owner):
    lead = create_lead(owner, email="dana@example.com")
    job = _bulk(owner, [lead])
    calls, spying = _spy_on_sends()
    with spying:
        _run_bulk()
    [params] = calls
    assert params["ConfigurationSetName"] == CONFIGURATION_SET
    tag = MailRef.bulk(uuid.UUID(job["id"]), uuid.UUID(lead["id"])).tag_value()
    assert params["EmailTags"] == [{"Name": "leadcrm-mail", "Value": tag}]


def test_the_plain_text_send_of_the_digest_and_ticket_mail_names_the_configuration_set():
    with Stubber(client("sesv2")) as stub:
        stub.add_response(
            "send_email",
            {"MessageId": "ses-2"},
            {
                "FromEmailAddress": ANY,
                "Destination": {"ToAddresses": ["staff@example.com"]},
                "Content": ANY,
                "ConfigurationSetName": CONFIGURATION_SET,
            },
        )
        assert ses.send_email("staff@example.com", "Digest", "3 leads wait") == "ses-2"


# -- a message records what SES said ---------------------------------------------------------------------------


def test_a_delivery_is_recorded_on_the_message_and_shown_in_the_thread(owner):
    _, message = _first_mail(owner)
    _no_failures(deliver_ses_events(("delivery", _event("delivery", message))))
    listed = call_api("GET", f"/organizations/{owner.org_id}/conversations/{message['conversationId']}/messages",
                      sub=owner.sub).data  # fmt: skip
    [shown] = [m for m in listed if m["id"] == message["id"]]
    assert shown["status"] == "sent"
    assert shown["deliveryStatus"] == "delivered" and shown["deliveryStatusAt"] is not None
    assert shown["deliveryDetail"] == {"eventType": "Delivery"}


def test_a_delay_then_a_delivery_ends_delivered(owner):
    _, message = _first_mail(owner)
    deliver_ses_events(("deliveryDelay", _event("deliveryDelay", message)))
    assert _message(message)["delivery_status"] == "delayed"
    deliver_ses_events(("delivery", _event("delivery", message)))
    assert _message(message)["delivery_status"] == "delivered"


def test_a_delivery_arriving_after_a_complaint_leaves_it_complained(owner):
    _, message = _first_mail(owner)
    deliver_ses_events(("complaint", _event("complaint", message)), ("delivery", _event("delivery", message)))
    assert _message(message)["delivery_status"] == "complained"


def test_a_mail_without_our_tag_is_found_by_its_ses_id(owner):
    _, message = _first_mail(owner)
    detail = ses_detail("delivery", message_id=message["providerMessageId"], to="dana@example.com")
    deliver_ses_events(("delivery", detail))
    assert _message(message)["delivery_status"] == "delivered"


def test_an_event_about_mail_we_do_not_track_is_acknowledged_and_changes_nothing(owner):
    detail = ses_detail("bounce", message_id="digest-or-ticket-mail", to="staff@example.com")
    _no_failures(deliver_ses_events(("bounce", detail)))
    with get_engine().connect() as conn:
        assert conn.execute(
            select(func.count()).where(ses_delivery_events.c.ses_message_id == "digest-or-ticket-mail")
        ).scalar_one() == 0


def test_a_malformed_event_is_acknowledged(owner):
    _, message = _first_mail(owner)
    detail = _event("bounce", message)
    del detail["bounce"]["timestamp"]
    _no_failures(deliver_ses_events(("bounce", detail)))
    assert _message(message)["delivery_status"] is None


# -- suppression ---------------------------------------------------------------------------------------------


def test_a_permanent_bounce_suppresses_the_address_with_its_own_legal_basis(owner):
    lead, message = _first_mail(owner)
    _no_failures(deliver_ses_events(("bounce", _event("bounce", message, bounce_type="Permanent"))))
    assert _message(message)["delivery_status"] == "bounced"
    [entry] = consent_ledger(lead["id"])
    assert (entry["status"], entry["legal_basis"], entry["source"]) == ("revoked", "bounce", "ses_bounce")
    assert entry["note"] == "Permanent/General" and entry["actor_user_id"] is None
    [timeline] = activities(lead["id"], "consent_changed")
    expected = {"channel": "email", "status": "revoked", "legalBasis": "bounce", "source": "ses_bounce"}
    assert timeline["payload"] == expected


def test_a_suppressed_lead_gets_403_on_the_next_send_and_staff_see_why_in_the_ledger(owner):
    lead, message = _first_mail(owner)
    deliver_ses_events(("bounce", _event("bounce", message)))
    refused = send(owner, message["conversationId"], "Are you there?")
    assert (refused.status, refused.error_code) == (403, "LEAD_CHANNEL_BLOCKED")
    view = _consent(owner, lead)
    [email] = [c for c in view["channels"] if c["channel"] == "email"]
    assert (email["allowed"], email["legalBasis"], email["source"]) == (False, "bounce", "ses_bounce")
    assert view["history"][0]["legalBasis"] == "bounce"
    assert len(sent_mails()) == 1


def test_a_complaint_suppresses_with_the_complaint_basis(owner):
    lead, message = _first_mail(owner)
    deliver_ses_events(("complaint", _event("complaint", message)))
    assert _message(message)["delivery_status"] == "complained"
    [entry] = consent_ledger(lead["id"])
    assert (entry["legal_basis"], entry["source"], entry["note"]) == ("complaint", "ses_complaint", "abuse")
    assert send(owner, message["conversationId"], "Sorry").error_code == "LEAD_CHANNEL_BLOCKED"


@pytest.mark.parametrize(
    ("kind", "fields", "status"),
    [("bounce", {"bounce_type": "Transient"}, "bounced"), ("deliveryDelay", {}, "delayed")],
)
def test_transient_bounces_and_delays_only_record_status(owner, kind, fields, status):
    lead, message = _first_mail(owner)
    deliver_ses_events((kind, _event(kind, message, **fields)))
    assert _message(message)["delivery_status"] == status
    assert consent_state(lead["id"]) == {}
    assert send(owner, message["conversationId"], "Trying again").status == 201


def test_every_lead_of_the_organization_at_the_address_is_suppressed_and_no_other(owner):
    lead, message = _first_mail(owner, "Dana@Example.com")
    twin = create_lead(owner, name="Dana again", email="dana.twin@example.com")
    with get_engine().begin() as conn:  # a duplicate the dedup did not catch (an import, a later edit)
        conn.execute(update(leads).where(leads.c.id == uuid.UUID(twin["id"])).values(email="dana@example.com"))
    other = create_lead(owner, email="avi@example.com")
    stranger = make_caller(role="owner")
    elsewhere = create_lead(stranger, email="dana@example.com")
    deliver_ses_events(("bounce", _event("bounce", message, to="Dana@Example.com")))
    assert consent_state(lead["id"]) == consent_state(twin["id"]) == {"email": "revoked"}
    assert consent_state(other["id"]) == consent_state(elsewhere["id"]) == {}


def test_a_lead_whose_address_changed_since_is_not_suppressed_for_the_old_one(owner):
    lead, message = _first_mail(owner, "old@example.com")
    patched = call_api("PATCH", leads_path(owner.org_id, lead["id"]), sub=owner.sub, body={"email": "new@example.com"})
    assert patched.status == 200, patched.body
    deliver_ses_events(("bounce", _event("bounce", message, to="old@example.com")))
    assert _message(message)["delivery_status"] == "bounced"
    assert consent_state(lead["id"]) == {}


def test_a_second_bounce_of_a_suppressed_address_writes_no_second_ledger_entry(owner):
    lead, message = _first_mail(owner)
    deliver_ses_events(("bounce", _event("bounce", message, timestamp="2026-12-01T10:00:00.000Z")))
    deliver_ses_events(("bounce", _event("bounce", message, timestamp="2026-12-01T10:05:00.000Z")))  # a 2nd notice
    assert len(consent_ledger(lead["id"])) == 1


# -- replays ---------------------------------------------------------------------------------------------------


def test_a_redelivered_event_changes_nothing(owner):
    lead, message = _first_mail(owner)
    body = ses_envelope("bounce", _event("bounce", message))
    redeliver(body)
    regranted = call_api("PUT", leads_path(owner.org_id, lead["id"]) + "/consent/email", sub=owner.sub,
                         body={"status": "granted", "legalBasis": "consent", "note": "confirmed by phone"})  # fmt: skip
    assert regranted.status == 200, regranted.body
    before = (_message(message), consent_ledger(lead["id"]), activities(lead["id"]))
    answers = redeliver(body, times=3)
    assert all(answer == {"batchItemFailures": []} for answer in answers)
    assert (_message(message), consent_ledger(lead["id"]), activities(lead["id"])) == before
    assert consent_state(lead["id"]) == {"email": "granted"}


def test_the_same_event_published_twice_by_ses_is_one_event(owner):
    """SES publishes at least once: two envelopes (two EventBridge ids) of one SES event are one event."""
    lead, message = _first_mail(owner)
    detail = _event("complaint", message)
    deliver_ses_events(("complaint", detail), ("complaint", detail))
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(func.count()).where(ses_delivery_events.c.ses_message_id == message["providerMessageId"])
        ).scalar_one()
    assert rows == 1
    assert len(activities(lead["id"], "consent_changed")) == 1


# -- bulk email ------------------------------------------------------------------------------------------------


@pytest.fixture
def _drain_bulk():
    yield
    # The job sends for every organization and the database outlives the test: nothing is left pending.
    _run_bulk(send=lambda mail: f"drained-{uuid.uuid4()}", run_seconds=3600)


def test_bulk_recipients_show_their_delivery_status_and_the_job_counts_them(owner, _drain_bulk):
    leads = [create_lead(owner, email=f"lead{i}@example.com") for i in range(3)]
    job = _bulk(owner, leads)
    assert _run_bulk()["sent"] == 3
    recipients = _recipients(owner, job["id"])
    first, second, third = (recipients[lead["id"]] for lead in leads)
    deliver_ses_events(
        ("bounce", _bulk_event("bounce", job["id"], first, "lead0@example.com")),
        ("complaint", _bulk_event("complaint", job["id"], second, "lead1@example.com")),
        ("delivery", _bulk_event("delivery", job["id"], third, "lead2@example.com")),
    )
    after = _recipients(owner, job["id"])
    assert [after[lead["id"]]["deliveryStatus"] for lead in leads] == ["bounced", "complained", "delivered"]
    assert after[leads[0]["id"]]["deliveryDetail"]["bounceType"] == "Permanent"
    assert set(_recipients(owner, job["id"], deliveryStatus="bounced")) == {leads[0]["id"]}
    view = _job(owner, job["id"])
    assert view["delivery"] == {"delayed": 0, "delivered": 1, "rejected": 0, "bounced": 1, "complained": 1}
    assert view["status"] == "done"  # 1 bounce in 3 mails: too few mails to judge the list


def test_suppressed_bulk_recipients_are_skipped_by_the_next_bulk_email_and_refused_1_1(owner, _drain_bulk):
    dana, avi = create_lead(owner, email="dana@example.com"), create_lead(owner, email="avi@example.com")
    job = _bulk(owner, [dana, avi])
    _run_bulk()
    recipients = _recipients(owner, job["id"])
    deliver_ses_events(("bounce", _bulk_event("bounce", job["id"], recipients[dana["id"]], "dana@example.com")))
    assert consent_ledger(dana["id"])[0]["legal_basis"] == "bounce"
    again = _bulk(owner, [dana, avi])
    assert {(s["leadId"], s["reason"]) for s in again["skippedLeads"]} == {(dana["id"], "no_consent")}
    refused = email_lead(owner, dana["id"], "Hello?")
    assert (refused.status, refused.error_code) == (403, "LEAD_CHANNEL_BLOCKED")


def test_the_recipients_of_another_organizations_job_are_not_found(owner, _drain_bulk):
    stranger = make_caller(role="owner")
    job = _bulk(stranger, [create_lead(stranger, email="s@example.com")])
    response = call_api("GET", f"/organizations/{owner.org_id}/bulk-emails/{job['id']}/recipients", sub=owner.sub)
    assert (response.status, response.error_code) == (404, "BULK_EMAIL_NOT_FOUND")


def test_recipients_are_keyset_paged(owner, _drain_bulk):
    leads = [create_lead(owner, email=f"p{i}@example.com") for i in range(5)]
    job = _bulk(owner, leads)
    path = f"/organizations/{owner.org_id}/bulk-emails/{job['id']}/recipients"
    first = call_api("GET", path, sub=owner.sub, query={"limit": "3"})
    second = call_api("GET", path, sub=owner.sub, query={"limit": "3", "cursor": first.body["nextCursor"]})
    seen = [r["leadId"] for r in first.data + second.data]
    assert sorted(seen) == sorted(lead["id"] for lead in leads) and len(set(seen)) == 5
    assert second.body["nextCursor"] is None
    bad = call_api("GET", path, sub=owner.sub, query={"cursor": "not-a-cursor"})
    assert (bad.status, bad.error_code) == (400, "INVALID_CURSOR")


def test_a_bulk_email_pauses_itself_once_its_bounce_rate_passes_the_threshold(owner, monkeypatch, _drain_bulk):
    monkeypatch.setenv("BULK_EMAIL_MAX_BOUNCE_RATE", "0.4")
    monkeypatch.setenv("BULK_EMAIL_BOUNCE_RATE_MIN_SENT", "3")
    monkeypatch.setenv("BULK_EMAIL_SEND_RATE", "1")
    leads = [create_lead(owner, email=f"b{i}@example.com") for i in range(6)]
    to = {lead["id"]: lead["email"] for lead in leads}
    job = _bulk(owner, leads)
    assert _run_bulk(run_seconds=2.5)["sent"] == 3  # a run ends at its budget; three still pending
    first, second, third = [r for r in _recipients(owner, job["id"]).values() if r["status"] == "sent"]

    def bounce(recipient: dict[str, Any], bounce_type: str = "Permanent") -> None:
        detail = _bulk_event("bounce", job["id"], recipient, to[recipient["leadId"]], bounce_type=bounce_type)
        _no_failures(deliver_ses_events(("bounce", detail)))

    bounce(first)
    assert _job(owner, job["id"])["status"] == "sending"  # 1 of 3 sent: 33 %, not past 40 %
    bounce(second, "Transient")
    assert _job(owner, job["id"])["status"] == "sending"  # a transient bounce is not counted
    bounce(third)
    view = _job(owner, job["id"])  # 2 of 3: 67 %
    assert (view["status"], view["pauseReason"]) == ("paused", "bounce_rate") and view["pausedAt"] is not None
    assert view["pauseDetail"] == {"sent": 3, "bounced": 2, "bounceRate": 0.6667, "threshold": 0.4, "minSent": 3}
    mails_before = len(sent_mails())
    assert _run_bulk(run_seconds=10)["sent"] == 0  # paused: its pending recipients stay pending
    assert len(sent_mails()) == mails_before
    assert _job(owner, job["id"])["pending"] == 3
