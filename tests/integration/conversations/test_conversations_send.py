"""Sending email in a thread (G9): queued → sent with the SES id; signed Reply-To; the subject stored once
and reused with Re:; a localized default subject; In-Reply-To to the contact's last message; the first
send moves a new lead to contacted; the consent and member gates before anything is written; a send
failure kept as a failed message with nothing else changed."""

from __future__ import annotations

import uuid
from unittest import mock

import pytest
from botocore.exceptions import ClientError

from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, parse_reply_address
from leadcrm.platform import mail_keys
from tests.support.api import call_api, leads_path
from tests.support.conversations_helpers import (
    MAIL_DOMAIN,
    email_lead,
    mail_text,
    messages_of,
    open_conversation,
    revoke_email,
    send,
    sent_mails,
    set_inbound,
    set_prefs,
    thread_row,
    threads_of_org,
    verify_sender,
)
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_moves_helpers import create_lead, lead_row, outbox_events, status_events


@pytest.fixture(autouse=True)
def _ses(event_bus) -> None:
    verify_sender()


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_a_sent_message_keeps_the_ses_id_and_is_sent(owner):
    lead = create_lead(owner, email="dana@example.com")
    response = email_lead(owner, lead["id"], "Would you like a trial class?", subject="Trial class")
    assert response.status == 201, response.body
    message = response.data["message"]
    assert message["status"] == "sent" and message["providerMessageId"]
    assert message["sentAt"] is not None and message["direction"] == "outbound"
    [mail] = sent_mails()
    assert mail["To"] == "dana@example.com"
    assert mail["Subject"] == "Trial class"
    assert "Would you like a trial class?" in mail_text(mail)


