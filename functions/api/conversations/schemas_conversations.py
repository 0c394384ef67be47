"""Bodies of the conversations, consent and bulk email routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from api.schemas import CamelModel, OutModel, assignee_from
from leadcrm.conversations.consent import ConsentChannel, ConsentStatus, LegalBasis
from leadcrm.conversations.rules.messages import MAX_SUBJECT_LENGTH, Channel, ConversationStatus
from leadcrm.conversations.rules.whatsapp import MAX_TEXT_LENGTH as MAX_WHATSAPP_TEXT_LENGTH
from leadcrm.leads.rules.listing import (
    MAX_STAGE_IDS,
    MAX_TAG_IDS,
    SEARCH_MAX_LENGTH,
    SEARCH_MIN_LENGTH,
    ArchivedFilter,
)
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.platform.assignee import ASSIGNEE_PATTERN

MAX_BODY_LENGTH = 20_000
# A subject is one header line: a line break in it is refused here, never sent on as a header injection.
SUBJECT_PATTERN = r"^[^\r\n]*$"
MAX_NOTE_LENGTH = 5_000
MAX_AUDIENCE_IDS = 10_000


class OpenConversationBody(CamelModel):
    """POST …/conversations: find or create the contact's thread, then send `body` if given (G9)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "leadId": "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10",
                    "channel": "email",
                    "subject": "Your trial class",
                    "body": "Hi Ana, thanks for your enquiry.",
                }
            ]
        }
    )

    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None
    channel: Channel = Channel.EMAIL
    subject: str | None = Field(default=None, max_length=MAX_SUBJECT_LENGTH, pattern=SUBJECT_PATTERN)
    body: str | None = Field(default=None, min_length=1, max_length=MAX_BODY_LENGTH)

    @model_validator(mode="after")
    def _one_contact(self) -> OpenConversationBody:
        if (self.lead_id is None) == (self.membership_id is None):
            raise ValueError("name exactly one of leadId and membershipId")
        return self


class SendMessageBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"body": "Hi Ana, your trial is on Thursday at 18:30."}]})
    body: str = Field(min_length=1, max_length=MAX_BODY_LENGTH)
    # Used only by a thread's first outbound message: later ones reuse the stored subject with "Re:".
    subject: str | None = Field(default=None, max_length=MAX_SUBJECT_LENGTH, pattern=SUBJECT_PATTERN)


class NoteBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"body": "She asked for a call after 18:00."}]})
    body: str = Field(min_length=1, max_length=MAX_NOTE_LENGTH)


class AssignConversationBody(CamelModel):
    """An active member of the organization, or null to unassign."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"assigneeUserId": "0190b6a2-7c3e-7013-9a51-3f0e8c2b1a13"}]}
    )

    assignee_user_id: uuid.UUID | None


class ConversationPatchBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"status": "closed"}]})
    status: ConversationStatus


class LastMessage(OutModel):
    direction: str
    status: str
    preview: str
    at: datetime


class Conversation(OutModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    channel: str
    lead_id: uuid.UUID | None
    membership_id: uuid.UUID | None
    contact_name: str | None = None
    subject: str | None
    status: str
    unread_count: int
    assignee_user_id: uuid.UUID | None = assignee_from("assigned_to_user_id")
    assignee_name: str | None = None
    last_message_at: datetime
    last_message: LastMessage | None = None
    created_at: datetime
    updated_at: datetime


class Message(OutModel):
    id: uuid.UUID
    conversation_id: uuid.UUID
    direction: str
    channel: str
    status: str
    author_user_id: uuid.UUID | None
    subject: str | None
    body: str
    provider_message_id: str | None
    external_message_id: str | None
    error: str | None
    sent_at: datetime | None
    delivery_status: str | None = Field(
        default=None,
        description="Email: what SES said after it took the mail: delivered, bounced, complained, rejected or "
        "delayed (the worst news so far). WhatsApp: the highest status webhook so far, sent < delivered < read < "
        "failed. Null until anything was said",
    )
    delivery_status_at: datetime | None = None
    delivery_detail: dict[str, Any] | None = Field(
        default=None,
        description="The SES event's types: eventType, bounceType, bounceSubType, …; a failed WhatsApp "
        "message's `errors` (code, title)",
    )
    template_name: str | None = Field(default=None, description="A WhatsApp template message's template")
    template_language: str | None = None
    template_parameters: list[str] | None = None
    created_at: datetime


class WhatsAppTemplateChoice(CamelModel):
    name: str = Field(min_length=1, max_length=512)
    language: str = Field(min_length=2, max_length=20, description="The template's language code, e.g. en_US")
    parameters: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default_factory=list, max_length=20, description="The body's {{1}}, {{2}}, … in order"
    )


class WhatsAppSendBody(CamelModel):
    """Exactly one of `text` (free-form: only inside the 24-hour customer-service window) and `template`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"text": "Hi Ana, your trial is on Thursday at 18:30."},
                {"template": {"name": "trial_reminder", "language": "en_US", "parameters": ["Ana", "Thursday"]}},
            ]
        }
    )

    text: str | None = Field(default=None, min_length=1, max_length=MAX_WHATSAPP_TEXT_LENGTH)
    template: WhatsAppTemplateChoice | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> WhatsAppSendBody:
        if (self.text is None) == (self.template is None):
            raise ValueError("send exactly one of text and template")
        return self


class WhatsAppTemplate(OutModel):
    id: uuid.UUID
    business_account_id: str
    name: str
    language: str
    status: str = Field(description="As WhatsApp says: APPROVED, PENDING, REJECTED, PAUSED, …")
    category: str | None
    components: list[Any]
    parameter_count: int = Field(description="How many body parameters a send names")
    synced_at: datetime


class WhatsAppTemplateSyncBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"businessAccountId": "102290129340398"}]})
    business_account_id: str = Field(min_length=1, max_length=64, pattern=r"^[0-9]+$")


class WhatsAppTemplateSync(OutModel):
    business_account_id: str
    phone_number_id: str
    queued: bool


class ConversationWithMessage(OutModel):
    conversation: Conversation
    message: Message | None = None


# -- consent ------------------------------------------------------------------------------------------


class ConsentBody(CamelModel):
    """PUT …/leads/{leadId}/consent/{channel}: a staff grant (with its legal basis) or revocation."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"status": "granted", "legalBasis": "consent", "note": "Asked by phone to be emailed"}]
        }
    )

    status: ConsentStatus
    legal_basis: LegalBasis | None = None
    note: str | None = Field(default=None, max_length=1000)

    @model_validator(mode="after")
    def _grant_has_basis(self) -> ConsentBody:
        if self.status is ConsentStatus.GRANTED and self.legal_basis is None:
            raise ValueError("a grant needs its legalBasis")
        return self


class ConsentChannelState(OutModel):
    channel: ConsentChannel
    status: str | None
    allowed: bool
    legal_basis: str | None
    source: str | None
    updated_at: datetime | None


class ConsentEvent(OutModel):
    id: uuid.UUID
    channel: str
    status: str
    legal_basis: str | None
    source: str
    actor_user_id: uuid.UUID | None
    note: str | None
    occurred_at: datetime


class LeadConsent(OutModel):
    lead_id: uuid.UUID
    channels: list[ConsentChannelState]
    history: list[ConsentEvent]


# -- bulk email -----------------------------------------------------------------------------------------


class BulkAudience(CamelModel):
    """Who gets the mail: every condition given must hold (AND). A pipeline with stageIds (and the legacy
    single stageId, united) selects on the lead's effective stage in that pipeline; includeTagIds keeps
    leads having any of them, excludeTagIds drops leads having any of them; the rest are the lead list's
    filters, so "everyone matching the list" is the list's query string as an audience."""

    lead_ids: list[uuid.UUID] | None = Field(default=None, min_length=1, max_length=MAX_AUDIENCE_IDS)
    pipeline_id: uuid.UUID | None = None
    stage_id: uuid.UUID | None = None
    stage_ids: list[uuid.UUID] | None = Field(default=None, max_length=MAX_STAGE_IDS)
    include_tag_ids: list[uuid.UUID] | None = Field(default=None, max_length=MAX_TAG_IDS)
    exclude_tag_ids: list[uuid.UUID] | None = Field(default=None, max_length=MAX_TAG_IDS)
    statuses: list[StageCategory] | None = Field(default=None, max_length=len(StageCategory))
    campaign_id: uuid.UUID | None = None
    # me, unassigned or a user id, as the lead list's `assignee` (api.lists)
    assignee: str | None = Field(default=None, pattern=ASSIGNEE_PATTERN)
    is_test: bool | None = None
    archived: ArchivedFilter = ArchivedFilter.LIVE
    search: str | None = Field(default=None, min_length=SEARCH_MIN_LENGTH, max_length=SEARCH_MAX_LENGTH)
    # Say so to mail every (live) lead of the organization: an empty audience is refused otherwise.
    all_leads: bool = False

    @model_validator(mode="after")
    def _says_who(self) -> BulkAudience:
        if (self.stage_id or self.stage_ids) and self.pipeline_id is None:
            raise ValueError("stageId and stageIds need the pipelineId they belong to")
        named = self.model_dump(exclude_defaults=True, exclude={"all_leads"})
        if not named and not self.all_leads:
            raise ValueError("name an audience (or allLeads: true)")
        return self


class BulkEmailBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "subject": "Our summer timetable",
                    "body": "Hi, our summer timetable starts on 1 July.",
                    "audience": {"pipelineId": "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12", "statuses": ["contacted"]},
                }
            ]
        }
    )
    subject: str = Field(min_length=1, max_length=MAX_SUBJECT_LENGTH, pattern=SUBJECT_PATTERN)
    body: str = Field(min_length=1, max_length=MAX_BODY_LENGTH)
    audience: BulkAudience


class SkippedLead(OutModel):
    lead_id: uuid.UUID
    reason: str


class DeliveryCounts(OutModel):
    """Recipients by what SES said about their mail (the worst news for each)."""

    delayed: int
    delivered: int
    rejected: int
    bounced: int
    complained: int


class BulkEmailJob(OutModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    subject: str
    status: str = Field(description="queued, sending, paused (see pauseReason) or done")
    audience: dict[str, Any]
    total: int
    pending: int
    sending: int
    sent: int
    failed: int
    unknown: int = Field(description="claimed by a run that died: maybe mailed, never re-sent")
    skipped: int
    skipped_no_consent: int
    skipped_no_email: int
    skipped_leads: list[SkippedLead]
    delivery: DeliveryCounts
    paused_at: datetime | None
    pause_reason: str | None = Field(description="bounce_rate: too many of its mails bounced permanently")
    pause_detail: dict[str, Any] | None = Field(
        description="the figures that paused it: sent, bounced, bounceRate, threshold, minSent"
    )
    created_at: datetime
    completed_at: datetime | None


class BulkRecipient(OutModel):
    lead_id: uuid.UUID
    lead_name: str | None
    status: str = Field(description="pending, sending, sent, failed, unknown or skipped")
    skip_reason: str | None
    provider_message_id: str | None
    error: str | None
    sent_at: datetime | None
    delivery_status: str | None
    delivery_status_at: datetime | None
    delivery_detail: dict[str, Any] | None
