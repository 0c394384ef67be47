"""Inbound email (G10) through the ingestion function, from the S3 event SES's receipt rule causes: real
clients' MIME, the thread resolved from the signed recipient address, recordInbound idempotent on the
message id (unread + 1, re-opened, `conversation.inbound_received`), spam and virus dropped, forged
addresses creating nothing, and replies to bulk mail finding or creating the lead's thread."""

from __future__ import annotations

import uuid

import pytest

from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, reply_address
from leadcrm.platform import mail_keys
from tests.support.api import call_api, leads_path
from tests.support.conversations_helpers import (
    MAIL_DOMAIN,
    all_messages_count,
    conversations_path,
    deliver_inbound,
    email_lead,
    fixture_mail,
    make_inbound_bucket,
    messages_of,
    open_conversation,
    outbox_of,
    set_thread_columns,
    thread_row,
    threads_of_org,
    verify_sender,
)
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_moves_helpers import create_lead, lead_row

NO_FAILURES = {"batchItemFailures": []}


@pytest.fixture(autouse=True)
def _aws(event_bus) -> None:
    verify_sender()
    make_inbound_bucket()


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _thread_address(conversation_id) -> str:
    target = AddressTarget(AddressKind.CONVERSATION, uuid.UUID(str(conversation_id)))
    return reply_address(mail_keys.signing_key(), target, MAIL_DOMAIN)


def _lead_address(lead_id) -> str:
    return reply_address(mail_keys.signing_key(), AddressTarget(AddressKind.LEAD, uuid.UUID(str(lead_id))), MAIL_DOMAIN)


def _emailed_thread(owner) -> tuple[dict, dict]:
    lead = create_lead(owner, email="dana.cohen@gmail.com")
    conversation = email_lead(owner, lead["id"], "Would you like a trial class?", subject="Trial class")
    return lead, conversation.data["conversation"]


@pytest.mark.parametrize(
    ("fixture", "expected_start"),
    [("gmail_reply_multipart_qp.eml", "Hi Noa,\n\nThursday at 18:00 works for me"),
     ("outlook_reply_base64.eml", "Hello,\n\nCould we move the trial"),
     ("apple_mail_reply_plain.eml", "Yes please, what should I bring?"),
     ("hebrew_windows_1255_qp.eml", "שלום נועה,"),
     ("latin1_8bit_multipart.eml", "Olá! Não posso na quinta"),
     ("html_only.eml", "Hi! Is the Saturday class still available?")],
)  # fmt: skip
def test_a_reply_lands_in_its_thread_without_quoted_history(owner, fixture, expected_start):
    _, conversation = _emailed_thread(owner)
    assert deliver_inbound(fixture_mail(fixture, _thread_address(conversation["id"]))) == NO_FAILURES
    inbound = [m for m in messages_of(conversation["id"]) if m["direction"] == "inbound"]
    assert len(inbound) == 1
    assert inbound[0]["body"].startswith(expected_start)
    assert "wrote:" not in inbound[0]["body"] and "> " not in inbound[0]["body"]
    assert inbound[0]["status"] == "received"


def test_a_reply_counts_as_unread_reopens_the_thread_and_stamps_the_lead(owner):
    lead, conversation = _emailed_thread(owner)
    set_thread_columns(conversation["id"], status="closed")
    deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", _thread_address(conversation["id"])))
    thread = thread_row(conversation["id"])
    assert (thread["unread_count"], thread["status"]) == (1, "open")
    row = lead_row(lead["id"])
    assert row["last_inbound_at"] is not None and row["last_inbound_at"] > row["last_outbound_at"]