def test_the_reply_to_is_the_threads_signed_address(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = email_lead(owner, lead["id"]).data["conversation"]
    [mail] = sent_mails()
    target = parse_reply_address(str(mail["Reply-To"]), mail_keys.signing_keys(), MAIL_DOMAIN)
    assert target == AddressTarget(AddressKind.CONVERSATION, uuid.UUID(conversation["id"]))


def test_the_sender_name_is_the_organizations(owner):
    email_lead(owner, create_lead(owner, email="dana@example.com")["id"])
    assert sent_mails()[0]["From"].addresses[0].display_name == owner.organization.name


def test_the_subject_is_stored_once_and_reused_with_re(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = email_lead(owner, lead["id"], "First", subject="Trial class").data["conversation"]
    second = send(owner, conversation["id"], "Second", subject="Ignored")
    assert second.data["message"]["subject"] == "Re: Trial class"
    assert [m["Subject"] for m in sent_mails()] == ["Trial class", "Re: Trial class"]
    assert thread_row(conversation["id"])["subject"] == "Trial class"


@pytest.mark.parametrize(("locale", "expected"), [("en", "A message from {org}"), ("he-IL", "הודעה מאת {org}")])
def test_a_blank_subject_is_the_default_in_the_leads_language(owner, locale, expected):
    lead = create_lead(owner, email="dana@example.com", locale=locale)
    response = email_lead(owner, lead["id"], "Hi", subject="   ")
    assert response.data["message"]["subject"] == expected.format(org=owner.organization.name)
    assert sent_mails()[0]["Subject"] == expected.format(org=owner.organization.name)


def test_a_reply_after_the_contact_wrote_names_their_last_message(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = email_lead(owner, lead["id"], "First").data["conversation"]
    set_inbound(conversation["id"], "<older@mail.gmail.com>")
    set_inbound(conversation["id"], "<latest@mail.gmail.com>")
    send(owner, conversation["id"], "Answer")
    first, answer = sent_mails()
    assert first["In-Reply-To"] is None
    assert answer["In-Reply-To"] == "<latest@mail.gmail.com>"
    assert answer["References"] == "<latest@mail.gmail.com>"


def test_the_first_send_moves_a_new_lead_to_contacted_and_stamps_the_outbound_time(owner):
    lead = create_lead(owner, email="dana@example.com")
    email_lead(owner, lead["id"])
    row = lead_row(lead["id"])
    assert row["status"] == "contacted"
    assert row["last_outbound_at"] is not None
    assert [e["to_status"] for e in status_events(lead["id"])] == ["new", "contacted"]
    assert len(outbox_events(lead["id"])) == 1


def test_a_staff_members_first_email_is_the_leads_first_human_response_and_a_later_one_keeps_it(owner):
    lead = create_lead(owner, email="dana@example.com")
    email_lead(owner, lead["id"], "First")
    first = lead_row(lead["id"])
    assert first["first_human_response_at"] is not None
    assert first["last_contact_attempt_at"] is not None

    email_lead(owner, lead["id"], "Second")
    assert lead_row(lead["id"])["first_human_response_at"] == first["first_human_response_at"]


def test_a_failed_email_is_no_human_response(owner):
    lead = create_lead(owner, email="dana@example.com")
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_ses_failure):
        email_lead(owner, lead["id"], "Hello", subject="Trial")
    row = lead_row(lead["id"])
    assert row["first_human_response_at"] is None and row["last_contact_attempt_at"] is None


def test_a_send_leaves_a_lead_past_new_where_it_is(owner):
    lead = create_lead(owner, email="dana@example.com")
    call_api("PATCH", leads_path(owner.org_id, lead["id"]), sub=owner.sub, body={"status": "trial_booked"})
    email_lead(owner, lead["id"])
    assert lead_row(lead["id"])["status"] == "trial_booked"


def test_a_lead_that_revoked_email_is_blocked_before_anything_is_written(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = open_conversation(owner, {"leadId": lead["id"]}).data["conversation"]
    revoke_email(owner, lead["id"])
    response = send(owner, conversation["id"], "Hello?")
    assert (response.status, response.error_code) == (403, "LEAD_CHANNEL_BLOCKED")
    assert messages_of(conversation["id"]) == []
    assert sent_mails() == []
    assert lead_row(lead["id"])["status"] == "new"


def test_a_blocked_first_send_creates_no_thread_either(owner):
    lead = create_lead(owner, email="dana@example.com")
    revoke_email(owner, lead["id"])
    assert email_lead(owner, lead["id"]).error_code == "LEAD_CHANNEL_BLOCKED"
    assert threads_of_org(owner.org_id) == []


def test_a_dnc_call_outcome_blocks_email(owner):
    lead = create_lead(owner, email="dana@example.com")
    call_api("POST", leads_path(owner.org_id, lead["id"]) + "/touches", sub=owner.sub,
             body={"channel": "call", "outcome": "dnc"})  # fmt: skip
    assert email_lead(owner, lead["id"]).error_code == "LEAD_CHANNEL_BLOCKED"


def test_a_lead_without_an_email_is_a_400(owner):
    lead = create_lead(owner, phone="+972501234567")
    response = email_lead(owner, lead["id"])
    assert (response.status, response.error_code) == (400, "CONTACT_HAS_NO_EMAIL")


def _member(owner, prefs):
    user = make_user(email=f"member-{uuid.uuid4().hex[:6]}@example.com")
    membership = make_membership(owner.organization, user, role="member")
    if prefs is not None:
        set_prefs(membership.id, prefs)
    return user, membership


def test_a_member_who_opted_out_of_message_emails_is_blocked(owner):
    _, membership = _member(owner, {"newMessage": {"email": False}})
    response = open_conversation(owner, {"membershipId": str(membership.id), "body": "Hi"})
    assert (response.status, response.error_code) == (403, "MEMBER_EMAIL_OPTED_OUT")
    assert sent_mails() == [] and threads_of_org(owner.org_id) == []


@pytest.mark.parametrize("prefs", [None, {}, {"newMessage": {}}, {"newMessage": {"email": True}}, {"digest": False}])
def test_a_member_without_an_explicit_opt_out_is_mailed(owner, prefs):
    user, membership = _member(owner, prefs)
    response = open_conversation(owner, {"membershipId": str(membership.id), "body": "Hi"})
    assert response.status == 201 and response.data["message"]["status"] == "sent"
    assert sent_mails()[0]["To"] == user.email


def _ses_failure(*_args, **_kwargs):
    raise ClientError({"Error": {"Code": "MessageRejected", "Message": "Email address is not verified."}}, "SendEmail")


def test_an_ses_error_keeps_the_message_as_failed_and_changes_nothing_else(owner):
    lead = create_lead(owner, email="dana@example.com")
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_ses_failure):
        response = email_lead(owner, lead["id"], "Hello", subject="Trial")
    assert response.status == 201
    message = response.data["message"]
    assert message["status"] == "failed" and message["error"].startswith("MessageRejected")
    assert message["providerMessageId"] is None
    row = lead_row(lead["id"])
    assert row["status"] == "new" and row["last_outbound_at"] is None
    assert status_events(lead["id"])[-1]["to_status"] == "new"
    [stored] = messages_of(response.data["conversation"]["id"])
    assert stored["status"] == "failed"


def test_a_failed_first_message_stores_no_subject_so_the_retry_is_no_reply(owner):
    lead = create_lead(owner, email="dana@example.com")
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_ses_failure):
        conversation = email_lead(owner, lead["id"], "Hello", subject="Trial").data["conversation"]
    assert thread_row(conversation["id"])["subject"] is None
    retry = send(owner, conversation["id"], "Hello again", subject="Trial")
    assert retry.data["message"]["subject"] == "Trial"
    assert thread_row(conversation["id"])["subject"] == "Trial"


def test_a_failed_message_is_on_the_leads_timeline(owner):
    lead = create_lead(owner, email="dana@example.com")
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_ses_failure):
        email_lead(owner, lead["id"], "Hello")
    timeline = call_api("GET", leads_path(owner.org_id, lead["id"]), sub=owner.sub).data["timeline"]
    entry = timeline[0]
    assert entry["kind"] == "message" and entry["type"] == "message_outbound"
    assert entry["payload"]["status"] == "failed"


