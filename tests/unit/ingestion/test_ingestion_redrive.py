"""The DLQ re-drive command: finds the stack's dead-letter queue and starts an SQS message move task back to
the queue the messages came from (no destination: SQS sends them to their source)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from infra.redrive import redrive

DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/LeadCrmStack-MessagingIngestionDeadLetterQueueA1B2-xyz"
DLQ_ARN = "arn:aws:sqs:eu-west-1:123456789012:LeadCrmStack-MessagingIngestionDeadLetterQueueA1B2-xyz"


@pytest.fixture
def sqs():
    client = boto3.session.Session().client(
        "sqs", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:
        yield client, stubber


def test_redrive_starts_a_move_task_from_the_stacks_ingestion_dlq_back_to_its_source(sqs):
    client, stubber = sqs
    stubber.add_response(
        "list_queues", {"QueueUrls": [DLQ_URL]}, {"QueueNamePrefix": "LeadCrmStack-MessagingIngestionDeadLetterQueue"}
    )
    stubber.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": DLQ_ARN}},
        {"QueueUrl": DLQ_URL, "AttributeNames": ["QueueArn"]},
    )
    stubber.add_response("start_message_move_task", {"TaskHandle": "handle-1"}, {"SourceArn": DLQ_ARN})

    assert redrive(client, "LeadCrmStack", "ingestion") == "handle-1"
    stubber.assert_no_pending_responses()


def test_redrive_refuses_when_the_dlq_cannot_be_told_apart(sqs):
    client, stubber = sqs
    stubber.add_response(
        "list_queues", {"QueueUrls": []}, {"QueueNamePrefix": "Other-MessagingTaskLifecycleDeadLetterQueue"}
    )
    with pytest.raises(SystemExit):
        redrive(client, "Other", "task-lifecycle")


def test_redrive_of_graph_fetch_starts_from_the_graph_fetch_dlq(sqs):
    client, stubber = sqs
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/LeadCrmStack-MessagingGraphFetchDeadLetterQueueC3D4-abc"
    arn = "arn:aws:sqs:eu-west-1:123456789012:LeadCrmStack-MessagingGraphFetchDeadLetterQueueC3D4-abc"
    stubber.add_response(
        "list_queues", {"QueueUrls": [url]}, {"QueueNamePrefix": "LeadCrmStack-MessagingGraphFetchDeadLetterQueue"}
    )
    stubber.add_response(
        "get_queue_attributes", {"Attributes": {"QueueArn": arn}}, {"QueueUrl": url, "AttributeNames": ["QueueArn"]}
    )
    stubber.add_response("start_message_move_task", {"TaskHandle": "handle-2"}, {"SourceArn": arn})

    assert redrive(client, "LeadCrmStack", "graph-fetch") == "handle-2"
    stubber.assert_no_pending_responses()
