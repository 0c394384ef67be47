"""Alarm topic: where every alarm of the service tells a person, on ALARM and again on OK.

- An SNS topic encrypted with a customer managed KMS key (rotated yearly). Not the AWS managed
  ``alias/aws/sns``: its key policy cannot be changed, and CloudWatch may only publish to an encrypted
  topic whose key lets ``cloudwatch.amazonaws.com`` generate data keys, so alarms would fail silently.
- A topic policy that refuses any request not made over TLS, and lets CloudWatch alarms of this account
  (and only those) publish.
- Subscriptions from deploy configuration (``alarmEmails``, ``alarmHttpsEndpoints``: see
  ``infra/config.py``). An email address must confirm the subscription from the mail SNS sends it; an
  HTTPS endpoint must confirm the SubscriptionConfirmation request it receives (PagerDuty, Opsgenie and
  the like do). Without any, the stack still deploys and the synth warns that the alarms reach no one.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Annotations, Aws, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

CLOUDWATCH = "cloudwatch.amazonaws.com"
ALARM_ARNS = f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"


@dataclass(frozen=True)
class AlarmSubscriptions:
    """Who is told when an alarm changes state (read from CDK context by ``infra/config.py``)."""

    emails: tuple[str, ...] = ()
    https_endpoints: tuple[str, ...] = ()


class AlarmTopic(Construct):
    """The encrypted, TLS-only SNS topic every alarm notifies, and its subscriptions."""

    def __init__(self, scope: Construct, construct_id: str, *, subscribers: AlarmSubscriptions) -> None:
        super().__init__(scope, construct_id)

        self.key = kms.Key(
            self,
            "Key",
            description="LeadCRM alarm topic: encrypts alarm notifications at rest",
            enable_key_rotation=True,
            # a retained key would outlive the stack and keep costing; the topic holds no data worth it
            removal_policy=RemovalPolicy.DESTROY,
            pending_window=Duration.days(7),
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsEncryptNotifications",
                principals=[iam.ServicePrincipal(CLOUDWATCH)],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            )
        )

        self.topic = sns.Topic(
            self,
            "Topic",
            display_name="LeadCRM alarms",
            master_key=self.key,
            enforce_ssl=True,
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal(CLOUDWATCH)],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"
                    },
                },
            )
        )

        # CDK names each subscription after its endpoint: reordering the list re-sends no confirmation.
        for email in subscribers.emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        for url in subscribers.https_endpoints:
            self.topic.add_subscription(subscriptions.UrlSubscription(url, protocol=sns.SubscriptionProtocol.HTTPS))
        if not subscribers.emails and not subscribers.https_endpoints:
            Annotations.of(self).add_warning_v2(
                "leadcrm:alarm-topic-without-subscribers",
                "The alarm topic has no subscriptions, so alarms reach no one: pass -c alarmEmails=... and/or "
                "-c alarmHttpsEndpoints=... (see infra/config.py).",
            )
