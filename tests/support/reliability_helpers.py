"""What the reliability suite (tests/reliability) builds on: the app's route list, organizations with one
user per role, fresh entities made through the API itself, and a fingerprint of everything an organization
owns (to prove a request through another organization's path changed nothing of it).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text

from leadcrm.db.engine import get_engine
from tests.support.api import ApiResponse, call_api
from tests.support.factories import Organization, make_membership, make_organization, make_user

ROLES = ("owner", "admin", "coach", "member")


def app_routes() -> set[str]:
    """Every route the API function serves, as `METHOD /openapi/{path}` (the resolver's own list)."""
    from api.handler import app

    return {f"{route.method} {route.openapi_path}" for route in (*app._static_routes, *app._dynamic_routes)}


def openapi_routes() -> set[str]:
    from api.handler import openapi_schema

    return {f"{method.upper()} {path}" for path, ops in openapi_schema()["paths"].items() for method in ops}


@dataclass
class OrgWorld:
    """An organization with lead management, a user per role (subjects by role), and entity makers.

    Every maker creates a new entity through the API as the owner, so a cell that changes or deletes it
    never disturbs the next cell.
    """

    organization: Organization
    subjects: dict[str, str]
    membership_ids: dict[str, uuid.UUID]
    _default_pipeline: str | None = field(default=None, repr=False)

    @property
    def id(self) -> uuid.UUID:
        return self.organization.id

    @property
    def owner(self) -> str:
        return self.subjects["owner"]

    def api(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        """The owner calls `path` (relative to /organizations/{orgId}); anything but 2xx is a broken fixture."""
        response = call_api(method, f"/organizations/{self.id}{path}", sub=self.owner, **kwargs)
        assert 200 <= response.status < 300, f"{method} {path}: {response.status} {response.body}"
        return response

    # -- entity makers: each returns the new entity's id as a string ------------------------------------
    def lead(self, **body: Any) -> str:
        return self.api("POST", "/leads", body={"name": f"Lead {uuid.uuid4().hex[:8]}", **body}).data["id"]

    def lead_with_follow_up(self) -> str:
        lead_id = self.lead()
        self.api("PUT", f"/leads/{lead_id}/follow-up", body={"at": in_days(1), "type": "call"})
        return lead_id

    def pipeline(self) -> str:
        return self.api("POST", "/pipelines", body={"name": f"Pipeline {uuid.uuid4().hex[:8]}"}).data["id"]

    def stages(self, pipeline_id: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/pipelines/{pipeline_id}").data["stages"]

    def stage_of(self, pipeline_id: str, category: str) -> str:
        return next(s["id"] for s in self.stages(pipeline_id) if s["category"] == category)

    def extra_stage(self, pipeline_id: str) -> str:
        """A stage the pipeline can do without (archiving it keeps win coverage)."""
        body = {"name": f"Extra {uuid.uuid4().hex[:6]}", "category": "contacted"}
        return self.api("POST", f"/pipelines/{pipeline_id}/stages", body=body).data["id"]

    def default_pipeline(self) -> str:
        if self._default_pipeline is None:
            pipelines = self.api("GET", "/pipelines").data
            self._default_pipeline = next(p["id"] for p in pipelines if p["isDefault"])
        return self._default_pipeline

    def placement(self) -> tuple[str, str]:
        """A lead placed on a second pipeline: (leadId, that pipelineId)."""
        lead_id, pipeline_id = self.lead(), self.pipeline()
        self.api("POST", f"/leads/{lead_id}/pipelines", body={"pipelineId": pipeline_id})
        return lead_id, pipeline_id

    def tag(self) -> str:
        return self.api("POST", "/leads/tags", body={"name": f"Tag {uuid.uuid4().hex[:8]}"}).data["id"]

    def campaign(self) -> str:
        return self.api("POST", "/leads/campaigns", body={"name": f"Campaign {uuid.uuid4().hex[:8]}"}).data["id"]

    def task(self) -> str:
        return self.api("POST", "/tasks", body={"title": f"Task {uuid.uuid4().hex[:8]}"}).data["id"]

    def new_member_membership(self) -> str:
        """A membership of a fresh member of the organization (what link-member attaches a lead to)."""
        user = make_user()
        return str(make_membership(self.organization, user, role="member").id)


def make_world(name: str = "Reliability") -> OrgWorld:
    org = make_organization(name=f"{name} {uuid.uuid4().hex[:6]}")
    subjects: dict[str, str] = {}
    membership_ids: dict[str, uuid.UUID] = {}
    for role in ROLES:
        user = make_user()
        membership_ids[role] = make_membership(org, user, role=role).id
        assert user.auth_subject is not None
        subjects[role] = user.auth_subject
    return OrgWorld(organization=org, subjects=subjects, membership_ids=membership_ids)


def in_days(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat()


# What an organization owns, row by row, with the columns a change would touch. Another area's tables are
# added here as they come (their rows carry organization_id).
FINGERPRINT_QUERIES = (
    "SELECT id, status, stage_id, pipeline_id, archived_at, updated_at, name, email, phone, assigned_to_user_id,"
    " next_action_at FROM leads WHERE organization_id = :o ORDER BY id",
    "SELECT id, status, updated_at FROM tasks WHERE organization_id = :o ORDER BY id",
    "SELECT id, name, archived_at, updated_at FROM pipelines WHERE organization_id = :o ORDER BY id",
    "SELECT id, name, category, position, archived_at FROM pipeline_stages WHERE organization_id = :o ORDER BY id",
    "SELECT lead_id, pipeline_id, stage_id FROM lead_pipeline_placements WHERE organization_id = :o ORDER BY 1, 2",
    "SELECT id, name, updated_at FROM lead_tags WHERE organization_id = :o ORDER BY id",
    "SELECT lead_id, tag_id FROM lead_tag_assignments WHERE organization_id = :o ORDER BY 1, 2",
    "SELECT id, name, archived_at FROM lead_campaigns WHERE organization_id = :o ORDER BY id",
    "SELECT id, status, role, deleted_at FROM memberships WHERE organization_id = :o ORDER BY id",
)


def org_fingerprint(organization_id: uuid.UUID) -> str:
    digest = hashlib.sha256()
    with get_engine().connect() as conn:
        for query in FINGERPRINT_QUERIES:
            for row in conn.execute(text(query), {"o": organization_id}):
                digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()


def run_with_fingerprint(organization_id: uuid.UUID, call: Callable[[], ApiResponse]) -> tuple[ApiResponse, bool]:
    """(the response, whether the organization's rows are exactly as before the call)."""
    before = org_fingerprint(organization_id)
    response = call()
    return response, org_fingerprint(organization_id) == before


# -- many Lambda containers at once ---------------------------------------------------------------------


def in_containers(work: Callable[[], Any], count: int, *, timeout: float = 60) -> list[Any]:
    """Runs `work` in `count` forked processes released together, as `count` Lambda containers would run
    one delivery each: every process has its own database connection and its own copy of the handlers'
    module state (the HTTP resolver keeps the current event on the app, so threads cannot stand in for
    containers). Returns each process's result (it must pickle); an error in any of them fails here."""
    import multiprocessing
    import queue as queue_module

    context = multiprocessing.get_context("fork")
    start = context.Barrier(count)
    results = context.Queue()

    def container(slot: int) -> None:
        import leadcrm.db.engine as engine_module

        engine_module._engine = None  # never touch the parent's pooled connection: build one of our own
        try:
            start.wait(timeout)
            results.put((slot, True, work()))
        except BaseException as error:
            results.put((slot, False, repr(error)))

    processes = [context.Process(target=container, args=(slot,), daemon=True) for slot in range(count)]
    for process in processes:
        process.start()
    collected: dict[int, Any] = {}
    errors: list[str] = []
    try:
        for _ in range(count):
            slot, ok, value = results.get(timeout=timeout)
            if ok:
                collected[slot] = value
            else:
                errors.append(f"container {slot}: {value}")
    except queue_module.Empty:
        errors.append(f"only {len(collected) + len(errors)} of {count} containers answered within {timeout} s")
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
    assert not errors, "\n".join(errors)
    return [collected[slot] for slot in sorted(collected)]
