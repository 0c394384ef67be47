"""Domain events: the EventBridge bus the outbox is published to, and the rules that route it.

Services write an outbox row in the same transaction as the change; after commit (and again from the
scheduled relay, for anything left behind) the row is put on this bus. Rules then deliver events to
work queues, never straight to a function, so a failing consumer retries from SQS and ends in a DLQ.
"""

from collections.abc import Sequence

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.leadcrm_constructs.messaging import WorkQueue

# Our own events are ``leadcrm.*``; events from the wider platform (purchases, memberships) are ``platform.*``.
TASK_LIFECYCLE_SOURCE_PREFIXES = ("leadcrm", "platform")


class DomainEvents(Construct):
    """Custom event bus, its publishers, and the rule feeding the task-lifecycle queue."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        publishers: Sequence[lambda_.Function],
        task_lifecycle_queue: WorkQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", description="LeadCRM domain events (transactional outbox)")

        self.task_lifecycle_rule = events.Rule(
            self,
            "ToTaskLifecycle",
            event_bus=self.bus,
            description="LeadCRM and platform events to the task-lifecycle queue",
            event_pattern=events.EventPattern(
                source=events.Match.any_of(*(events.Match.prefix(p) for p in TASK_LIFECYCLE_SOURCE_PREFIXES))
            ),
            targets=[
                targets.SqsQueue(
                    task_lifecycle_queue.queue,
                    # Events EventBridge cannot deliver land next to the ones the consumer gave up on:
                    # same body, same alarm, same redrive.
                    dead_letter_queue=task_lifecycle_queue.dead_letter_queue,
                )
            ],
        )

        for publisher in publishers:
            self.bus.grant_put_events_to(publisher)
            publisher.add_environment("EVENT_BUS_NAME", self.bus.event_bus_name)
