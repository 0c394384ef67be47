"""moto, in-process on 127.0.0.1, with the queues, bus, rules, bucket, SES identity and configuration set that
infra defines (SES's own additions: infra/local/ses.py)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from moto.server import ThreadedMotoServer

from infra.local.postgres import free_port

REGION = "eu-west-1"
ACCOUNT = "123456789012"  # moto's default account
EVENT_BUS = "leadcrm-events"
INGESTION_QUEUE = "leadcrm-ingestion"
TASK_LIFECYCLE_QUEUE = "leadcrm-task-lifecycle"
GRAPH_FETCH_QUEUE = "leadcrm-graph-fetch"
META_EVENTS_QUEUE = "leadcrm-meta-events"
WEBHOOK_DELIVERY_QUEUE = "leadcrm-webhook-delivery"
WORK_QUEUES = (INGESTION_QUEUE, TASK_LIFECYCLE_QUEUE, GRAPH_FETCH_QUEUE, META_EVENTS_QUEUE, WEBHOOK_DELIVERY_QUEUE)
INBOUND_BUCKET = "leadcrm-inbound-mail"
INBOUND_PREFIX = "inbound/"
IMPORTS_BUCKET = "leadcrm-lead-imports"
WEBHOOK_BODIES_BUCKET = "leadcrm-webhook-bodies"  # claim checks of webhook bodies too large for SQS
MAIL_DOMAIN = "mail.leadcrm.local"
# The rule infra puts on the bus: our own events and the platform's go to task_lifecycle.
EVENT_PATTERN = {"source": [{"prefix": "leadcrm"}, {"prefix": "platform"}]}
# The configuration set every send names (SES_CONFIGURATION_SET), and infra's default-bus rule for its events.
CONFIGURATION_SET = "leadcrm-local"
VISIBILITY_TIMEOUT_SECONDS = 10  # short locally, so a failed message is retried while you watch
MAX_RECEIVE_COUNT = 3


@dataclass(frozen=True)
class LocalAws:
    endpoint: str
    queues: dict[str, str]  # name -> url

    @property
    def ingestion_queue_url(self) -> str:
        return self.queues[INGESTION_QUEUE]

    @property
    def task_lifecycle_queue_url(self) -> str:
        return self.queues[TASK_LIFECYCLE_QUEUE]

    @property
    def graph_fetch_queue_url(self) -> str:
        return self.queues[GRAPH_FETCH_QUEUE]

    @property
    def meta_events_queue_url(self) -> str:
        return self.queues[META_EVENTS_QUEUE]

    @property
    def webhook_delivery_queue_url(self) -> str:
        return self.queues[WEBHOOK_DELIVERY_QUEUE]


def ses_event_pattern(configuration_set: str) -> dict[str, object]:
    """infra's EmailSending rule: SES's sending events of one configuration set."""
    from leadcrm.conversations.rules.delivery import DETAIL_TYPES

    return {
        "source": ["aws.ses"],
        "detail-type": list(DETAIL_TYPES),
        "detail": {"mail": {"tags": {"ses:configuration-set": [configuration_set]}}},
    }


def start_moto(port: int | None = None) -> tuple[ThreadedMotoServer, str]:
    port = port or free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


def point_sdk_at(endpoint: str) -> None:
    """Every boto3 client made in this process (ours and the functions') talks to moto."""
    os.environ.update(
        {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
        }
    )


def provision() -> LocalAws:
    import boto3

    session = boto3.session.Session(region_name=REGION)
    sqs, events, s3, ses = (session.client(s) for s in ("sqs", "events", "s3", "sesv2"))
    queues: dict[str, str] = {}
    for name in WORK_QUEUES:
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        queues[f"{name}-dlq"] = dlq_url
        queues[name] = sqs.create_queue(
            QueueName=name,
            Attributes={
                "VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS),
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVE_COUNT}),
            },
        )["QueueUrl"]

    events.create_event_bus(Name=EVENT_BUS)
    events.put_rule(Name="leadcrm-to-task-lifecycle", EventBusName=EVENT_BUS, EventPattern=json.dumps(EVENT_PATTERN))
    events.put_targets(
        Rule="leadcrm-to-task-lifecycle",
        EventBusName=EVENT_BUS,
        Targets=[{"Id": "task-lifecycle", "Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{TASK_LIFECYCLE_QUEUE}"}],
    )

    s3.create_bucket(Bucket=INBOUND_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_notification_configuration(
        Bucket=INBOUND_BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{INGESTION_QUEUE}",
                    "Events": ["s3:ObjectCreated:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": INBOUND_PREFIX}]}},
                }
            ]
        },
    )
    ses.create_email_identity(EmailIdentity=MAIL_DOMAIN)
    ses.create_configuration_set(ConfigurationSetName=CONFIGURATION_SET)
    # SES publishes to the default bus; the same rule as infra's routes this set's events to task_lifecycle.
    events.put_rule(Name="ses-to-task-lifecycle", EventPattern=json.dumps(ses_event_pattern(CONFIGURATION_SET)))
    events.put_targets(
        Rule="ses-to-task-lifecycle",
        Targets=[{"Id": "task-lifecycle", "Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{TASK_LIFECYCLE_QUEUE}"}],
    )
    # CSV imports: the dashboard PUTs the file straight to a presigned URL, from its own origin.
    s3.create_bucket(Bucket=IMPORTS_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_bucket_cors(
        Bucket=IMPORTS_BUCKET,
        CORSConfiguration={
            "CORSRules": [
                {"AllowedMethods": ["PUT"], "AllowedOrigins": ["*"], "AllowedHeaders": ["*"], "MaxAgeSeconds": 600}
            ]
        },
    )
    s3.create_bucket(Bucket=WEBHOOK_BODIES_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    return LocalAws(endpoint=os.environ["AWS_ENDPOINT_URL"], queues=queues)