def test_a_reply_emits_inbound_received_with_ids_only(owner):
    lead, conversation = _emailed_thread(owner)
    deliver_inbound(fixture_mail("apple_mail_reply_plain.eml", _thread_address(conversation["id"])))
    [event] = outbox_of(conversation["id"], "conversation.inbound_received")
    [message] = [m for m in messages_of(conversation["id"]) if m["direction"] == "inbound"]
    assert event["payload"] == {
        "organizationId": str(owner.org_id),
        "conversationId": conversation["id"],
        "leadId": lead["id"],
        "messageId": str(message["id"]),
        "channel": "email",
    }


def test_a_redelivered_message_is_recorded_once(owner):
    _, conversation = _emailed_thread(owner)
    raw = fixture_mail(
        "gmail_reply_multipart_qp.eml", _thread_address(conversation["id"]), message_id=f"<{uuid.uuid4().hex}@x>"
    )
    deliver_inbound(raw, key="inbound/ses-message-1")
    deliver_inbound(raw, key="inbound/ses-message-1")
    deliver_inbound(raw, key="inbound/ses-message-2")  # the same mail stored twice
    assert len([m for m in messages_of(conversation["id"]) if m["direction"] == "inbound"]) == 1
    assert thread_row(conversation["id"])["unread_count"] == 1
    assert len(outbox_of(conversation["id"], "conversation.inbound_received")) == 1


def test_the_next_send_answers_the_contacts_message(owner):
    from tests.support.conversations_helpers import send, sent_mails

    _, conversation = _emailed_thread(owner)
    message_id = f"<{uuid.uuid4().hex}@eurprd05.prod.outlook.com>"
    deliver_inbound(
        fixture_mail("outlook_reply_base64.eml", _thread_address(conversation["id"]), message_id=message_id)
    )
    send(owner, conversation["id"], "Monday works")
    answer = sent_mails()[-1]
    assert answer["In-Reply-To"] == message_id
    assert answer["Subject"] == "Re: Trial class"


def test_after_a_reply_the_lead_is_in_the_work_queue_as_inbound_unanswered(owner):
    lead, conversation = _emailed_thread(owner)
    deliver_inbound(fixture_mail("apple_mail_reply_plain.eml", _thread_address(conversation["id"])))
    queue = call_api("GET", leads_path(owner.org_id) + "/queue", sub=owner.sub)
    assert queue.status == 200, queue.body
    [row] = [r for r in queue.data if r["id"] == lead["id"]]
    assert "inbound_unanswered" in row["reasons"]


def test_a_forged_signature_creates_nothing(owner):
    _, conversation = _emailed_thread(owner)
    genuine = _thread_address(conversation["id"])
    local, _, domain = genuine.partition("@")
    forged = f"{local[:-4]}zzzz@{domain}"
    before = all_messages_count()
    assert deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", forged)) == NO_FAILURES
    assert all_messages_count() == before
    assert thread_row(conversation["id"])["unread_count"] == 0


def test_a_signature_of_one_thread_cannot_reply_into_another_organizations_thread(owner):
    _, ours = _emailed_thread(owner)
    stranger = make_caller(role="owner")
    _, theirs = _emailed_thread(stranger)
    signature = _thread_address(ours["id"]).partition("@")[0].rpartition(".")[2]
    address = f"contact+{uuid.UUID(theirs['id']).hex}.{signature}@{MAIL_DOMAIN}"
    before = all_messages_count()
    deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", address))
    assert all_messages_count() == before


def test_an_address_of_another_domain_creates_nothing(owner):
    _, conversation = _emailed_thread(owner)
    address = _thread_address(conversation["id"]).replace(MAIL_DOMAIN, "elsewhere.example.com")
    before = all_messages_count()
    deliver_inbound(fixture_mail("apple_mail_reply_plain.eml", address))
    assert all_messages_count() == before


@pytest.mark.parametrize("fixture", ["spam_verdict_fail.eml", "virus_verdict_fail.eml"])
def test_spam_and_viruses_are_dropped(owner, fixture, capsys):
    _, conversation = _emailed_thread(owner)
    before = all_messages_count()
    assert deliver_inbound(fixture_mail(fixture, _thread_address(conversation["id"]))) == NO_FAILURES
    assert all_messages_count() == before
    assert '"InboundEmailDropped"' in capsys.readouterr().out  # the EMF metric line CloudWatch counts


