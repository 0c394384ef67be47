"""G6: a lead arrives through Meta Lead Ads. The graph_fetch function (outside the VPC) reads the lead from
Graph with the page's token and queues it; the ingestion function routes it by page to the active
connection and takes it in through the create every entry point shares, with its campaign hook and its
attribution — once per leadgen id. Deliveries here go through both stages (`deliver_leadgen`)."""

from __future__ import annotations

import json

import pytest

from leadcrm.ingestion.rules.meta import FetchedMetaLead, LeadgenChange
from leadcrm.ingestion.webhook_leads import Outcome, ingest_meta_lead
from tests.support.capture_helpers import activities_of, campaigns_of, lead_rows, receipts_of, tasks_of
from tests.support.concurrency import run_together
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    attributions_of,
    connect_page,
    counts,
    deliver,
    deliver_leadgen,
    emitted_metrics,
    fetch,
    fresh_id,
    graph_lead,
    graph_stand_in,
    ingested,
    leadgen_message,
    queued_for_ingestion,
    wide_pool,
)
from tests.support.lead_moves_helpers import default_pipeline
from tests.support.returning_helpers import insert_lead


@pytest.fixture(autouse=True)
def _bus(event_bus, ingestion_queue):
    """Units of work publish after commit; the bus exists. graph_fetch queues fetched leads for ingestion."""


@pytest.fixture
def graph(monkeypatch):
    with graph_stand_in(monkeypatch) as stand_in:
        yield stand_in


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def page(owner):
    page_id = fresh_id()
    connect_page(owner, page_id, token="page-token-of-the-studio")
    return page_id


def test_a_leadgen_for_a_connected_page_creates_the_lead_from_the_answers_graph_gives(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, extra={"what_is_your_goal?": "Run a 10k"}))

    assert deliver_leadgen(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}

    (lead,) = lead_rows(owner.org_id)
    assert (lead["name"], lead["email"], lead["phone"]) == ("Ada Lovelace", "ada@example.com", "+447700900123")
    assert lead["source"] == "facebook"
    assert lead["status"] == "new"
    assert lead["note"] == "what is your goal?: Run a 10k"


def test_the_lead_is_read_from_graph_with_the_connections_token_from_secrets_manager(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))
    deliver_leadgen(leadgen_message(page, leadgen_id))
    assert graph.requests == [(leadgen_id, "page-token-of-the-studio")]


def test_a_lead_from_instagram_has_source_instagram(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, platform="ig"))
    deliver_leadgen(leadgen_message(page, leadgen_id))
    assert lead_rows(owner.org_id)[0]["source"] == "instagram"


def test_the_lead_is_attached_to_a_campaign_hook_of_its_form_named_after_the_meta_campaign(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, form_id="555000111"))
    deliver_leadgen(leadgen_message(page, leadgen_id, form_id="555000111"))

    (campaign,) = campaigns_of(owner.org_id)
    assert (campaign["channel"], campaign["external_ref"], campaign["name"]) == (
        "meta_lead_ads",
        "form:555000111",
        "Spring 2026",
    )
    assert lead_rows(owner.org_id)[0]["campaign_id"] == campaign["id"]


def test_two_leads_of_the_same_form_share_one_campaign_hook(graph, owner, page):
    first, second = fresh_id(), fresh_id()
    graph.register(graph_lead(first, email="a@example.com", phone=None))
    graph.register(graph_lead(second, email="b@example.com", phone=None))
    deliver_leadgen(leadgen_message(page, first), leadgen_message(page, second))
    assert len(campaigns_of(owner.org_id)) == 1
    assert len({lead["campaign_id"] for lead in lead_rows(owner.org_id)}) == 1


def test_an_attribution_row_records_the_ad_adset_form_campaign_platform_and_leadgen_id(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, platform="ig"))
    deliver_leadgen(leadgen_message(page, leadgen_id))

    (attribution,) = attributions_of(owner.org_id)
    (lead,) = lead_rows(owner.org_id)
    assert attribution["lead_id"] == lead["id"]
    assert attribution["campaign_id"] == lead["campaign_id"]
    assert {k: attribution[k] for k in ("channel", "platform", "ad_id", "adset_id", "form_id", "external_ref")} == {
        "channel": "meta_lead_ads",
        "platform": "instagram",
        "ad_id": "120200000000000001",
        "adset_id": "120200000000000002",
        "form_id": "870000000000001",
        "external_ref": leadgen_id,
    }
    assert (attribution["external_campaign_id"], attribution["external_campaign_name"]) == (
        "120200000000000003",
        "Spring 2026",
    )


def test_the_new_lead_gets_the_auto_task_and_a_receipt_of_what_graph_answered(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))
    deliver_leadgen(leadgen_message(page, leadgen_id))

    (task,) = tasks_of(owner.org_id)
    assert (task["type"], task["assignee_user_id"]) == ("contact_lead", owner.user.id)
    (receipt,) = receipts_of(owner.org_id)
    assert (receipt["channel"], receipt["duplicate"]) == ("meta_lead_ads", False)
    assert receipt["payload"]["leadgenId"] == leadgen_id


