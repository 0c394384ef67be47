"""Reading WhatsApp Cloud status webhooks and writing the Cloud API's send body (no I/O)."""

from __future__ import annotations

from leadcrm.ingestion.rules.meta import whatsapp_messages, whatsapp_statuses
from leadcrm.ingestion.whatsapp_graph import send_payload


def _webhook(value: dict) -> dict:
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "1", "changes": [{"field": "messages", "value": value}]}],
    }


def test_a_status_webhook_names_the_message_its_status_time_and_errors():
    payload = _webhook(
        {
            "metadata": {"phone_number_id": "106540352242922"},
            "statuses": [
                {
                    "id": "wamid.A",
                    "status": "failed",
                    "timestamp": "1767225600",
                    "recipient_id": "447700900456",
                    "errors": [{"code": 131026, "title": "Message undeliverable", "error_data": {"details": "x"}}],
                }
            ],
        }
    )

    (status,) = whatsapp_statuses(payload)

    assert (status.phone_number_id, status.wamid, status.status, status.timestamp) == (
        "106540352242922",
        "wamid.A",
        "failed",
        1767225600,
    )
    assert status.errors == ({"code": 131026, "title": "Message undeliverable", "details": "x"},)


def test_statuses_we_do_not_know_and_statuses_without_an_id_are_left_out():
    payload = _webhook(
        {
            "metadata": {"phone_number_id": "1"},
            "statuses": [
                {"id": "wamid.A", "status": "deleted"},
                {"status": "read"},
                {"id": "wamid.B", "status": "read"},
            ],
        }
    )

    assert [s.wamid for s in whatsapp_statuses(payload)] == ["wamid.B"]


def test_a_status_webhook_carries_no_inbound_message():
    payload = _webhook({"metadata": {"phone_number_id": "1"}, "statuses": [{"id": "wamid.B", "status": "read"}]})

    assert whatsapp_messages(payload) == []


def test_an_inbound_message_without_text_keeps_its_type():
    payload = _webhook(
        {"metadata": {"phone_number_id": "1"}, "messages": [{"from": "447700900456", "id": "wamid.C", "type": "image"}]}
    )

    (message,) = whatsapp_messages(payload)

    assert (message.text, message.message_type) == (None, "image")


def test_a_text_send_is_a_cloud_api_text_message_naming_our_message_id():
    body = send_payload({"messageId": "m-1", "to": "447700900456", "type": "text", "text": "Hello"})

    assert body == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "447700900456",
        "biz_opaque_callback_data": "m-1",
        "type": "text",
        "text": {"preview_url": False, "body": "Hello"},
    }


def test_a_template_send_names_its_language_and_body_parameters():
    template = {"name": "trial_reminder", "language": "en_US", "parameters": ["Ana"]}
    body = send_payload({"messageId": "m-1", "to": "1", "type": "template", "template": template})

    assert body["template"] == {
        "name": "trial_reminder",
        "language": {"code": "en_US"},
        "components": [{"type": "body", "parameters": [{"type": "text", "text": "Ana"}]}],
    }
