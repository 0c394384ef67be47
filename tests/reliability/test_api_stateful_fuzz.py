"""Stateful API fuzzing with schemathesis: sequences of calls that follow the OpenAPI links of the document the
local stack serves (api/links.py), so a later call works on what an earlier one created: create a lead, then
read, patch, move, qualify or convert that lead; create a task for it, then update or complete the task; a
deal, then move it; a ticket, then reply to it. Every call is generated from its operation's schema (bodies,
queries and the ids the link did not fill), as the owner of the fuzz organization.

Required of every answer, as in test_api_fuzz.py: no server error (5xx), a documented status code and
content type, and a body that matches the documented schema for that status.

FUZZ_STATEFUL_SCENARIOS sequences (default 80) of at most FUZZ_STATEFUL_STEPS calls each (default 15):
about a minute on two cores; `make test-deep` runs many more. The test also proves that the links are
followed: at least MIN_LINKED_SUCCESSES calls (scaled down with a smaller budget) took an id from an earlier
answer and succeeded (2xx) on it, over at least MIN_LINKED_OPERATIONS distinct operations, from at least
MIN_LINKED_SOURCES distinct creates.

Every other create (a lead, a task, a deal, a ticket, …) is sent with a body the route accepts, so that chains
start; the calls that follow are generated. Creates whose chain cannot be made real from generated requests
(UNCHAINED) are left to the per-operation fuzzing.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
import schemathesis
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import Bundle
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import TestPhase
from schemathesis.generation.stateful.state_machine import StepInput, normalize_name
from schemathesis.specs.openapi.stateful import transition

from tests.support.fuzz_helpers import CHECKS, aim, register_edge_formats, seed_fuzz_org

if TYPE_CHECKING:
    from schemathesis.generation.stateful.state_machine import StepOutput

    from tests.support.local_stack import LocalStackClient

register_edge_formats()

pytestmark = pytest.mark.e2e

FUZZ_STATEFUL_SCENARIOS = int(os.environ.get("FUZZ_STATEFUL_SCENARIOS", "80"))
FUZZ_STATEFUL_STEPS = int(os.environ.get("FUZZ_STATEFUL_STEPS", "15"))
# With the default budget (a run makes about 450 such calls, on 55 operations, from 11 creates); a smaller
# budget (FUZZ_STATEFUL_SCENARIOS=5 for a quick look) expects proportionally less, a larger one no more.
_SCALE = min(FUZZ_STATEFUL_SCENARIOS * FUZZ_STATEFUL_STEPS / (80 * 15), 1.0)
MIN_LINKED_SUCCESSES = max(5, int(120 * _SCALE))
MIN_LINKED_OPERATIONS = max(3, int(25 * _SCALE))
MIN_LINKED_SOURCES = max(2, int(6 * _SCALE))
MAX_RESTARTS_WITHOUT_PROGRESS = 5
EXTRA_ROOTS = ("POST /organizations/{orgId}/deals", "POST /organizations/{orgId}/ticket-queues")
# Creates whose chain cannot be made real from generated requests, left to the per-operation fuzzing: a bulk
# email and a CSV import (a job that only reads back; the import waits for an upload to S3), a merge (it needs
# a second lead, and consumes it), a Meta or WhatsApp connection (a token Graph must accept).
UNCHAINED = r"/(bulk-emails|leads/import|leads/\{leadId\}/merge|lead-merges|integrations)(/|$)"


def _realistic_create(label: str, org: dict[str, Any], unique: str) -> dict[str, Any] | None:
    """A body the create accepts, or None for an operation that is not one of the creates chains start from."""
    lead = org["ids"]["leadId"][0]
    bodies: dict[str, dict[str, Any]] = {
        "POST /organizations/{orgId}/leads": {"name": f"Chain {unique}", "email": f"chain-{unique}@example.com"},
        "POST /organizations/{orgId}/tasks": {"title": f"Chain task {unique}", "linkedLeadId": lead},
        "POST /organizations/{orgId}/tickets": {"subject": f"Chain ticket {unique}", "leadId": lead},
        "POST /organizations/{orgId}/deals": {
            "title": f"Chain deal {unique}",
            "offerType": "plan",
            "valueMinor": 1000,
            "currency": "EUR",
            "expectedCloseDate": "2027-01-01",
            "leadId": lead,
        },
        "POST /organizations/{orgId}/conversations": {"leadId": lead},
        "POST /organizations/{orgId}/pipelines": {"name": f"Chain pipeline {unique}"},
        "POST /organizations/{orgId}/pipelines/{pipelineId}/stages": {"name": f"S {unique}", "category": "callback"},
        "POST /organizations/{orgId}/leads/tags": {"name": f"Chain tag {unique}"},
        "POST /organizations/{orgId}/ticket-queues": {"name": f"Chain queue {unique}"},
        "POST /organizations/{orgId}/ticket-routing-rules": {
            "name": f"Chain rule {unique}",
            "keywords": ["chain"],
            "queueId": org["ids"]["queueId"][0],
        },
        "POST /organizations/{orgId}/leads/campaigns": {"name": f"Chain campaign {unique}"},
        "POST /organizations/{orgId}/leads/campaigns/{campaignId}/spend": {
            "amount": "120.50",
            "currency": "EUR",
            "periodStart": "2026-01-01",
            "periodEnd": "2026-01-31",
        },
    }
    return bodies.get(label)


def _realistic_body(input: StepInput, org: dict[str, Any], sent: Counter[str]) -> None:
    """Every other create is sent with a body the route accepts, so that chains start and reach the operations
    on what they made (the per-operation fuzzing sends every create its generated bodies). The values a link
    took from an earlier answer (a task's `linkedLeadId` from the lead just created) are kept."""
    case = input.case
    sent[case.operation.label] += 1
    realistic = _realistic_create(case.operation.label, org, uuid.uuid4().hex[:12])
    if realistic is None or sent[case.operation.label] % 2:
        return
    linked = {name for location, name in input.applied_parameters if location is ParameterLocation.BODY and name}
    kept = {name: case.body[name] for name in linked if isinstance(case.body, dict) and name in case.body}
    case.body = {**realistic, **kept}
    for name in [name for name in case.headers or {} if name.lower() == "idempotency-key"]:
        case.headers[name] = uuid.uuid4().hex  # a generated key is reused across bodies (a 422)


def _with_roots(schema: Any, labels: tuple[str, ...]) -> type:
    """The schema's state machine, with `labels` among the operations a scenario may start from.

    schemathesis starts scenarios from the creates it judges likely to succeed with generated data, and leaves
    out those whose bodies name an entity no operation creates (its dependency analysis reads `assigneeUserId` and
    `escalationUserId` as such), so a deal or a queue would never be created and never moved or edited."""
    rules = {}
    for label in labels:
        method, path = label.split(" ", 1)
        operation = schema[path][method]
        name = normalize_name(f"RANDOM -> {label}")
        rules[name] = transition(
            name=name,
            target=Bundle("catch_all"),
            precondition=lambda machine: True,
            input=operation.as_strategy(phase=TestPhase.STATEFUL).map(StepInput.initial),
        )
    return type("WorkflowWithRoots", (schema.as_state_machine(),), rules)


def _settings(scenarios: int) -> hypothesis.settings:
    # Not derandomized: the links' choices are drawn from true randomness (schemathesis), so a run cannot be
    # replayed anyway, and each restart after a flaky replay should explore new sequences.
    return hypothesis.settings(
        max_examples=scenarios,
        stateful_step_count=FUZZ_STATEFUL_STEPS,
        deadline=None,
        database=None,
        phases=[hypothesis.Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=list(hypothesis.HealthCheck),
    )


@pytest.fixture(scope="module")
def fuzz_org(local_stack: LocalStackClient) -> dict[str, Any]:
    return seed_fuzz_org(local_stack)


@pytest.fixture(scope="module")
def linked_schema(local_stack: LocalStackClient) -> Any:
    """The served document with its own links only: schemathesis' inferred links guess from names (an
    `orgId` filled with a deal's id), which would spend the budget on 403s."""
    schema = schemathesis.openapi.from_url(f"{local_stack.base_url}/openapi.json").exclude(path_regex=UNCHAINED)
    schema.config.phases.stateful.inference.algorithms = []
    # Valid requests by the schema: the per-operation fuzzing sends the invalid ones (and the NULs) already.
    schema.config.phases.stateful.generation.update(modes=["positive"], allow_x00=False)
    return schema


def test_sequences_that_follow_the_links_answer_within_their_documented_schemas(local_stack, fuzz_org, linked_schema):
    followed: Counter[tuple[str, str]] = Counter()
    creates: Counter[str] = Counter()
    failures: list[str] = []

    class Workflow(_with_roots(linked_schema, EXTRA_ROOTS)):  # type: ignore[misc]
        def step(self, input: StepInput) -> StepOutput:
            linked = {name for location, name in input.applied_parameters if location is ParameterLocation.PATH}
            aim(input.case, fuzz_org, keep=linked)
            _realistic_body(input, fuzz_org, creates)
            output = super().step(input)
            # A call that used an id an earlier answer gave (not just the organization every call carries)
            used_an_earlier_id = any(
                name != "orgId" for _, name in input.applied_parameters if name is not None
            ) or any(location is ParameterLocation.BODY for location, _ in input.applied_parameters)
            if input.transition is not None and used_an_earlier_id and 200 <= output.response.status_code < 300:
                source = self.recorder.cases[input.transition.parent_id].value.operation.label
                followed[(source, input.case.operation.label)] += 1
            return output

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {
                "base_url": local_stack.base_url,
                "headers": {"authorization": f"Bearer {fuzz_org['token']}"},
                "timeout": 15,
            }

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            try:
                case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None, recorder=self.recorder)
            except Exception as failure:
                # Kept apart from Hypothesis' report, which a restart below could drop
                failures.append(f"{case.operation.label} → {response.status_code}: {failure}"[:2000])
                raise

        def teardown(self) -> None:
            scenarios.append(len(self.recorder.cases))
            super().teardown()

    scenarios: list[int] = []
    stalled = 0
    while len(scenarios) < FUZZ_STATEFUL_SCENARIOS and stalled <= MAX_RESTARTS_WITHOUT_PROGRESS:
        before = len(scenarios)
        try:
            Workflow.run(settings=_settings(FUZZ_STATEFUL_SCENARIOS - before))
            break
        except FlakyStrategyDefinition:
            # The API keeps what each scenario did, so a choice Hypothesis replays can meet another answer (a
            # create that succeeded is now a duplicate, a bundle it filled stays empty). That is the nature of
            # a stateful API, not a finding: start a new run for the scenarios left (schemathesis' own runner
            # does the same). A check that failed is never lost here: FlakyFailure is not this error, and
            # `failures` keeps every one.
            stalled = 0 if len(scenarios) > before else stalled + 1
    assert len(scenarios) >= FUZZ_STATEFUL_SCENARIOS, f"{len(scenarios)} scenarios ran, Hypothesis kept stopping"

    assert not failures, "\n\n".join(failures)
    summary = "\n".join(f"{n} × {source} → {target}" for (source, target), n in followed.most_common())
    assert sum(followed.values()) >= MIN_LINKED_SUCCESSES, summary
    assert len({target for _, target in followed}) >= MIN_LINKED_OPERATIONS, summary
    assert len({source for source, _ in followed}) >= MIN_LINKED_SOURCES, summary
