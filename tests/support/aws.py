"""boto3 clients for the tests' own calls (making queues, reading them), from one shared session.

A session caches the service models it loaded, so these clients cost milliseconds instead of the ~80 ms a
client from a fresh session costs. They carry no state of their own: moto's `mock_aws` intercepts them
exactly as it intercepts the product's clients.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

REGION = "eu-west-1"


@cache
def _session() -> Any:
    import boto3

    return boto3.session.Session(region_name=REGION)


def aws_client(service: str) -> Any:
    return _session().client(service, region_name=REGION)


EVENT_BUS = "leadcrm-events"
# The rule task_lifecycle's queue hangs off: everything LeadCRM and the platform publish.
LIFECYCLE_PATTERN = {"source": [{"prefix": "leadcrm"}, {"prefix": "platform"}]}


@dataclass(frozen=True)
class Queue:
    name: str
    url: str
    arn: str

    def receive_all(self) -> list[dict[str, Any]]:
        """Every message now on the queue (moto delivers synchronously, so no waiting is needed)."""
        sqs = aws_client("sqs")
        messages: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(
                QueueUrl=self.url,
                MaxNumberOfMessages=10,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not batch:
                return messages
            messages.extend(batch)


def make_queue(name: str) -> Queue:
    sqs = aws_client("sqs")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(name=name, url=url, arn=arn)


def make_event_bus(name: str = EVENT_BUS) -> str:
    aws_client("events").create_event_bus(Name=name)
    return name


def route_bus_to_queue(
    bus: str, queue: Queue, *, rule: str = "to-task-lifecycle", pattern: dict[str, Any] | None = None
) -> None:
    events = aws_client("events")
    events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps(pattern or LIFECYCLE_PATTERN))
    events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": "queue", "Arn": queue.arn}])
