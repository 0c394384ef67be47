"""A helpdesk ticket played forward through the local stack's clock (`/_local/clock`): its first-response
target missed and recorded by the sweep, then resolved and auto-closed when the customer stays silent for the
organization's auto-close window (spec §6: "Resolved — No customer response within auto-close window →
Closed — Auto-close policy applied").

The organization is open around the clock, so a business minute is a minute and the targets read plainly."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

ALWAYS_OPEN = {day: [["00:00", "24:00"]] for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")}
FIRST_RESPONSE_MINUTES = 60
AUTO_CLOSE_HOURS = 24


def _ok(reply: Any, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.json()["data"]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _helpdesk(stack: LocalStackClient) -> tuple[str, str, str, str]:
    demo = stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    coach, coach_id = demo["users"]["coach"]["token"], demo["users"]["coach"]["userId"]
    settings = {
        "businessHours": ALWAYS_OPEN,
        "autoCloseHours": AUTO_CLOSE_HOURS,
        "slaPolicies": [
            {"priority": "normal", "firstResponseMinutes": FIRST_RESPONSE_MINUTES, "resolutionMinutes": 8 * 60}
        ],
    }
    _ok(stack.request("PATCH", f"/organizations/{org}/ticket-settings", token=owner, json_body=settings))
    return org, coach, coach_id, owner


def _open_ticket(stack: LocalStackClient, org: str, coach: str, coach_id: str) -> dict[str, Any]:
    lead = _ok(
        stack.request(
            "POST", f"/organizations/{org}/leads", token=coach, json_body={"name": "Yael", "email": "yael@example.com"}
        ),
        201,
    )
    ticket = _ok(
        stack.request(
            "POST",
            f"/organizations/{org}/tickets",
            token=coach,
            json_body={"subject": "Cannot book a class", "leadId": lead["id"], "channel": "phone"},
        ),
        201,
    )
    base = f"/organizations/{org}/tickets/{ticket['id']}"
    return _ok(stack.request("POST", f"{base}/assign", token=coach, json_body={"assigneeUserId": coach_id}))


def _sweep(stack: LocalStackClient) -> None:
    assert stack.request("POST", "/_local/tick", json_body={"job": "ticket_sweep"}).status == 200


def test_a_first_response_target_missed_while_the_clock_runs_on_is_recorded_at_its_due_instant(
    local_clock: LocalStackClient,
) -> None:
    org, coach, coach_id, _ = _helpdesk(local_clock)
    ticket = _open_ticket(local_clock, org, coach, coach_id)
    path = f"/organizations/{org}/tickets/{ticket['id']}"
    due = _at(ticket["sla"]["firstResponseDueAt"])
    assert due - _at(ticket["createdAt"]) == timedelta(minutes=FIRST_RESPONSE_MINUTES)

    local_clock.advance_clock("PT30M")
    _sweep(local_clock)
    halfway = _ok(local_clock.request("GET", path, token=coach))
    assert (halfway["sla"]["firstResponseBreachedAt"], halfway["sla"]["breachCount"]) == (None, 0)

    local_clock.advance_clock("PT31M")
    _sweep(local_clock)
    missed = _ok(local_clock.request("GET", path, token=coach))

    assert _at(missed["sla"]["firstResponseBreachedAt"]) == due
    assert missed["sla"]["breachCount"] == 1
    # Escalated on the way (Assigned → Escalated once the escalation share of the target was used up).
    assert missed["status"] == "escalated" and missed["escalatedAt"] is not None


def test_a_resolved_ticket_closes_itself_when_the_customer_stays_silent_for_the_auto_close_window(
    local_clock: LocalStackClient,
) -> None:
    org, coach, coach_id, _ = _helpdesk(local_clock)
    ticket = _open_ticket(local_clock, org, coach, coach_id)
    path = f"/organizations/{org}/tickets/{ticket['id']}"
    _ok(local_clock.request("POST", f"{path}/respond", token=coach, json_body={}))
    resolved = _ok(local_clock.request("POST", f"{path}/resolve", token=coach, json_body={"resolution": "Rebooked."}))
    assert resolved["status"] == "resolved"

    local_clock.advance_clock(f"PT{AUTO_CLOSE_HOURS - 1}H")
    _sweep(local_clock)
    assert _ok(local_clock.request("GET", path, token=coach))["status"] == "resolved"

    moved = local_clock.advance_clock("PT61M")
    _sweep(local_clock)
    closed = _ok(local_clock.request("GET", path, token=coach))

    assert (closed["status"], closed["closeReason"]) == ("closed", "auto_closed")
    # Stamped with the clock's time, not the database's: a day after the resolution, up to the clock's now.
    closed_at = _at(closed["closedAt"])
    assert _at(resolved["resolvedAt"]) + timedelta(hours=AUTO_CLOSE_HOURS) <= closed_at
    assert closed_at <= _at(local_clock.request("GET", "/_local/clock").json()["data"]["now"])
    assert closed_at >= _at(moved["now"]) - timedelta(minutes=1)
    assert closed["sla"]["timer"] == "stopped"
