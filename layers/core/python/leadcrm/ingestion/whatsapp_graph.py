"""The WhatsApp Cloud API on Graph, for the calls the graph_fetch function makes (outside the VPC): send a
message from a phone number, and list a WhatsApp Business account's message templates.

The base URL is configuration (META_GRAPH_BASE_URL, as for leads): the local stack and the tests point it at
a stand-in. The token goes in the Authorization header, never in the URL. No SQLAlchemy, no pydantic.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from leadcrm.ingestion.meta_graph import GraphError, base_url

TIMEOUT_SECONDS = 10
TEMPLATE_FIELDS = "name,language,status,category,components"
MAX_TEMPLATE_PAGES = 20
# Graph error codes of a send worth a retry although they come with a 4xx: temporary errors and rate
# limits (1, 2, 4, 17, 80007, 130429, 131048, 131056), token trouble (190) and permissions (10, 200-299),
# which a reconnect fixes. Any other 4xx (an invalid number, a re-engagement error 131047, a template that
# does not exist 132001, …) is the message's own: it fails, with Graph's code and title.
RETRYABLE_CODES = frozenset(
    {"1", "2", "4", "10", "17", "190", "80007", "130429", "131048", "131056", *(str(c) for c in range(200, 300))}
)


class SendRefused(Exception):
    """Graph refused this message for good: `code: title` (never the message text)."""

    def __init__(self, status: int, code: str, title: str) -> None:
        super().__init__(f"{code}: {title}"[:500])
        self.status, self.code, self.title = status, code, title


def send_payload(send: dict[str, Any]) -> dict[str, Any]:
    """The Cloud API body of a queued send (conversations.whatsapp.queue_message's `send`)."""
    body: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": send["to"],
        # Echoed in every status webhook of the message: our id, whatever happened to the send's answer.
        "biz_opaque_callback_data": send["messageId"],
    }
    if send.get("type") == "template":
        template = send["template"]
        parameters = [{"type": "text", "text": str(p)} for p in template.get("parameters") or []]
        body["type"] = "template"
        body["template"] = {
            "name": template["name"],
            "language": {"code": template["language"]},
            **({"components": [{"type": "body", "parameters": parameters}]} if parameters else {}),
        }
    else:
        body["type"] = "text"
        body["text"] = {"preview_url": False, "body": send["text"]}
    return body


def send_message(phone_number_id: str, access_token: str, send: dict[str, Any]) -> str:
    """POST /<phone number id>/messages; the wamid. SendRefused for a refusal of this message, GraphError
    (transient: retried) for an outage, throttling, a rejected token or no answer."""
    url = f"{base_url()}/{urllib.parse.quote(phone_number_id, safe='')}/messages"
    answer = _call("POST", url, access_token, send_payload(send), refuse=True)
    messages = answer.get("messages") if isinstance(answer, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict) or not messages[0].get("id"):
        raise GraphError(200, "no_message_id")
    return str(messages[0]["id"])


def list_templates(business_account_id: str, access_token: str) -> list[dict[str, Any]]:
    """GET /<WhatsApp Business account id>/message_templates, every page (at most MAX_TEMPLATE_PAGES)."""
    templates: list[dict[str, Any]] = []
    after: str | None = None
    for _ in range(MAX_TEMPLATE_PAGES):
        query = {"fields": TEMPLATE_FIELDS, "limit": "100", **({"after": after} if after else {})}
        url = f"{base_url()}/{urllib.parse.quote(business_account_id, safe='')}/message_templates?" + (
            urllib.parse.urlencode(query)
        )
        page = _call("GET", url, access_token, None, refuse=False)
        templates.extend(t for t in page.get("data") or [] if isinstance(t, dict))
        paging = page.get("paging") if isinstance(page.get("paging"), dict) else {}
        after = ((paging.get("cursors") or {}).get("after")) if paging.get("next") else None
        if not after:
            break
    return templates


def _call(method: str, url: str, token: str, body: dict[str, Any] | None, *, refuse: bool) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"authorization": f"Bearer {token}", "accept": "application/json"}
    if data is not None:
        headers["content-type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            answer = json.loads(response.read())
            return answer if isinstance(answer, dict) else {}
    except urllib.error.HTTPError as error:
        code, title = _error_of(error)
        if refuse and 400 <= error.code < 500 and error.code != 429 and code not in RETRYABLE_CODES:
            raise SendRefused(error.code, code, title) from None
        raise GraphError(error.code, code) from None
    except (urllib.error.URLError, TimeoutError, ValueError) as error:
        raise GraphError(None, type(error).__name__) from None


def _error_of(error: urllib.error.HTTPError) -> tuple[str, str]:
    try:
        detail = json.loads(error.read())["error"]
        return str(detail.get("code", "unknown")), str(detail.get("error_user_title") or detail.get("message") or "")[
            :200
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return "unknown", ""
