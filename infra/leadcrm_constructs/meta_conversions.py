"""Meta conversions (Conversions API for CRM): the meta-events queue, its DLQ and the sender's grants.

- task_lifecycle (in the VPC) records each CRM event a Lead Ads lead's stage change makes, checks it again and
  queues it on the meta-events queue (``META_EVENTS_QUEUE_URL``; the SQS VPC endpoint carries it);
- the meta_events function (outside the VPC, like graph_fetch: the isolated subnets cannot reach
  graph.facebook.com) consumes it with partial batch failures, reads the page's token (the connection's
  secret, ``meta_lead_ads/*`` only), POSTs the event to the dataset and queues Meta's answer on the ingestion
  queue, where the ingestion function records it on the lead's timeline (as graph_fetch's fetched leads);
- what Meta does not take for now (no answer, 5xx, throttling, a rejected token) is retried, then parked in
  the DLQ after ``MAX_RECEIVE_COUNT`` receives (alarmed by ``Observability``; ``make redrive
  QUEUE=meta-events``).
"""

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from cdk_nag import NagSuppressions
from constructs import Construct

from infra.leadcrm_constructs.lead_ingestion import META_PAGE_SECRETS, SECRET_PREFIX
from infra.leadcrm_constructs.messaging import WorkQueue


class MetaConversions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        sender: lambda_.Function,
        producers: list[lambda_.Function],
        results_queue: sqs.Queue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.events = WorkQueue(self, "MetaEvents", consumer=sender)
        for producer in producers:
            self.events.queue.grant_send_messages(producer)
            producer.add_environment("META_EVENTS_QUEUE_URL", self.events.queue.queue_url)

        # Meta's answers go back through the ingestion queue, into the VPC.
        results_queue.grant_send_messages(sender)
        sender.add_environment("INGESTION_QUEUE_URL", results_queue.queue_url)

        secret_arns = f"arn:{Aws.PARTITION}:secretsmanager:{Aws.REGION}:{Aws.ACCOUNT_ID}:secret:"
        sender.add_to_role_policy(
            iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue"], resources=[f"{secret_arns}{META_PAGE_SECRETS}*"]
            )
        )
        sender.add_environment("INTEGRATION_SECRET_PREFIX", SECRET_PREFIX)
        NagSuppressions.add_resource_suppressions(
            sender.role,  # type: ignore[arg-type]
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "A page's token secret is named after the page id, known only when an event is "
                    "sent: the read grant is the meta_lead_ads/ prefix of the connection secrets, nothing wider.",
                    "applies_to": [
                        "Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:"
                        f"{META_PAGE_SECRETS}*",
                    ],
                }
            ],
            apply_to_children=True,
        )
