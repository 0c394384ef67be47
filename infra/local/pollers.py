"""Event source mappings and schedules, locally: SQS pollers that hand real SQS events to the functions,
and a scheduler that runs the scheduled jobs."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Any

from infra.local.aws import ACCOUNT, REGION
from infra.local.lambdas import Invoker

logger = logging.getLogger("leadcrm.local")

BATCH_SIZE = 10


def sqs_event(queue_arn: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The event Lambda's SQS event source mapping delivers for these received messages."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {
                    name: {
                        "stringValue": a.get("StringValue"),
                        "binaryValue": a.get("BinaryValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": a["DataType"],
                    }
                    for name, a in m.get("MessageAttributes", {}).items()
                },
                "md5OfBody": m.get("MD5OfBody") or hashlib.md5(m["Body"].encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
    }


class QueuePoller(threading.Thread):
    def __init__(self, lambdas: Invoker, function: str, queue_url: str) -> None:
        super().__init__(name=f"poll-{function}", daemon=True)
        self.lambdas, self.function, self.queue_url = lambdas, function, queue_url
        self.queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue_url.rsplit('/', 1)[-1]}"
        self.busy = False
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        from leadcrm.platform.adapters.aws import client

        sqs = client("sqs")
        while not self._stopping.is_set():
            try:
                received = sqs.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=BATCH_SIZE,
                    WaitTimeSeconds=1,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
                if not received:
                    continue
                self.busy = True
                try:
                    self._deliver(sqs, received)
                finally:
                    self.busy = False
            except Exception:
                logger.exception("poller %s failed; retrying", self.function)
                time.sleep(1)

    def _deliver(self, sqs: Any, received: list[dict[str, Any]]) -> None:
        try:
            result = self.lambdas.invoke(self.function, sqs_event(self.queue_arn, received)) or {}
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
        except Exception:  # the whole batch failed: every message becomes visible again
            logger.exception("%s failed a whole batch", self.function)
            return
        done = [m for m in received if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )


class Scheduler(threading.Thread):
    """EventBridge Scheduler stand-in: invokes task_lifecycle with `{"job": name}` on each job's rate."""

    def __init__(self, lambdas: Invoker, rates: dict[str, int]) -> None:
        super().__init__(name="scheduler", daemon=True)
        self.lambdas, self.rates = lambdas, rates
        self._next = {job: time.monotonic() + seconds for job, seconds in rates.items()}
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    def run_now(self, job: str | None = None) -> list[dict[str, Any]]:
        jobs = [job] if job else list(self.rates)
        return [self.lambdas.invoke("task_lifecycle", {"job": name}) for name in jobs]

    def run(self) -> None:
        while not self._stopping.wait(1):
            for job, due in list(self._next.items()):
                if time.monotonic() >= due:
                    self._next[job] = time.monotonic() + self.rates[job]
                    try:
                        self.run_now(job)
                    except Exception:
                        logger.exception("scheduled job %s failed", job)
