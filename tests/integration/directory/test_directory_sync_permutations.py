"""Any order of one set of platform directory events, with replays, ends in the same directory.

The set: an organization created and updated twice (one update late), three users (two of whom swap emails),
and memberships created, demoted, deleted, and a person's new membership after their old one's deletion.
Each example delivers a permutation of it (plus some events again) to fresh ids, through the wiring as
task_lifecycle does, and compares the rows with its ids read back as names.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leadcrm.platform.ids import uuid7
from tests.support.directory_sync_helpers import (
    access,
    deliver,
    directory_of,
    membership_deletion,
    membership_detail,
    organization_detail,
    user_detail,
)

EXAMPLES = int(os.environ.get("DIRECTORY_PERMUTATIONS", "8"))

ORGANIZATIONS = ("O",)
USERS = ("U1", "U2", "U3")
MEMBERSHIPS = ("M1", "M2", "M3", "M4")

# (detail type, builder of its detail from the example's ids and emails)
EVENTS: list[tuple[str, Any]] = [
    ("organization.created", lambda x: organization_detail(x["O"], 0, name="Aviv")),
    ("organization.updated", lambda x: organization_detail(x["O"], 10, name="Yam", country="GB", locale="en-GB")),
    ("organization.updated", lambda x: organization_detail(x["O"], 5, name="Late", features=[])),
    ("user.created", lambda x: user_detail(x["U1"], 0, subject=x["s1"], email=x["e1"])),
    ("user.updated", lambda x: user_detail(x["U1"], 8, subject=x["s1"], email=x["e2"], first_name="Dina")),
    ("user.created", lambda x: user_detail(x["U2"], 0, subject=x["s2"], email=x["e2"])),
    ("user.updated", lambda x: user_detail(x["U2"], 9, subject=x["s2"], email=x["e1"])),
    ("user.created", lambda x: user_detail(x["U3"], 0, subject=x["s3"], email=x["e3"])),
    ("membership.created", lambda x: membership_detail(x["M1"], x["O"], x["U1"], 0, role="owner")),
    ("membership.created", lambda x: membership_detail(x["M2"], x["O"], x["U2"], 0, role="coach")),
    ("membership.updated", lambda x: membership_detail(x["M2"], x["O"], x["U2"], 6, role="member")),
    ("membership.created", lambda x: membership_detail(x["M3"], x["O"], x["U3"], 0, role="coach")),
    ("membership.deleted", lambda x: membership_deletion(x["M3"], x["O"], 7)),
    ("membership.created", lambda x: membership_detail(x["M4"], x["O"], x["U3"], 8, role="admin")),
]


def _names() -> dict[str, Any]:
    """Fresh ids, subjects and emails for one example (rows of earlier examples stay in the database)."""
    tag = uuid.uuid4().hex[:10]
    names: dict[str, Any] = {name: uuid7() for name in (*ORGANIZATIONS, *USERS, *MEMBERSHIPS)}
    names.update({f"s{i}": f"user_{i}_{tag}" for i in (1, 2, 3)})
    names.update({f"e{i}": f"person{i}.{tag}@example.test" for i in (1, 2, 3)})
    return names


def _symbolic(value: Any, back: dict[Any, str]) -> Any:
    """The value with this example's ids, subjects and emails replaced by their names."""
    if isinstance(value, dict):
        return {k: _symbolic(v, back) for k, v in value.items()}
    if isinstance(value, list):
        return [_symbolic(v, back) for v in value]
    if isinstance(value, uuid.UUID | str) and str(value) in back:
        return back[str(value)]
    return value


def _run(order: list[int], replays: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    names = _names()
    for index in [*order, *replays]:
        detail_type, build = EVENTS[index]
        deliver(detail_type, build(names))
    snapshot = directory_of(
        [names[n] for n in ORGANIZATIONS], [names[n] for n in USERS], [names[n] for n in MEMBERSHIPS]
    )
    back = {str(value): name for name, value in names.items()}
    return _symbolic(snapshot, back), names


def test_in_their_own_order_the_events_make_the_directory_they_describe():
    directory, names = _run(list(range(len(EVENTS))), [])
    [org] = directory["organizations"]
    assert (org["name"], org["country_code"], org["locale"], org["features"]) == (
        "Yam",
        "GB",
        "en-GB",
        {"lead_management": True},
    )
    assert {u["id"]: (u["email"], u["auth_subject"]) for u in directory["users"]} == {
        "U1": ("e2", "s1"),
        "U2": ("e1", "s2"),
        "U3": ("e3", "s3"),
    }
    memberships = {m["id"]: (m["role"], m["deleted_at"] is None) for m in directory["memberships"]}
    assert memberships == {"M1": ("owner", True), "M2": ("member", True), "M3": ("coach", False), "M4": ("admin", True)}
    assert directory["held"] == []
    assert access(names["s3"], names["O"]).role == "admin"
    assert access(names["s2"], names["O"]).is_staff is False


REFERENCE: dict[str, Any] = {}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.permutations(range(len(EVENTS))),
    st.lists(st.integers(0, len(EVENTS) - 1), max_size=4),
)
def test_any_order_with_replays_converges_to_the_same_directory(order: list[int], replays: list[int]):
    if not REFERENCE:
        REFERENCE.update(_run(list(range(len(EVENTS))), [])[0])
    assert _run(list(order), replays)[0] == REFERENCE
