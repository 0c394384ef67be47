"""OpenAPI links: what a client can call next with the id a create just answered.

Each create operation's success responses link to every operation on the new entity's own sub-paths (a new
lead: `GET`/`PATCH …/leads/{leadId}`, its moves, conversion, qualification, …), and to the creates that refer
to it from a body (a task, a deal, a ticket or a conversation for that lead; a routing rule for a new queue).
The ids come from the response (`$response.body#/data/id`) and the path the create was called on
(`$request.path.orgId`). Written once here from one table, so a new route under an entity is linked without
anyone remembering to; the stateful fuzzing (tests/reliability/test_api_stateful_fuzz.py) follows these links
to drive real sequences (create a lead, then move, patch and convert that lead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ORG = "/organizations/{orgId}"


@dataclass(frozen=True)
class Producer:
    """A create: `method path` answers a new entity whose id, at `pointer` in the body, fills `{param}`."""

    path: str
    param: str
    pointer: str = "/data/id"
    # Where the entity's own operations live, when not under the create's path (a merge is read and undone
    # under …/lead-merges/{mergeId}, not under the lead it was made on).
    under: str | None = None
    method: str = "post"

    @property
    def prefix(self) -> str:
        return f"{self.under or self.path}/{{{self.param}}}"


PRODUCERS = (
    Producer(f"{ORG}/leads", "leadId"),
    Producer(f"{ORG}/leads/tags", "tagId"),
    Producer(f"{ORG}/leads/campaigns", "campaignId"),
    Producer(f"{ORG}/leads/campaigns/{{campaignId}}/spend", "spendId"),
    Producer(f"{ORG}/leads/import", "jobId", "/data/job/id"),
    Producer(f"{ORG}/leads/{{leadId}}/merge", "mergeId", "/data/mergeId", under=f"{ORG}/lead-merges"),
    Producer(f"{ORG}/pipelines", "pipelineId"),
    Producer(f"{ORG}/pipelines/{{pipelineId}}/stages", "stageId"),
    Producer(f"{ORG}/tasks", "taskId"),
    Producer(f"{ORG}/deals", "dealId"),
    Producer(f"{ORG}/tickets", "ticketId"),
    Producer(f"{ORG}/ticket-queues", "queueId"),
    Producer(f"{ORG}/ticket-routing-rules", "ruleId"),
    Producer(f"{ORG}/conversations", "conversationId", "/data/conversation/id"),
    Producer(f"{ORG}/bulk-emails", "jobId"),
    Producer(f"{ORG}/integrations/meta", "connectionId"),
    Producer(f"{ORG}/integrations/whatsapp", "connectionId"),
)


@dataclass(frozen=True)
class Reference:
    """A create or list whose body field or query parameter names an entity a producer made."""

    producer: str  # the producer's path (its method is POST)
    method: str
    path: str
    body_field: str | None = None
    query: str | None = None


REFERENCES = (
    Reference(f"{ORG}/leads", "post", f"{ORG}/tasks", body_field="linkedLeadId"),
    Reference(f"{ORG}/leads", "post", f"{ORG}/deals", body_field="leadId"),
    Reference(f"{ORG}/leads", "post", f"{ORG}/tickets", body_field="leadId"),
    Reference(f"{ORG}/leads", "post", f"{ORG}/conversations", body_field="leadId"),
    Reference(f"{ORG}/leads", "get", f"{ORG}/tasks", query="leadId"),
    Reference(f"{ORG}/leads", "get", f"{ORG}/tickets", query="leadId"),
    Reference(f"{ORG}/leads", "get", f"{ORG}/deals", query="leadId"),
    Reference(f"{ORG}/pipelines", "get", f"{ORG}/leads", query="pipelineId"),
    Reference(f"{ORG}/leads/campaigns", "get", f"{ORG}/leads", query="campaignId"),
    Reference(f"{ORG}/leads/campaigns", "post", f"{ORG}/leads", body_field="campaignId"),
    Reference(f"{ORG}/ticket-queues", "post", f"{ORG}/ticket-routing-rules", body_field="queueId"),
    Reference(f"{ORG}/ticket-queues", "get", f"{ORG}/tickets", query="queueId"),
)


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def _success_statuses(operation: dict[str, Any]) -> list[str]:
    """The 2xx answers with a JSON body: the ones a new id can be read from."""
    return [
        status
        for status, response in operation.get("responses", {}).items()
        if status.startswith("2") and "application/json" in response.get("content", {})
    ]


def _link(source_path: str, target_path: str, target: dict[str, Any], param: str, pointer: str) -> dict[str, Any]:
    """A link to `target`: the new id for `param`, and every other path id the source's own path names."""
    source_params = set(_path_params(source_path))
    parameters: dict[str, str] = {}
    for name in _path_params(target_path):
        if name == param:
            parameters[name] = f"$response.body#{pointer}"
        elif name in source_params:
            parameters[name] = f"$request.path.{name}"
    return {"operationId": target["operationId"], "parameters": parameters}


def document_links(document: dict[str, Any]) -> dict[str, Any]:
    """Adds the links to every producer's success responses (a link names its target by operationId)."""
    paths = document["paths"]
    for producer in PRODUCERS:
        source = paths.get(producer.path, {}).get(producer.method)
        if source is None:
            raise LookupError(f"links: no operation {producer.method.upper()} {producer.path}")
        links: dict[str, Any] = {}
        for path, operations in paths.items():
            if path != producer.prefix and not path.startswith(producer.prefix + "/"):
                continue
            for target in operations.values():
                links[target["operationId"]] = _link(producer.path, path, target, producer.param, producer.pointer)
        for reference in (r for r in REFERENCES if r.producer == producer.path):
            target = paths[reference.path][reference.method]
            link = _link(producer.path, reference.path, target, "", producer.pointer)
            if reference.body_field is not None:
                link["requestBody"] = {reference.body_field: f"$response.body#{producer.pointer}"}
            if reference.query is not None:
                link["parameters"][reference.query] = f"$response.body#{producer.pointer}"
            links[target["operationId"]] = link
        for status in _success_statuses(source):
            source["responses"][status]["links"] = links
    return document
