"""Re-drive a dead-letter queue to the queue it came from (SQS StartMessageMoveTask). `make redrive`.

    python -m infra.redrive [--queue ingestion|task-lifecycle|graph-fetch|meta-events|webhook-delivery]
                            [--stack LeadCrmStack] [--max-per-second N]
    python -m infra.redrive --status            # the DLQ's move tasks (progress, failures)

Fix the cause first (deploy, reconnect a page, ...): the consumers are idempotent, so a message that had
half-succeeded is safe to process again. Uses the caller's AWS credentials and region.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

# The DLQ names CloudFormation gives the `Messaging` construct's queues start with these (after the stack).
DLQ_PREFIXES = {
    "ingestion": "MessagingIngestionDeadLetterQueue",
    "task-lifecycle": "MessagingTaskLifecycleDeadLetterQueue",
    "graph-fetch": "MessagingGraphFetchDeadLetterQueue",
    "meta-events": "MetaConversionsMetaEventsDeadLetterQueue",
    "webhook-delivery": "OutboundWebhooksWebhookDeliveryDeadLetterQueue",
}


def dead_letter_queue_arn(sqs: Any, stack: str, queue: str) -> str:
    prefix = f"{stack}-{DLQ_PREFIXES[queue]}"
    urls = sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
    if len(urls) != 1:
        raise SystemExit(f"expected one queue named {prefix}*, found {len(urls)}")
    return str(sqs.get_queue_attributes(QueueUrl=urls[0], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])


def redrive(sqs: Any, stack: str, queue: str, max_per_second: int | None = None) -> str:
    """Start moving every message of the DLQ back to its source queue; the move task's handle."""
    arguments: dict[str, Any] = {"SourceArn": dead_letter_queue_arn(sqs, stack, queue)}
    if max_per_second:
        arguments["MaxNumberOfMessagesPerSecond"] = max_per_second
    return str(sqs.start_message_move_task(**arguments)["TaskHandle"])


def move_tasks(sqs: Any, stack: str, queue: str) -> list[dict[str, Any]]:
    arn = dead_letter_queue_arn(sqs, stack, queue)
    return list(sqs.list_message_move_tasks(SourceArn=arn, MaxResults=10).get("Results", []))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Re-drive a LeadCRM dead-letter queue.")
    parser.add_argument("--queue", choices=sorted(DLQ_PREFIXES), default="ingestion")
    parser.add_argument("--stack", default="LeadCrmStack")
    parser.add_argument("--max-per-second", type=int, default=None, help="throttle the move (default: SQS decides)")
    parser.add_argument("--status", action="store_true", help="list the DLQ's move tasks instead of starting one")
    args = parser.parse_args(argv)

    import boto3

    sqs = boto3.client("sqs")
    if args.status:
        for task in move_tasks(sqs, args.stack, args.queue):
            moved, total = task.get("ApproximateNumberOfMessagesMoved"), task.get("ApproximateNumberOfMessagesToMove")
            print(f"{task.get('Status')}: {moved}/{total} moved {task.get('FailureReason', '')}".rstrip())
        return
    handle = redrive(sqs, args.stack, args.queue, args.max_per_second)
    print(f"re-driving the {args.queue} DLQ; task {handle}")
    print(f"progress: python -m infra.redrive --queue {args.queue} --status")


if __name__ == "__main__":
    main(sys.argv[1:])
