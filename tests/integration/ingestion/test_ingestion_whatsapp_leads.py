"""G7: a lead arrives through a click-to-WhatsApp ad. Only a message with a referral makes a lead (organic
messages are dropped and counted); the hook is the ad (referral.source_id) named after its headline; the
phone is wa_id, the name the profile name, the source whatsapp; once per ctwa_clid, else per message id."""

from __future__ import annotations

import pytest

from leadcrm.ingestion.rules.meta import whatsapp_messages
from leadcrm.ingestion.webhook_leads import Outcome, ingest_whatsapp_message
from tests.support.capture_helpers import campaigns_of, lead_rows, tasks_of
from tests.support.concurrency import run_together
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    attributions_of,
    connect_number,
    counts,
    ctwa_referral,
    deliver,
    emitted_metrics,
    fresh_id,
    ingested,
    webhook_message,
    whatsapp_payload,
    wide_pool,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Units of work publish after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def number(owner):
    phone_number_id = fresh_id()
    connect_number(owner, phone_number_id)
    return phone_number_id


def _message(number: str, **kwargs) -> dict:
    return webhook_message("whatsapp", whatsapp_payload(number, **kwargs))


def test_a_message_from_a_click_to_whatsapp_ad_creates_the_lead_with_wa_id_and_profile_name(owner, number):
    referral = ctwa_referral(ctwa_clid=fresh_id())
    assert deliver(_message(number, wamid=f"wamid.{fresh_id()}", referral=referral)) == {"batchItemFailures": []}

    (lead,) = lead_rows(owner.org_id)
    assert (lead["name"], lead["phone"], lead["source"]) == ("Grace Hopper", "+447700900456", "whatsapp")
    assert lead["note"] == "Hi, I saw your ad"
    assert len(tasks_of(owner.org_id)) == 1


def test_the_hook_is_the_ad_of_the_referral_named_after_its_headline(owner, number):
    referral = ctwa_referral("120200000000000077", ctwa_clid=fresh_id(), headline="Free trial week")
    deliver(_message(number, wamid=f"wamid.{fresh_id()}", referral=referral))

    (campaign,) = campaigns_of(owner.org_id)
    assert (campaign["channel"], campaign["external_ref"], campaign["name"]) == (
        "whatsapp",
        "120200000000000077",
        "Free trial week",
    )
    assert lead_rows(owner.org_id)[0]["campaign_id"] == campaign["id"]


def test_the_attribution_records_the_ad_and_the_click_id(owner, number):
    clid = fresh_id()
    deliver(_message(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral("120200000000000077", ctwa_clid=clid)))
    (attribution,) = attributions_of(owner.org_id)
    assert (attribution["channel"], attribution["ad_id"], attribution["external_ref"]) == (
        "whatsapp",
        "120200000000000077",
        clid,
    )


def test_an_organic_message_is_dropped_and_counted(owner, number, capsys):
    assert deliver(_message(number, wamid=f"wamid.{fresh_id()}")) == {"batchItemFailures": []}
    assert counts(owner.org_id)["leads"] == 0
    assert "Ingestion.whatsapp.organic" in emitted_metrics(capsys.readouterr().out)


def test_a_message_for_a_number_without_an_active_connection_is_dropped_and_counted(owner, capsys):
    deliver(_message(fresh_id(), wamid=f"wamid.{fresh_id()}", referral=ctwa_referral(ctwa_clid=fresh_id())))
    assert counts(owner.org_id)["leads"] == 0
    assert "Ingestion.whatsapp.no_connection" in emitted_metrics(capsys.readouterr().out)


def test_the_same_delivery_replayed_three_times_yields_one_lead_one_attribution_one_task(owner, number):
    message = _message(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral(ctwa_clid=fresh_id()))
    for _ in range(3):
        deliver(message)
    assert counts(owner.org_id) == {"leads": 1, "attributions": 1, "tasks": 1, "receipts": 1}


def test_two_messages_of_one_click_are_one_delivery_keyed_on_ctwa_clid(owner, number):
    clid = fresh_id()
    deliver(_message(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral(ctwa_clid=clid)))
    deliver(_message(number, wamid=f"wamid.{fresh_id()}", text="Hello?", referral=ctwa_referral(ctwa_clid=clid)))
    assert counts(owner.org_id)["attributions"] == 1
    assert ingested("whatsapp", clid)["outcome"] == "created"


def test_a_referral_without_ctwa_clid_is_keyed_on_the_message_id(owner, number):
    wamid = f"wamid.{fresh_id()}"
    message = _message(number, wamid=wamid, referral=ctwa_referral(ctwa_clid=None))
    deliver(message)
    deliver(message)
    assert counts(owner.org_id)["leads"] == 1
    assert ingested("whatsapp", wamid)["outcome"] == "created"


def test_ten_concurrent_deliveries_yield_one_lead_one_attribution_one_task(owner, number, monkeypatch):
    payload = whatsapp_payload(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral(ctwa_clid=fresh_id()))
    (message,) = whatsapp_messages(payload)

    with wide_pool(monkeypatch):
        results, errors = run_together([lambda: ingest_whatsapp_message(message) for _ in range(10)])

    assert errors == [None] * 10
    assert sorted(r.outcome for r in results) == [Outcome.CREATED] + [Outcome.REPLAYED] * 9
    assert counts(owner.org_id) == {"leads": 1, "attributions": 1, "tasks": 1, "receipts": 1}


def test_a_second_click_of_the_same_person_on_another_ad_keeps_one_lead_with_two_attributions(owner, number):
    deliver(_message(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral("111", ctwa_clid=fresh_id())))
    deliver(_message(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral("222", ctwa_clid=fresh_id())))
    assert counts(owner.org_id)["leads"] == 1
    assert sorted(a["ad_id"] for a in attributions_of(owner.org_id)) == ["111", "222"]
