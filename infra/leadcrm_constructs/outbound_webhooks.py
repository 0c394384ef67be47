"""Outbound webhooks: the delivery queue between the VPC and the webhook_delivery function outside it.

- The API (a replay) and task_lifecycle (the fan-out of each event, the `webhook_delivery_sweep` job) put
  signed deliveries on the queue (``WEBHOOK_DELIVERY_QUEUE_URL``). Bodies may carry a lead's contact when
  the organization asked for it, so the queue is encrypted and TLS-only like every work queue.
- webhook_delivery (outside the VPC: the endpoints are on the internet, and the VPC has no NAT gateway)
  posts each one and reports the result on the domain bus (``EVENT_BUS_NAME``, source
  ``leadcrm.webhook_delivery``), which the task-lifecycle rule routes back into the VPC. It holds no
  database grant and no secret: the bodies are signed before they are queued.
- Retries: the function fails a record only when it cannot report; SQS retries it and parks it in the DLQ
  after the receive limit (alarmed with the other work queues by ``Observability``). An endpoint's own
  failures are results, retried with backoff by the sweep (README "Outbound webhooks").
"""

from collections.abc import Sequence

from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.leadcrm_constructs.messaging import WorkQueue

# Small batches: a batch is posted one endpoint after another, each up to 15 s.
BATCH_SIZE = 5


class OutboundWebhooks(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        sender: lambda_.Function,
        producers: Sequence[lambda_.Function],
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        self.delivery = WorkQueue(self, "WebhookDelivery", consumer=sender, batch_size=BATCH_SIZE)
        for producer in producers:
            self.delivery.queue.grant_send_messages(producer)
            producer.add_environment("WEBHOOK_DELIVERY_QUEUE_URL", self.delivery.queue.queue_url)
        bus.grant_put_events_to(sender)
        sender.add_environment("EVENT_BUS_NAME", bus.event_bus_name)
