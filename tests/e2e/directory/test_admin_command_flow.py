"""`make admin` against the local stack's database: the organization it makes admits its owner over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.local_stack import REPO

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _admin(database_url: str, *argv: str) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "-m", "infra.admin", *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    out = done.stdout
    assert "{\n" in out, done.stderr
    return {"code": done.returncode, **json.loads(out[out.index("{\n") :])}


def test_the_admin_command_makes_an_organization_its_owner_can_use(
    local_stack: LocalStackClient, local_stack_database: str
) -> None:
    subject = f"user_{uuid.uuid4().hex}"
    made = _admin(
        local_stack_database,
        "create-organization",
        "--name",
        "Admin Studio",
        "--owner-email",
        f"{subject}@example.com",
        "--owner-subject",
        subject,
    )
    assert made["code"] == 0 and made["ok"], made
    org_id = made["data"]["organizationId"]
    token = local_stack.token_for(subject)
    assert local_stack.request("GET", f"/organizations/{org_id}/leads", token=token).status == 200

    coach = f"coach_{uuid.uuid4().hex}"
    added = _admin(
        local_stack_database, "add-member", "--organization", org_id, "--email", f"{coach}@example.com",
        "--subject", coach, "--role", "coach",
    )  # fmt: skip
    assert added["ok"], added
    coach_token = local_stack.token_for(coach)
    assert local_stack.request("GET", f"/organizations/{org_id}/leads", token=coach_token).status == 200

    assert _admin(local_stack_database, "remove-member", "--organization", org_id, "--member", coach)["code"] == 1
    assert _admin(
        local_stack_database, "remove-member", "--organization", org_id, "--member", f"{coach}@example.com"
    )["ok"]
    assert local_stack.request("GET", f"/organizations/{org_id}/leads", token=coach_token).status == 403