def test_the_same_delivery_replayed_three_times_yields_one_lead_one_attribution_one_task(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))
    for _ in range(3):
        assert deliver_leadgen(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}
    assert counts(owner.org_id) == {"leads": 1, "attributions": 1, "tasks": 1, "receipts": 1}
    assert ingested("meta_lead_ads", leadgen_id)["outcome"] == "created"


def test_a_fetched_lead_replayed_three_times_on_the_ingestion_queue_yields_one_lead(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))
    assert fetch(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}
    (fetched,) = queued_for_ingestion()

    for _ in range(3):
        assert deliver(fetched) == {"batchItemFailures": []}

    assert counts(owner.org_id) == {"leads": 1, "attributions": 1, "tasks": 1, "receipts": 1}
    assert len(graph.requests) == 1  # ingestion never asks Graph


def test_ten_concurrent_deliveries_of_one_leadgen_yield_one_lead_one_attribution_one_task(
    graph, owner, page, monkeypatch
):
    leadgen_id = fresh_id()
    change = LeadgenChange(page_id=page, leadgen_id=leadgen_id, form_id="870000000000001")
    fetched = FetchedMetaLead(change=change, graph_lead=graph_lead(leadgen_id))

    with wide_pool(monkeypatch):
        results, errors = run_together([lambda: ingest_meta_lead(fetched) for _ in range(10)])

    assert errors == [None] * 10
    assert sorted(r.outcome for r in results) == [Outcome.CREATED] + [Outcome.REPLAYED] * 9
    assert counts(owner.org_id) == {"leads": 1, "attributions": 1, "tasks": 1, "receipts": 1}


def test_a_leadgen_for_a_page_without_a_stored_token_is_dropped_by_the_fetcher_and_counted(graph, owner, capsys):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    assert fetch(leadgen_message(fresh_id(), leadgen_id)) == {"batchItemFailures": []}

    assert queued_for_ingestion() == []
    assert graph.requests == []
    assert "Ingestion.meta_lead_ads.no_secret" in emitted_metrics(capsys.readouterr().out)


def test_a_fetched_lead_whose_page_was_disconnected_meanwhile_is_dropped_and_counted(graph, owner, page, capsys):
    from tests.support.api import call_api

    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))
    fetch(leadgen_message(page, leadgen_id))
    (connection,) = call_api("GET", f"/organizations/{owner.org_id}/integrations/meta", sub=owner.sub).data
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/meta/{connection['id']}", sub=owner.sub)

    assert deliver(*queued_for_ingestion()) == {"batchItemFailures": []}

    assert counts(owner.org_id)["leads"] == 0
    assert ingested("meta_lead_ads", leadgen_id) is None
    assert "Ingestion.meta_lead_ads.no_connection" in emitted_metrics(capsys.readouterr().out)


def test_after_a_disconnect_the_pages_leads_are_dropped(graph, owner, page):
    from tests.support.api import call_api

    (connection,) = call_api("GET", f"/organizations/{owner.org_id}/integrations/meta", sub=owner.sub).data
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/meta/{connection['id']}", sub=owner.sub)
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    deliver_leadgen(leadgen_message(page, leadgen_id))

    assert counts(owner.org_id)["leads"] == 0
    assert ingested("meta_lead_ads", leadgen_id) is None


def test_a_lead_of_a_person_with_an_open_lead_creates_nothing_new_but_is_attributed_and_on_the_timeline(
    graph, owner, page
):
    existing = insert_lead(owner.org_id, default_pipeline(owner.org_id), "contacted", email="ada@example.com")
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    deliver_leadgen(leadgen_message(page, leadgen_id))

    (lead,) = lead_rows(owner.org_id)
    assert lead["id"] == existing
    assert attributions_of(owner.org_id)[0]["lead_id"] == existing
    assert activities_of(existing, "resubmitted")[0]["payload"]["channel"] == "meta_lead_ads"
    assert ingested("meta_lead_ads", leadgen_id)["outcome"] == "duplicate"


def test_a_lead_of_a_person_whose_lead_was_lost_reopens_it(graph, owner, page):
    existing = insert_lead(owner.org_id, default_pipeline(owner.org_id), "lost", email="ada@example.com")
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    deliver_leadgen(leadgen_message(page, leadgen_id))

    (lead,) = lead_rows(owner.org_id)
    assert (lead["id"], lead["status"], lead["returned_via"]) == (existing, "new", "meta")
    assert ingested("meta_lead_ads", leadgen_id)["outcome"] == "reopened"


def test_a_raw_leadgen_reaching_the_ingestion_queue_is_handed_on_to_graph_fetch(graph, owner, page, graph_fetch_queue):
    """A webhook queued before graph_fetch existed (or redriven from the ingestion DLQ) is not lost."""
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    assert deliver(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}

    assert graph.requests == []
    (forwarded,) = graph_fetch_queue.receive_all()
    assert deliver_leadgen(json.loads(forwarded["Body"])) == {"batchItemFailures": []}
    assert counts(owner.org_id)["leads"] == 1
