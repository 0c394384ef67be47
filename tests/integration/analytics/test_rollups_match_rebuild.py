"""The analytics rollups equal a rebuild from the source rows after any history of writes (creates, status
moves, touches, deals closed won, merges, undone merges, erasures) once the leads the writers queued are
folded (migration 0032, analytics.rollup_queue), whenever folds of any size ran in between.
ROLLUP_PROPERTY_EXAMPLES sets how many random histories run (default: a few seconds' worth)."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leadcrm.analytics.jobs import rebuild_rollups, rollup_snapshot
from leadcrm.analytics.rollup_queue import fold_pending
from leadcrm.platform.db.engine import get_engine
from tests.support.analytics_helpers import add_touch
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import make_campaign
from tests.support.deals_helpers import insert_deal
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import make_board
from tests.support.lead_moves_helpers import create_lead, patch_lead
from tests.support.qualification_helpers import merge, undo

EXAMPLES = int(os.environ.get("ROLLUP_PROPERTY_EXAMPLES", "6"))
STATUSES = ("contacted", "callback", "trial_booked", "no_show", "converted", "customer", "lost", "frozen")

index = st.integers(min_value=0, max_value=50)
operation = st.one_of(
    st.tuples(st.just("create"), st.booleans()),
    st.tuples(st.just("status"), index, st.sampled_from(STATUSES)),
    st.tuples(st.just("touch"), index, st.booleans(), st.integers(min_value=-30, max_value=30)),
    st.tuples(st.just("stage"), index, st.sampled_from(STATUSES)),
    st.tuples(st.just("bulk_move"), st.lists(index, min_size=1, max_size=6), st.sampled_from(STATUSES)),
    st.tuples(st.just("deal_won"), index),
    st.tuples(st.just("merge"), index, index),
    st.tuples(
        st.just("undo"),
    ),
    st.tuples(st.just("erase"), index),
    st.tuples(st.just("fold"), st.integers(min_value=1, max_value=4)),
)


class History:
    def __init__(self) -> None:
        self.owner = make_caller(role="owner")
        self.board = make_board(self.owner.org_id, default=True)
        self.campaign = make_campaign(self.owner.org_id, name="Spring ad")
        self.alive: list[Any] = []
        self.merges: list[tuple[str, Any]] = []
        self.done: list[str] = []  # what the API answered, for a failing example's report

    def pick(self, i: int) -> Any | None:
        return self.alive[i % len(self.alive)] if self.alive else None

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "create":
            body = {"campaignId": str(self.campaign)} if op[1] else {}
            self.alive.append(create_lead(self.owner, "Rollup lead", **body)["id"])
            return
        if kind == "fold":  # the consumer, part way through the queue, between two writes
            with get_engine().begin() as conn:
                self.done.append(f"fold:{fold_pending(conn, self.owner.org_id, limit=op[1])}")
            return
        if kind == "bulk_move":
            chosen = list(dict.fromkeys(lead for lead in map(self.pick, op[1]) if lead))
            body = {"stageId": str(self.board.stages[op[2]]), "leadIds": chosen}
            if op[2] == "lost":
                body["lostReason"] = "price"
            response = call_api(
                "POST", f"{leads_path(self.owner.org_id)}/bulk-move-stage", sub=self.owner.sub, body=body
            )
            self.done.append(f"bulk_move:{response.status}")
            return
        lead = self.pick(op[1]) if len(op) > 1 else None
        if kind == "status" and lead:
            patch_lead(self.owner, lead, {"status": op[2]})
        elif kind == "stage" and lead:
            body = {"stageId": str(self.board.stages[op[2]])}
            if op[2] == "lost":
                body["lostReason"] = "price"
            self.done.append(f"stage:{patch_lead(self.owner, lead, body).status}")
        elif kind == "touch" and lead:
            at = datetime.now(UTC) + timedelta(days=op[3])
            add_touch(self.board, lead, at, self.campaign if op[2] else None)
        elif kind == "deal_won" and lead:
            insert_deal(
                self.owner.org_id,
                kind="won",
                value_minor=1_000,
                expected_close_date=date.today(),
                closed_at=datetime.now(UTC),
                lead_id=lead,
            )
        elif kind == "merge" and lead:
            other = self.pick(op[2])
            if other and other != lead:
                response = merge(self.owner, lead, other)
                self.done.append(f"merge:{response.status}")
                if response.status == 200:
                    self.merges.append((response.data["mergeId"], other))
                    self.alive.remove(other)
        elif kind == "undo" and self.merges:
            merge_id, merged = self.merges.pop()
            status = undo(self.owner, merge_id).status
            self.done.append(f"undo:{status}")
            if status == 200:
                self.alive.append(merged)
        elif kind == "erase" and lead:
            status = call_api("DELETE", leads_path(self.owner.org_id, lead), sub=self.owner.sub).status
            self.done.append(f"erase:{status}")
            if status in (200, 204):
                self.alive.remove(lead)
                self.merges = [(m, merged) for m, merged in self.merges if merged != lead]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operation, min_size=3, max_size=14))
def test_the_rollups_equal_a_rebuild_after_any_history_of_writes(operations):
    history = History()
    for op in [("create", True), ("create", False), *operations]:
        history.apply(op)
    with get_engine().begin() as conn:
        fold_pending(conn, history.owner.org_id)  # the consumer, as a report or the job runs it
        kept = rollup_snapshot(conn, history.owner.org_id)
        rebuild_rollups(conn, history.owner.org_id)
        assert rollup_snapshot(conn, history.owner.org_id) == kept


def test_a_rebuild_of_an_organization_without_leads_leaves_nothing():
    owner = make_caller(role="owner")
    with get_engine().begin() as conn:
        assert rebuild_rollups(conn, owner.org_id) == 0
        assert rollup_snapshot(conn, owner.org_id) == {
            "funnel": [],
            "stages": [],
            "acquired": [],
            "facts": [],
            "leadStages": [],
        }
