"""The graph_fetch stage (outside the VPC): a leadgen webhook from the graph-fetch queue becomes a fetched
lead on the ingestion queue. The page's token comes from Secrets Manager by the page id alone (no
database); Graph is a real HTTP stand-in. A page without a token and a lead Graph no longer has are dropped
and counted; Graph trouble fails the record alone, so it is retried and ends in the DLQ."""

from __future__ import annotations

import json

import pytest

from tests.support.aws import aws_client
from tests.support.events import lambda_context, sqs_event, sqs_record
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_page,
    emitted_metrics,
    fetch,
    fresh_id,
    graph_lead,
    graph_stand_in,
    leadgen_message,
    leadgen_payload,
    queued_for_ingestion,
    webhook_message,
)


@pytest.fixture(autouse=True)
def _queues(event_bus, ingestion_queue):
    """The ingestion queue graph_fetch sends to (the bus: connecting a page publishes nothing, but the API
    unit of work may)."""


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


def _invoke(*records: dict) -> dict:
    from graph_fetch.handler import lambda_handler

    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-graph-fetch"))


def test_the_lead_is_read_with_the_pages_token_found_by_the_page_id(graph, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    assert fetch(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}

    assert graph.requests == [(leadgen_id, "page-token-of-the-studio")]


def test_the_fetched_lead_is_queued_for_ingestion_as_a_meta_lead_with_what_graph_gave(graph, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, platform="ig", form_id="555000111"))

    fetch(leadgen_message(page, leadgen_id, form_id="555000111", ad_id="777"))

    (message,) = queued_for_ingestion()
    assert message["kind"] == "meta.lead"
    payload = message["payload"]
    assert (payload["pageId"], payload["leadgenId"], payload["formId"], payload["adId"]) == (
        page,
        leadgen_id,
        "555000111",
        "777",
    )
    lead = payload["lead"]
    assert lead["field_data"][0] == {"name": "full_name", "values": ["Ada Lovelace"]}
    assert (lead["platform"], lead["created_time"]) == ("ig", "2026-01-01T10:00:00+0000")
    assert (lead["ad_id"], lead["ad_name"], lead["form_id"]) == (
        "120200000000000001",
        "Spring offer video",
        "555000111",
    )
    assert (lead["campaign_id"], lead["campaign_name"]) == ("120200000000000003", "Spring 2026")


def test_every_leadgen_change_of_one_delivery_is_fetched_and_queued(graph, page):
    first, second = fresh_id(), fresh_id()
    graph.register(graph_lead(first))
    graph.register(graph_lead(second))
    payload = leadgen_payload(page, first)
    payload["entry"].append(leadgen_payload(page, second)["entry"][0])

    fetch(webhook_message("meta.leadgen", payload))

    assert sorted(m["payload"]["leadgenId"] for m in queued_for_ingestion()) == sorted([first, second])


def test_the_pages_token_is_cached_between_deliveries(graph, page):
    first, second = fresh_id(), fresh_id()
    graph.register(graph_lead(first))
    graph.register(graph_lead(second))
    fetch(leadgen_message(page, first))
    aws_client("secretsmanager").put_secret_value(
        SecretId=f"leadcrm/integrations/meta_lead_ads/{page}", SecretString=json.dumps({"accessToken": "rotated"})
    )

    fetch(leadgen_message(page, second))

    assert graph.requests[-1] == (second, "page-token-of-the-studio")


def test_a_reconnect_in_this_process_is_read_at_once(graph, owner, page):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))
    fetch(leadgen_message(page, fresh_id()))  # caches the first token (the lead is unknown: dropped)

    connect_page(owner, page, token="a-fresh-page-token")
    fetch(leadgen_message(page, leadgen_id))

    assert graph.requests[-1] == (leadgen_id, "a-fresh-page-token")


def test_a_page_without_a_token_is_dropped_and_counted_without_asking_graph(graph, capsys, caplog):
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    assert fetch(leadgen_message(fresh_id(), leadgen_id)) == {"batchItemFailures": []}

    assert graph.requests == []
    assert queued_for_ingestion() == []
    assert "Ingestion.meta_lead_ads.no_secret" in emitted_metrics(capsys.readouterr().out)
    (dropped,) = [r for r in caplog.records if r.getMessage() == "leadgen dropped"]
    assert (dropped.outcome, dropped.leadgenId) == ("no_secret", leadgen_id)  # logged with ids only


def test_a_disconnected_pages_leadgen_is_dropped_as_it_has_no_token_any_more(graph, owner, page, capsys):
    from tests.support.api import call_api

    (connection,) = call_api("GET", f"/organizations/{owner.org_id}/integrations/meta", sub=owner.sub).data
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/meta/{connection['id']}", sub=owner.sub)
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id))

    assert fetch(leadgen_message(page, leadgen_id)) == {"batchItemFailures": []}

    assert queued_for_ingestion() == []
    assert "Ingestion.meta_lead_ads.no_secret" in emitted_metrics(capsys.readouterr().out)


def test_a_lead_graph_no_longer_has_is_dropped_and_counted(graph, page, capsys):
    deleted = fresh_id()  # Graph answers 400, code 100: "Object does not exist"

    assert fetch(leadgen_message(page, deleted)) == {"batchItemFailures": []}

    assert queued_for_ingestion() == []
    assert "Ingestion.meta_lead_ads.lead_gone" in emitted_metrics(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("status", "code"), [(500, 2), (503, 1), (429, 4), (400, 190)], ids=["5xx", "unavailable", "throttled", "token"]
)
def test_graph_trouble_fails_the_record_alone_and_the_rest_of_the_batch_is_queued(graph, page, status, code):
    good, failing = fresh_id(), fresh_id()
    graph.register(graph_lead(good))
    graph.fail(failing, status, code)
    good_record, failing_record = sqs_record(leadgen_message(page, good)), sqs_record(leadgen_message(page, failing))

    result = _invoke(good_record, failing_record)

    assert result == {"batchItemFailures": [{"itemIdentifier": failing_record["messageId"]}]}
    assert [m["payload"]["leadgenId"] for m in queued_for_ingestion()] == [good]


def test_no_answer_from_graph_fails_the_record(page, monkeypatch):
    from infra.local.postgres import free_port

    monkeypatch.setenv("META_GRAPH_BASE_URL", f"http://127.0.0.1:{free_port()}/v21.0")  # nothing listens
    unconnected = sqs_record(leadgen_message(fresh_id(), fresh_id()))
    unanswered = sqs_record(leadgen_message(page, fresh_id()))

    result = _invoke(unconnected, unanswered)

    assert result == {"batchItemFailures": [{"itemIdentifier": unanswered["messageId"]}]}
    assert queued_for_ingestion() == []
