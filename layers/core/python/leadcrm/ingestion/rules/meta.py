"""Rules of webhook ingestion (spec G6, G7, "Campaign hooks"), without I/O.

- A Meta leadgen notification names a page and a leadgen id; the lead itself is read from Graph and its
  field_data mapped here: full name (or first + last), email, phone; every other answer goes into the note.
  The source is instagram when Graph says the lead came from Instagram, else facebook.
- A WhatsApp notification creates a lead only for a message carrying a click-to-WhatsApp referral; organic
  messages are dropped by design. Phone = wa_id (in E.164), name = the profile name, source whatsapp.
- The natural key of a delivery: leadgen_id; for WhatsApp the referral's ctwa_clid, else the message id.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

META_CHANNEL = "meta_lead_ads"
WHATSAPP_CHANNEL = "whatsapp"
META_PROVIDER = "meta_lead_ads"
WHATSAPP_PROVIDER = "whatsapp_cloud"
FACEBOOK_SOURCE, INSTAGRAM_SOURCE, WHATSAPP_SOURCE = "facebook", "instagram", "whatsapp"
MAX_NAME_LENGTH = 200
MAX_NOTE_LENGTH = 5000

# Lead form questions Meta names itself (the ones we map onto the lead); custom questions go to the note.
NAME_FIELDS = ("full_name", "name")
FIRST_NAME_FIELDS = ("first_name",)
LAST_NAME_FIELDS = ("last_name",)
EMAIL_FIELDS = ("email", "work_email")
PHONE_FIELDS = ("phone_number", "phone", "work_phone_number")


# --- Meta Lead Ads ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadgenChange:
    """One `leadgen` change of a page webhook: ids only."""

    page_id: str
    leadgen_id: str
    form_id: str | None = None
    ad_id: str | None = None
    adgroup_id: str | None = None


def leadgen_changes(payload: dict[str, Any]) -> list[LeadgenChange]:
    """The leadgen changes of a page webhook (Meta batches several entries and changes in one delivery).
    Changes of other fields, or without a leadgen id, are not leads and are left out."""
    found = []
    for entry in _dicts(payload.get("entry")):
        for change in _dicts(entry.get("changes")):
            value = change.get("value")
            if change.get("field") != "leadgen" or not isinstance(value, dict):
                continue
            leadgen_id, page_id = _text(value.get("leadgen_id")), _text(value.get("page_id") or entry.get("id"))
            if leadgen_id and page_id:
                found.append(
                    LeadgenChange(
                        page_id=page_id,
                        leadgen_id=leadgen_id,
                        form_id=_text(value.get("form_id")),
                        ad_id=_text(value.get("ad_id")),
                        adgroup_id=_text(value.get("adgroup_id")),
                    )
                )
    return found


# The Graph fields a fetched lead carries from the fetcher (outside the VPC) to the ingestion processor.
FETCHED_LEAD_FIELDS = (
    "id",
    "created_time",
    "field_data",
    "ad_id",
    "ad_name",
    "adset_id",
    "adset_name",
    "campaign_id",
    "campaign_name",
    "form_id",
    "platform",
    "is_organic",
)


@dataclass(frozen=True)
class FetchedMetaLead:
    """A leadgen change with the lead Graph gave for it: what the ingestion processor takes in, no Graph call."""

    change: LeadgenChange
    graph_lead: dict[str, Any]


def fetched_lead_payload(change: LeadgenChange, graph_lead: dict[str, Any]) -> dict[str, Any]:
    """The `meta.lead` message payload: the change's ids and Graph's answer (only the fields we read)."""
    return {
        "pageId": change.page_id,
        "leadgenId": change.leadgen_id,
        "formId": change.form_id,
        "adId": change.ad_id,
        "adgroupId": change.adgroup_id,
        "lead": {key: graph_lead[key] for key in FETCHED_LEAD_FIELDS if key in graph_lead},
    }


def fetched_lead_from_payload(payload: dict[str, Any]) -> FetchedMetaLead:
    """The inverse of `fetched_lead_payload`; ValueError when the message lacks the page or the leadgen id."""
    page_id, leadgen_id = _text(payload.get("pageId")), _text(payload.get("leadgenId"))
    lead = payload.get("lead")
    if not page_id or not leadgen_id or not isinstance(lead, dict):
        raise ValueError("a meta.lead message needs pageId, leadgenId and lead")
    change = LeadgenChange(
        page_id=page_id,
        leadgen_id=leadgen_id,
        form_id=_text(payload.get("formId")),
        ad_id=_text(payload.get("adId")),
        adgroup_id=_text(payload.get("adgroupId")),
    )
    return FetchedMetaLead(change=change, graph_lead=lead)


@dataclass(frozen=True)
class MappedLead:
    """What an ingested lead becomes in `NewLead` terms."""

    name: str | None
    email: str | None
    phone: str | None
    note: str | None
    source: str


def map_meta_lead(graph_lead: dict[str, Any]) -> MappedLead:
    """Graph's field_data onto the lead. An email Meta let through that is not one is kept in the note."""
    answers: dict[str, str] = {}
    for item in _dicts(graph_lead.get("field_data")):
        name = _text(item.get("name"))
        values = [v for v in (_text(x) for x in (item.get("values") or [])) if v]
        if name and values:
            answers[name] = ", ".join(values)
    used: set[str] = set()

    def take(names: tuple[str, ...]) -> str | None:
        for key in names:
            if answers.get(key):
                used.add(key)
                return answers[key]
        return None

    name = take(NAME_FIELDS)
    first, last = take(FIRST_NAME_FIELDS), take(LAST_NAME_FIELDS)
    if name is None and (first or last):
        name = " ".join(part for part in (first, last) if part)
    email = take(EMAIL_FIELDS)
    if email is not None and not is_email(email):
        used.difference_update(EMAIL_FIELDS)  # kept as an answer in the note instead
        email = None
    phone = take(PHONE_FIELDS)
    other = [f"{_question(key)}: {value}" for key, value in answers.items() if key not in used]
    return MappedLead(
        name=name[:MAX_NAME_LENGTH] if name else None,
        email=email,
        phone=phone,
        note="\n".join(other)[:MAX_NOTE_LENGTH] or None,
        source=meta_source(graph_lead.get("platform")),
    )