def test_an_s3_object_that_is_gone_is_dropped_not_retried(owner):
    from ingestion.handler import lambda_handler
    from tests.support.conversations_helpers import s3_notification
    from tests.support.events import lambda_context, sqs_event, sqs_record

    event = sqs_event(sqs_record(s3_notification("inbound/never-written")))
    assert lambda_handler(event, lambda_context("leadcrm-ingestion")) == NO_FAILURES


def test_a_member_threads_reply_is_recorded_without_a_lead(owner):
    member = make_membership(owner.organization, make_user(email="member@example.com"), role="member")
    conversation = open_conversation(owner, {"membershipId": str(member.id), "body": "Class moved to 19:00"})
    conversation_id = conversation.data["conversation"]["id"]
    deliver_inbound(fixture_mail("apple_mail_reply_plain.eml", _thread_address(conversation_id)))
    assert thread_row(conversation_id)["unread_count"] == 1
    [event] = outbox_of(conversation_id, "conversation.inbound_received")
    assert event["payload"]["leadId"] is None


# -- replies to bulk mail -----------------------------------------------------------------------------------


def test_a_reply_to_bulk_mail_creates_the_leads_thread_and_marks_it_contacted(owner):
    lead = create_lead(owner, email="dana.cohen@gmail.com")
    assert threads_of_org(owner.org_id) == []
    deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", _lead_address(lead["id"])))
    [thread] = threads_of_org(owner.org_id)
    assert thread["lead_id"] == uuid.UUID(lead["id"]) and thread["unread_count"] == 1
    assert [m["direction"] for m in messages_of(thread["id"])] == ["inbound"]
    assert lead_row(lead["id"])["status"] == "contacted"


def test_a_second_bulk_reply_goes_to_the_same_thread(owner):
    lead = create_lead(owner, email="dana.cohen@gmail.com")
    conversation = open_conversation(owner, {"leadId": lead["id"]}).data["conversation"]
    deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", _lead_address(lead["id"])))
    deliver_inbound(fixture_mail("apple_mail_reply_plain.eml", _lead_address(lead["id"])))
    assert [t["id"] for t in threads_of_org(owner.org_id)] == [uuid.UUID(conversation["id"])]
    assert thread_row(conversation["id"])["unread_count"] == 2


def test_a_bulk_reply_for_a_lead_that_was_erased_creates_nothing(owner):
    lead = create_lead(owner, email="dana.cohen@gmail.com")
    address = _lead_address(lead["id"])
    call_api("DELETE", leads_path(owner.org_id, lead["id"]), sub=owner.sub)
    before = all_messages_count()
    deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", address))
    assert all_messages_count() == before and threads_of_org(owner.org_id) == []


def test_a_bulk_reply_lands_only_in_the_leads_own_organization(owner):
    lead = create_lead(owner, email="dana.cohen@gmail.com")
    stranger = make_caller(role="owner")
    create_lead(stranger, email="dana.cohen@gmail.com")
    deliver_inbound(fixture_mail("gmail_reply_multipart_qp.eml", _lead_address(lead["id"])))
    assert len(threads_of_org(owner.org_id)) == 1 and threads_of_org(stranger.org_id) == []


def test_the_inbox_shows_the_reply_as_unread(owner):
    _, conversation = _emailed_thread(owner)
    deliver_inbound(fixture_mail("hebrew_windows_1255_qp.eml", _thread_address(conversation["id"])))
    unread = call_api("GET", conversations_path(owner.org_id), sub=owner.sub, query={"unread": "true"}).data
    assert [(t["id"], t["unreadCount"]) for t in unread] == [(conversation["id"], 1)]
    assert unread[0]["lastMessage"]["direction"] == "inbound"
