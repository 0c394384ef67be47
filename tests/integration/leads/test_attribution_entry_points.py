"""Every entry point gives a lead its first touch: Meta Lead Ads (an ad touch on the form's campaign hook),
click-to-WhatsApp (a WhatsApp referral), and the CSV import, which writes leads in bulk without the shared
intake (an import touch, Direct / Unknown); a known person's later ad is appended with its hook."""

from __future__ import annotations

import pytest

from tests.support.analytics_helpers import touches_of
from tests.support.api import call_api
from tests.support.capture_helpers import lead_rows
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_number,
    connect_page,
    csv_text,
    ctwa_referral,
    deliver,
    deliver_leadgen,
    fresh_id,
    graph_lead,
    graph_stand_in,
    imports_path,
    leadgen_message,
    make_imports_bucket,
    run_queued_imports,
    upload,
    webhook_message,
    whatsapp_payload,
)


@pytest.fixture(autouse=True)
def _aws(event_bus, ingestion_queue, monkeypatch):
    make_imports_bucket(monkeypatch)


@pytest.fixture
def graph(monkeypatch):
    with graph_stand_in(monkeypatch) as stand_in:
        yield stand_in


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_a_meta_lead_is_acquired_by_an_ad_on_its_forms_campaign_hook(graph, owner):
    page = fresh_id()
    connect_page(owner, page)
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, platform="ig"))
    assert deliver_leadgen(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}
    (lead,) = lead_rows(owner.org_id)
    (first,) = touches_of(lead["id"])
    assert (first["kind"], first["channel"], first["campaign_id"]) == ("ad", "instagram", lead["campaign_id"])
    assert lead["campaign_id"] is not None


def test_a_known_persons_second_ad_lead_is_an_appended_touch_on_that_ads_hook(graph, owner):
    page = fresh_id()
    connect_page(owner, page)
    first_id, second_id = fresh_id(), fresh_id()
    graph.register(graph_lead(first_id, form_id="111"))
    graph.register(graph_lead(second_id, form_id="222"))
    assert deliver_leadgen(leadgen_message(page, first_id, form_id="111")) == {"batchItemFailures": []}
    assert deliver_leadgen(leadgen_message(page, second_id, form_id="222")) == {"batchItemFailures": []}
    (lead,) = lead_rows(owner.org_id)
    first, later = touches_of(lead["id"])
    assert first["campaign_id"] == lead["campaign_id"]  # the first form's hook stays the acquisition
    assert (later["kind"], later["is_first"]) == ("ad", False)
    assert later["campaign_id"] not in (None, first["campaign_id"])


def test_a_click_to_whatsapp_lead_is_acquired_by_a_whatsapp_referral(owner):
    number = fresh_id()
    connect_number(owner, number)
    payload = whatsapp_payload(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral(ctwa_clid=fresh_id()))
    assert deliver(webhook_message("whatsapp", payload)) == {"batchItemFailures": []}
    (lead,) = lead_rows(owner.org_id)
    (first,) = touches_of(lead["id"])
    assert (first["kind"], first["channel"]) == ("whatsapp_referral", "whatsapp")


def test_imported_leads_are_direct_unknown_import_touches(owner, ingestion_queue):
    created = call_api("POST", imports_path(owner), sub=owner.sub, body={"fileName": "leads.csv"}).data
    upload(created, csv_text(["name", "email"], ["Ada Lovelace", "ada@example.com"], ["Grace Hopper", "g@example.com"]))
    assert call_api("POST", imports_path(owner, f"/{created['job']['id']}/start"), sub=owner.sub).status == 202
    assert run_queued_imports(ingestion_queue) == {"batchItemFailures": []}
    leads = lead_rows(owner.org_id)
    assert len(leads) == 2
    for lead in leads:
        (first,) = touches_of(lead["id"])
        assert (first["kind"], first["channel"], first["is_first"]) == ("import", "direct_unknown", True)
        assert first["occurred_at"] == lead["created_at"]
        assert first["detail"]["receiptId"]
