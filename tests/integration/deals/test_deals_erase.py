"""Erasing a lead keeps its deals as non-identifiable transactional history (spec section 8): the figures
stay, the person and the free text that may name them go, sealed deals included."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.deals_helpers import (
    deal_row,
    deals_path,
    history_of,
    move,
    ok,
    open_deal,
    walk_to,
)
from tests.support.erase_helpers import tables_containing
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes and the erase publish their events after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_an_erased_leads_deals_keep_their_figures_and_lose_every_trace_of_the_person(owner):
    tag = uuid.uuid4().hex[:10]
    name, email = f"Ottoline Brackenbury{tag}", f"ob.{tag}@example.com"
    lead_id = ok(call_api("POST", leads_path(owner.org_id), sub=owner.sub, body={"name": name, "email": email}), 201)[
        "id"
    ]
    won = open_deal(owner, leadId=lead_id, title=f"Annual plan for {name}", offerRef=f"quote for {email}")
    won = walk_to(owner, won, "proposal")
    won = ok(move(owner, won, "negotiation", activityNote=f"Called {name}"))
    won = ok(move(owner, won, "won", closeReason=f"{name} signed"))
    ok(
        call_api(
            "POST",
            f"{deals_path(owner.org_id, won['id'])}/compensations",
            sub=owner.sub,
            body={"amountMinor": -1_000, "reason": f"refund to {email}", "documentRef": f"CN for {name}"},
        ),
        201,
    )
    lost = walk_to(owner, open_deal(owner, leadId=lead_id), "negotiation")
    ok(move(owner, lost, "lost", lossReason="price", lossNote=f"{name} found it too dear"))
    assert tables_containing(name, email)  # the fixture does plant the person in deals

    erased = call_api("DELETE", leads_path(owner.org_id, lead_id), sub=owner.sub)
    assert erased.status in (200, 204), erased.body

    assert tables_containing(name, email) == {}
    row = deal_row(won["id"])
    assert (row["lead_id"], row["status"], row["value_minor"], row["currency"], row["title"]) == (
        None,
        "won",
        120_000,
        "EUR",
        "erased",
    )
    assert row["closed_at"] is not None
    assert deal_row(lost["id"])["loss_reason"] == "price"  # the code is not the person
    assert [h["type"] for h in history_of(won["id"])][-1] == "compensation_recorded"
