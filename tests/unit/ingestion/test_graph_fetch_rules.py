"""The graph-fetch stage's pure rules: the `meta.lead` message a fetched lead travels in, and which Graph
errors drop a delivery (the lead is gone) rather than retry it."""

from __future__ import annotations

import pytest

from leadcrm.ingestion.meta_graph import LEAD_FIELDS, GraphError
from leadcrm.ingestion.rules.meta import (
    FETCHED_LEAD_FIELDS,
    FetchedMetaLead,
    LeadgenChange,
    fetched_lead_from_payload,
    fetched_lead_payload,
)

GRAPH_LEAD = {
    "id": "9001",
    "created_time": "2026-01-01T10:00:00+0000",
    "field_data": [{"name": "email", "values": ["ada@example.com"]}],
    "ad_id": "1",
    "ad_name": "Video",
    "adset_id": "2",
    "adset_name": "Set",
    "campaign_id": "3",
    "campaign_name": "Spring",
    "form_id": "4",
    "platform": "ig",
    "is_organic": False,
}


def test_a_fetched_lead_survives_its_message_unchanged():
    change = LeadgenChange(page_id="77", leadgen_id="9001", form_id="4", ad_id="1", adgroup_id="2")
    assert fetched_lead_from_payload(fetched_lead_payload(change, GRAPH_LEAD)) == FetchedMetaLead(change, GRAPH_LEAD)


def test_the_message_carries_only_the_graph_fields_ingestion_reads():
    payload = fetched_lead_payload(LeadgenChange("77", "9001"), {**GRAPH_LEAD, "access_token": "never-forward-me"})
    assert set(payload["lead"]) == set(FETCHED_LEAD_FIELDS)


def test_graph_is_asked_for_exactly_the_fields_the_message_carries():
    assert LEAD_FIELDS.split(",") == list(FETCHED_LEAD_FIELDS)


@pytest.mark.parametrize("payload", [{}, {"pageId": "77", "lead": {}}, {"pageId": "77", "leadgenId": "1", "lead": []}])
def test_a_message_without_page_leadgen_id_or_lead_is_refused(payload):
    with pytest.raises(ValueError):
        fetched_lead_from_payload(payload)


@pytest.mark.parametrize(("status", "code"), [(400, "100"), (404, "unknown"), (400, "unknown")])
def test_a_4xx_about_the_lead_means_it_is_gone(status, code):
    assert GraphError(status, code).lead_is_gone


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (500, "2"),
        (503, "1"),
        (None, "TimeoutError"),
        (429, "4"),
        (400, "17"),
        (400, "613"),
        (400, "190"),
        (403, "10"),
        (403, "200"),
    ],
)
def test_server_errors_no_answer_throttling_and_token_or_permission_trouble_are_retried(status, code):
    assert not GraphError(status, code).lead_is_gone
