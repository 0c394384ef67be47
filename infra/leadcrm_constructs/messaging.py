"""Messaging: the SQS work queues, their dead-letter queues and the functions that consume them.

- ingestion queue: filled by the webhook receiver (and later by S3 events for inbound email and CSV
  imports), consumed by the ingestion function;
- task-lifecycle queue: filled by the EventBridge rule of ``DomainEvents``, consumed by task_lifecycle;
- graph-fetch queue: Meta leadgen webhooks, filled by the webhook receiver (and by ingestion when an old
  raw leadgen reaches it), consumed by graph_fetch outside the VPC, which reads each lead from Graph and
  queues it on the ingestion queue. A queue of its own rather than a second consumer of the ingestion
  queue: SQS hands a message to whichever consumer polls, so two functions cannot split one queue by kind,
  and its own DLQ shows Graph trouble apart from ingestion's.

Consumers report partial batch failures, so one bad message is retried alone and, after
``MAX_RECEIVE_COUNT`` receives, parked in the queue's DLQ (alarmed by ``Observability``).
"""

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

MAX_RECEIVE_COUNT = 5
BATCH_SIZE = 10
MAX_CONCURRENCY = 5
# AWS guidance for Lambda consumers: visibility timeout at least six times the function timeout, so a
# message is not handed to a second invocation while throttled retries of the first are still running.
VISIBILITY_TIMEOUT_FACTOR = 6
LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3)


class WorkQueue(Construct):
    """A standard queue with its DLQ, drained by one function with partial batch responses."""

    def __init__(
        self, scope: Construct, construct_id: str, *, consumer: lambda_.Function, batch_size: int = BATCH_SIZE
    ) -> None:
        super().__init__(scope, construct_id)
        consumer_timeout = consumer.timeout or LAMBDA_DEFAULT_TIMEOUT
        self.visibility_timeout = Duration.seconds(VISIBILITY_TIMEOUT_FACTOR * consumer_timeout.to_seconds())
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=self.visibility_timeout,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVE_COUNT),
        )
        consumer.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=batch_size,
                report_batch_item_failures=True,
                max_concurrency=MAX_CONCURRENCY,
            )
        )


class Messaging(Construct):
    """The ingestion, task-lifecycle and graph-fetch work queues."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        ingestion_consumer: lambda_.Function,
        ingestion_producers: Sequence[lambda_.Function],
        task_lifecycle_consumer: lambda_.Function,
        graph_fetch_consumer: lambda_.Function,
        graph_fetch_producers: Sequence[lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        self.ingestion = WorkQueue(self, "Ingestion", consumer=ingestion_consumer)
        self.task_lifecycle = WorkQueue(self, "TaskLifecycle", consumer=task_lifecycle_consumer)
        self.graph_fetch = WorkQueue(self, "GraphFetch", consumer=graph_fetch_consumer)

        for producer in ingestion_producers:
            self.ingestion.queue.grant_send_messages(producer)
            producer.add_environment("INGESTION_QUEUE_URL", self.ingestion.queue.queue_url)
        for producer in graph_fetch_producers:
            self.graph_fetch.queue.grant_send_messages(producer)
            producer.add_environment("GRAPH_FETCH_QUEUE_URL", self.graph_fetch.queue.queue_url)

    @property
    def work_queues(self) -> list[WorkQueue]:
        return [self.ingestion, self.task_lifecycle, self.graph_fetch]