def meta_source(platform: Any) -> str:
    """Graph's `platform` ('fb', 'ig', sometimes spelled out) as the lead's source."""
    return INSTAGRAM_SOURCE if str(platform or "").strip().lower() in ("ig", "instagram") else FACEBOOK_SOURCE


def meta_campaign_hook(graph_lead: dict[str, Any], change: LeadgenChange) -> tuple[str, str] | None:
    """(external_ref, name) of the lead's campaign hook: its form (the surface a person filled in), else its
    ad; named after the Meta campaign when Graph names one. None when Meta named neither."""
    form_id = _text(graph_lead.get("form_id")) or change.form_id
    ad_id = _text(graph_lead.get("ad_id")) or change.ad_id
    campaign_name = _text(graph_lead.get("campaign_name"))
    if form_id:
        return f"form:{form_id}", campaign_name or f"Meta lead form {form_id}"
    if ad_id:
        return f"ad:{ad_id}", campaign_name or _text(graph_lead.get("ad_name")) or f"Meta ad {ad_id}"
    return None


def _question(key: str) -> str:
    """A form question as Meta keys it ('what_is_your_goal?') made readable ('what is your goal?')."""
    return key.replace("_", " ").strip()


# --- WhatsApp click-to-WhatsApp -------------------------------------------------------------------------


@dataclass(frozen=True)
class Referral:
    source_id: str | None
    source_type: str | None
    headline: str | None
    ctwa_clid: str | None


@dataclass(frozen=True)
class WhatsAppMessage:
    phone_number_id: str
    wamid: str
    wa_id: str
    profile_name: str | None
    text: str | None
    referral: Referral | None = field(default=None)
    message_type: str | None = None  # text, image, audio, … (what the thread shows of a message without text)

    @property
    def external_ref(self) -> str:
        """The natural key of the delivery: the click (ctwa_clid), else the message."""
        if self.referral is not None and self.referral.ctwa_clid:
            return self.referral.ctwa_clid
        return self.wamid

    @property
    def phone(self) -> str:
        """wa_id is the sender's number in international form without the plus: E.164 once it has one."""
        return self.wa_id if self.wa_id.startswith("+") else f"+{self.wa_id}"


