"""ingestion.rules.meta: what a Meta leadgen or WhatsApp webhook carries, and how a Graph lead becomes a lead."""

from __future__ import annotations

import pytest

from leadcrm.ingestion.rules.meta import (
    LeadgenChange,
    Referral,
    leadgen_changes,
    map_meta_lead,
    meta_campaign_hook,
    meta_source,
    whatsapp_campaign_hook,
    whatsapp_messages,
)


def _fields(**answers: str) -> dict:
    return {"field_data": [{"name": k, "values": [v]} for k, v in answers.items()]}


# --- leadgen changes -------------------------------------------------------------------------------------


def test_every_leadgen_change_of_a_batched_delivery_is_found():
    payload = {
        "object": "page",
        "entry": [
            {"id": "1", "changes": [{"field": "leadgen", "value": {"leadgen_id": "11", "page_id": "1"}}]},
            {
                "id": "2",
                "changes": [
                    {"field": "leadgen", "value": {"leadgen_id": "21", "page_id": "2", "form_id": "7", "ad_id": "8"}},
                    {"field": "feed", "value": {"item": "post"}},
                ],
            },
        ],
    }
    assert leadgen_changes(payload) == [
        LeadgenChange(page_id="1", leadgen_id="11"),
        LeadgenChange(page_id="2", leadgen_id="21", form_id="7", ad_id="8"),
    ]


def test_numeric_ids_are_read_as_their_digits():
    payload = {"entry": [{"changes": [{"field": "leadgen", "value": {"leadgen_id": 950000000000001, "page_id": 42}}]}]}
    assert leadgen_changes(payload) == [LeadgenChange(page_id="42", leadgen_id="950000000000001")]


def test_the_page_falls_back_to_the_entry_id():
    payload = {"entry": [{"id": "77", "changes": [{"field": "leadgen", "value": {"leadgen_id": "1"}}]}]}
    assert leadgen_changes(payload)[0].page_id == "77"


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"entry": "nope"},
        {"entry": [{"changes": [{"field": "leadgen", "value": {"page_id": "1"}}]}]},
        {"entry": [1]},
    ],
)
def test_a_delivery_without_a_usable_leadgen_change_has_none(payload):
    assert leadgen_changes(payload) == []


# --- Graph lead -> lead ----------------------------------------------------------------------------------


def test_full_name_email_and_phone_are_mapped_onto_the_lead():
    mapped = map_meta_lead(_fields(full_name="Ada Lovelace", email="ada@example.com", phone_number="+447700900123"))
    assert (mapped.name, mapped.email, mapped.phone, mapped.note) == (
        "Ada Lovelace",
        "ada@example.com",
        "+447700900123",
        None,
    )


def test_first_and_last_name_make_the_name_when_there_is_no_full_name():
    assert map_meta_lead(_fields(first_name="Ada", last_name="Lovelace")).name == "Ada Lovelace"


def test_every_other_answer_goes_into_the_note_one_per_line():
    mapped = map_meta_lead(
        _fields(full_name="Ada", **{"what_is_your_goal?": "Run a 10k", "preferred_time": "Mornings"})
    )
    assert mapped.note == "what is your goal?: Run a 10k\npreferred time: Mornings"


def test_an_answer_with_several_values_keeps_them_all():
    mapped = map_meta_lead({"field_data": [{"name": "classes", "values": ["Yoga", "Pilates"]}]})
    assert mapped.note == "classes: Yoga, Pilates"


def test_an_email_that_is_not_one_is_kept_in_the_note_instead():
    mapped = map_meta_lead(_fields(full_name="Ada", email="ada at example"))
    assert mapped.email is None
    assert mapped.note == "email: ada at example"


def test_a_lead_without_field_data_maps_to_nobody():
    mapped = map_meta_lead({})
    assert (mapped.name, mapped.email, mapped.phone, mapped.note) == (None, None, None, None)