def test_sent_received_and_notes_appear_on_the_leads_timeline(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = email_lead(owner, lead["id"], "Hello").data["conversation"]
    set_inbound(conversation["id"], "<r@x>")
    call_api("POST", f"/organizations/{owner.org_id}/conversations/{conversation['id']}/notes", sub=owner.sub,
             body={"body": "note"})  # fmt: skip
    timeline = call_api("GET", leads_path(owner.org_id, lead["id"]), sub=owner.sub).data["timeline"]
    messages = [e["type"] for e in timeline if e["kind"] == "message"]
    assert messages == ["message_note", "message_inbound", "message_outbound"]
    assert timeline[-1]["type"] == "status_changed"


def test_the_message_is_committed_as_queued_before_ses_is_called(owner):
    lead = create_lead(owner, email="dana@example.com")
    seen = {}

    def _look(mail):
        [conversation] = threads_of_org(owner.org_id)
        seen["statuses"] = [m["status"] for m in messages_of(conversation["id"])]
        return "ses-id-1"

    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_look):
        response = email_lead(owner, lead["id"])
    assert seen["statuses"] == ["queued"]
    assert response.data["message"]["providerMessageId"] == "ses-id-1"


def test_a_lead_erased_later_takes_its_threads_with_it(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = email_lead(owner, lead["id"]).data["conversation"]
    assert call_api("DELETE", leads_path(owner.org_id, lead["id"]), sub=owner.sub).status in (200, 204)
    assert threads_of_org(owner.org_id) == [] and messages_of(conversation["id"]) == []


def _send_with_key(caller, conversation_id, key, body="Hello"):
    return call_api(
        "POST",
        f"/organizations/{caller.org_id}/conversations/{conversation_id}/messages",
        sub=caller.sub,
        body={"body": body},
        headers={"idempotency-key": key},
    )


def test_a_send_retried_with_its_idempotency_key_mails_once_and_answers_the_first_outcome(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = open_conversation(owner, {"leadId": lead["id"]}).data["conversation"]
    first = _send_with_key(owner, conversation["id"], "send-1")
    again = _send_with_key(owner, conversation["id"], "send-1")
    assert (first.status, again.status) == (201, 201)
    assert again.headers.get("idempotent-replayed") == "true"
    assert again.data["message"]["id"] == first.data["message"]["id"]
    assert len(sent_mails()) == 1 and len(messages_of(conversation["id"])) == 1


def test_an_idempotency_key_reused_with_another_body_is_a_422(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = open_conversation(owner, {"leadId": lead["id"]}).data["conversation"]
    _send_with_key(owner, conversation["id"], "send-2", body="Hello")
    response = _send_with_key(owner, conversation["id"], "send-2", body="Something else")
    assert (response.status, response.error_code) == (422, "IDEMPOTENCY_KEY_REUSED")
    assert len(sent_mails()) == 1


def test_a_retry_while_the_first_send_is_still_with_ses_is_a_409_and_mails_nothing_more(owner):
    lead = create_lead(owner, email="dana@example.com")
    conversation = open_conversation(owner, {"leadId": lead["id"]}).data["conversation"]
    seen = {}

    def _retry_meanwhile(mail):
        seen["retry"] = _send_with_key(owner, conversation["id"], "send-3")
        return "ses-id"

    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_retry_meanwhile):
        first = _send_with_key(owner, conversation["id"], "send-3")
    assert first.status == 201
    assert (seen["retry"].status, seen["retry"].error_code) == (409, "SEND_IN_PROGRESS")
    assert len(messages_of(conversation["id"])) == 1
    assert _send_with_key(owner, conversation["id"], "send-3").data["message"]["providerMessageId"] == "ses-id"


def test_a_subject_with_a_line_break_is_refused_before_anything_is_written(owner):
    lead = create_lead(owner, email="dana@example.com")
    response = email_lead(owner, lead["id"], "Hi", subject="Hello\r\nBcc: victim@example.com")
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
    assert threads_of_org(owner.org_id) == [] and sent_mails() == []