def whatsapp_messages(payload: dict[str, Any]) -> list[WhatsAppMessage]:
    """The inbound messages of a WhatsApp Cloud webhook (status updates and other fields are not messages)."""
    found = []
    for phone_number_id, value in _messages_values(payload):
        profiles = {
            _text(c.get("wa_id")): _text((c.get("profile") or {}).get("name")) for c in _dicts(value.get("contacts"))
        }
        for message in _dicts(value.get("messages")):
            wamid, wa_id = _text(message.get("id")), _text(message.get("from"))
            if not (phone_number_id and wamid and wa_id):
                continue
            found.append(
                WhatsAppMessage(
                    phone_number_id=phone_number_id,
                    wamid=wamid,
                    wa_id=wa_id,
                    profile_name=(profiles.get(wa_id) or None),
                    text=_message_text(message),
                    referral=_referral(message.get("referral")),
                    message_type=_text(message.get("type")),
                )
            )
    return found


def _messages_values(payload: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each `messages` change of a WhatsApp Cloud webhook: the receiving number's id and the change's value
    (which holds inbound messages, status updates, or both)."""
    for entry in _dicts(payload.get("entry")):
        for change in _dicts(entry.get("changes")):
            value = change.get("value")
            if change.get("field") == "messages" and isinstance(value, dict):
                yield _text((value.get("metadata") or {}).get("phone_number_id")), value


@dataclass(frozen=True)
class WhatsAppStatusUpdate:
    """One status webhook of an outbound message: its wamid, `sent` / `delivered` / `read` / `failed`, when
    (WhatsApp's own timestamp, epoch seconds) and, for a failure, its errors (codes and titles, no text)."""

    phone_number_id: str
    wamid: str
    status: str
    timestamp: int | None
    errors: tuple[dict[str, Any], ...] = ()


WHATSAPP_STATUS_VALUES = frozenset({"sent", "delivered", "read", "failed"})
ERROR_FIELDS = ("code", "title", "message", "href")


def whatsapp_statuses(payload: dict[str, Any]) -> list[WhatsAppStatusUpdate]:
    """The status updates of a WhatsApp Cloud webhook; unknown statuses (`deleted`, …) are left out."""
    found = []
    for phone_number_id, value in _messages_values(payload):
        for status in _dicts(value.get("statuses")):
            wamid, state = _text(status.get("id")), _text(status.get("status"))
            if not (phone_number_id and wamid and state in WHATSAPP_STATUS_VALUES):
                continue
            timestamp = _text(status.get("timestamp"))
            errors = tuple(
                {
                    k: _text(error[k]) if isinstance(error[k], str) else error[k]
                    for k in ERROR_FIELDS
                    if isinstance(error.get(k), str | int) and not isinstance(error[k], bool)
                }
                | (
                    {"details": str(error["error_data"].get("details"))[:500]}
                    if isinstance(error.get("error_data"), dict) and error["error_data"].get("details")
                    else {}
                )
                for error in _dicts(status.get("errors"))
            )
            found.append(
                WhatsAppStatusUpdate(
                    phone_number_id=phone_number_id,
                    wamid=wamid,
                    status=str(state),
                    timestamp=int(timestamp) if timestamp and timestamp.isdigit() else None,
                    errors=errors,
                )
            )
    return found


def whatsapp_campaign_hook(referral: Referral) -> tuple[str, str] | None:
    """(external_ref, name) of a click-to-WhatsApp hook: the ad (source_id), named after its headline."""
    if not referral.source_id:
        return None
    return referral.source_id, referral.headline or f"WhatsApp ad {referral.source_id}"


def _referral(raw: Any) -> Referral | None:
    if not isinstance(raw, dict):
        return None
    return Referral(
        source_id=_text(raw.get("source_id")),
        source_type=_text(raw.get("source_type")),
        headline=_text(raw.get("headline")),
        ctwa_clid=_text(raw.get("ctwa_clid")),
    )


def _message_text(message: dict[str, Any]) -> str | None:
    text = message.get("text")
    body = _text(text.get("body")) if isinstance(text, dict) else None
    return body[:MAX_NOTE_LENGTH] if body else None


# --- shared ----------------------------------------------------------------------------------------------


def is_email(value: str) -> bool:
    # imported here: email_validator builds its tables on import (~17 ms), and only a field that may be an
    # email needs it
    from email_validator import EmailNotValidError, validate_email

    try:
        validate_email(value, check_deliverability=False)
    except EmailNotValidError:
        return False
    return True


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    """A non-empty string, or None; numbers (Meta sends some ids as numbers) become their digits. NUL
    characters, which PostgreSQL text cannot hold, are removed."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        value = str(int(value)) if float(value).is_integer() else str(value)
    if not isinstance(value, str):
        return None
    cleaned = value.replace("\x00", "").strip()
    return cleaned or None