@pytest.mark.parametrize(
    ("platform", "source"),
    [("ig", "instagram"), ("instagram", "instagram"), ("IG", "instagram"), ("fb", "facebook"), (None, "facebook")],
)
def test_the_source_is_instagram_for_instagram_leads_and_facebook_otherwise(platform, source):
    assert meta_source(platform) == source


def test_a_nul_character_in_an_answer_is_removed():
    assert map_meta_lead(_fields(full_name="Ada\x00 L")).name == "Ada L"


# --- Meta campaign hook ----------------------------------------------------------------------------------


def test_the_hook_is_the_form_named_after_the_meta_campaign():
    hook = meta_campaign_hook({"form_id": "9", "campaign_name": "Spring"}, LeadgenChange("p", "l"))
    assert hook == ("form:9", "Spring")


def test_without_a_campaign_name_the_form_hook_names_the_form():
    assert meta_campaign_hook({}, LeadgenChange("p", "l", form_id="9")) == ("form:9", "Meta lead form 9")


def test_without_a_form_the_hook_is_the_ad():
    assert meta_campaign_hook({"ad_id": "5", "ad_name": "Video"}, LeadgenChange("p", "l")) == ("ad:5", "Video")


def test_without_form_or_ad_there_is_no_hook():
    assert meta_campaign_hook({}, LeadgenChange("p", "l")) is None


# --- WhatsApp --------------------------------------------------------------------------------------------


def _whatsapp(message: dict, contacts: list | None = None) -> dict:
    return {
        "entry": [
            {
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "metadata": {"phone_number_id": "106"},
                            "contacts": contacts
                            if contacts is not None
                            else [{"profile": {"name": "Ada"}, "wa_id": "447"}],
                            "messages": [message],
                        },
                    }
                ]
            }
        ]
    }


def test_a_message_with_a_referral_carries_the_click():
    (message,) = whatsapp_messages(
        _whatsapp(
            {
                "from": "447",
                "id": "wamid.1",
                "type": "text",
                "text": {"body": "Hi"},
                "referral": {"source_id": "9", "source_type": "ad", "headline": "Trial", "ctwa_clid": "clid"},
            }
        )
    )
    assert (message.phone_number_id, message.wamid, message.profile_name, message.text) == (
        "106",
        "wamid.1",
        "Ada",
        "Hi",
    )
    assert message.referral == Referral(source_id="9", source_type="ad", headline="Trial", ctwa_clid="clid")
    assert message.external_ref == "clid"


def test_an_organic_message_has_no_referral_and_is_keyed_on_its_id():
    (message,) = whatsapp_messages(_whatsapp({"from": "447", "id": "wamid.2", "type": "text", "text": {"body": "x"}}))
    assert message.referral is None
    assert message.external_ref == "wamid.2"


def test_a_referral_without_ctwa_clid_is_keyed_on_the_message_id():
    (message,) = whatsapp_messages(_whatsapp({"from": "447", "id": "wamid.3", "referral": {"source_id": "9"}}))
    assert message.external_ref == "wamid.3"


def test_wa_id_becomes_an_e164_phone():
    (message,) = whatsapp_messages(_whatsapp({"from": "447700900123", "id": "wamid.4"}))
    assert message.phone == "+447700900123"


def test_a_message_without_a_profile_has_no_name():
    (message,) = whatsapp_messages(_whatsapp({"from": "447", "id": "wamid.5"}, contacts=[]))
    assert message.profile_name is None


def test_status_updates_are_not_messages():
    payload = {"entry": [{"changes": [{"field": "messages", "value": {"statuses": [{"id": "wamid.6"}]}}]}]}
    assert whatsapp_messages(payload) == []


def test_the_whatsapp_hook_is_the_ad_named_after_its_headline():
    assert whatsapp_campaign_hook(Referral("9", "ad", "Trial week", "c")) == ("9", "Trial week")
    assert whatsapp_campaign_hook(Referral("9", "ad", None, "c")) == ("9", "WhatsApp ad 9")
    assert whatsapp_campaign_hook(Referral(None, None, None, "c")) is None
