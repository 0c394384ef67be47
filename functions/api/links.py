"""OpenAPI links: what a client can call next with the id a create just answered.

Each create operation's success responses link to every operation on the new entity's own sub-paths (a new
lead: `GET`/`PATCH …/leads/{leadId}`, its moves, conversion, qualification, …), and to the creates that refer
to it from a body (a task, a deal, a ticket or a conversation for that lead; a routing rule for a new queue).
The ids come from the response (`$response.body#/data/id`) and the path the create was called on
(`$request.path.orgId`). The links are Powertools' own (a route's `responses[status]["links"]`), written once
from one table when the routers are composed (api.handler), because a link names its target by operationId and
the targets are known only once every router is included: a new route under an entity is linked without anyone
remembering to. The stateful fuzzing (tests/reliability/test_api_stateful_fuzz.py) follows these links to drive
real sequences (create a lead, then move, patch and convert that lead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import Route

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
    Producer(f"{ORG}/webhook-subscriptions", "subscriptionId"),
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


def _link(source_path: str, target: Route, param: str, pointer: str) -> dict[str, Any]:
    """A link to `target`: the new id for `param`, and every other path id the source's own path names."""
    source_params = set(_path_params(source_path))
    parameters: dict[str, str] = {}
    for name in _path_params(target.openapi_path):
        if name == param:
            parameters[name] = f"$response.body#{pointer}"
        elif name in source_params:
            parameters[name] = f"$request.path.{name}"
    return {"operationId": target.operation_id, "parameters": parameters}


def _links(producer: Producer, routes: list[Route]) -> dict[str, Any]:
    links: dict[str, Any] = {}
    for target in routes:
        path = target.openapi_path
        if target.include_in_schema and (path == producer.prefix or path.startswith(producer.prefix + "/")):
            links[target.operation_id] = _link(producer.path, target, producer.param, producer.pointer)
    for reference in (r for r in REFERENCES if r.producer == producer.path):
        target = _route(routes, reference.method, reference.path)
        link = _link(producer.path, target, "", producer.pointer)
        if reference.body_field is not None:
            link["requestBody"] = {reference.body_field: f"$response.body#{producer.pointer}"}
        if reference.query is not None:
            link["parameters"][reference.query] = f"$response.body#{producer.pointer}"
        links[target.operation_id] = link
    return dict(sorted(links.items()))


def _route(routes: list[Route], method: str, path: str) -> Route:
    for route in routes:
        if route.method == method.upper() and route.openapi_path == path:
            return route
    raise LookupError(f"links: no operation {method.upper()} {path}")


def link_operations(app: APIGatewayHttpResolver) -> None:
    """Adds the links to every producer's success responses that have a body (not a 204)."""
    routes = [*app._static_routes, *app._dynamic_routes]  # the resolver's own route list (no public accessor)
    for producer in PRODUCERS:
        source = _route(routes, producer.method, producer.path)
        links = _links(producer, routes)
        # a copy: a route's responses may be a dict several routes share
        source.responses = {
            status: {**response, "links": links} if 200 <= status < 300 and status != 204 else response
            for status, response in (source.responses or {}).items()
        }
