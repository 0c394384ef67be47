"""Email: inbound mail for the organization's reply and lead addresses, authenticated by AWS end to end, and
outbound mail's configuration set and events (``EmailSending``, below).

    sender ──SMTP──▶ SES (MX of the inbound domain) ──receipt rule──▶ S3 inbound/<message id> (raw MIME)
        ──ObjectCreated──▶ ingestion queue ──▶ ingestion function (reads the object)

This replaces the spec's Cloudflare Email Worker and its shared secret: every hop is an AWS service
principal with a scoped grant, so there is no secret to leak. The local stack (``infra/local/aws.py``)
wires the same bucket notification to the same queue.

- The SES domain identity (Easy DKIM) is the verified domain both for receiving and for sending.
- The receipt rule stores each message under ``inbound/`` with spam/virus scanning and TLS required.
- The bucket is encrypted (SSE-S3), private, TLS-only, and forgets raw mail after ``RAW_MAIL_DAYS``:
  it is a transit buffer holding PII, not an archive (the conversation is kept in PostgreSQL).

Not expressible in CloudFormation: making this rule set the account's *active* one
(``aws ses set-active-receipt-rule-set``), and the DNS records (DKIM CNAMEs, MX); the stack outputs
what to put in DNS and the README's Deploy section says what to run.
"""

from collections.abc import Sequence

from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_ses as ses
from aws_cdk import aws_ses_actions as ses_actions
from aws_cdk import aws_sqs as sqs
from cdk_nag import NagSuppressions
from constructs import Construct

from infra.leadcrm_constructs.ses_grants import grant_send_email

INBOUND_PREFIX = "inbound/"
RAW_MAIL_DAYS = 30
# construct id of aws-cdk-lib's singleton handler behind Bucket.add_event_notification
NOTIFICATIONS_HANDLER_ID = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"


class InboundEmail(Construct):
    """SES identity and receipt rule set, the raw-mail bucket and its notification to the ingestion queue."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        domain: str,
        queue: sqs.IQueue,
        readers: Sequence[lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)

        self.identity = ses.EmailIdentity(self, "Identity", identity=ses.Identity.domain(domain))

        self.bucket = s3.Bucket(
            self,
            "RawMail",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-raw-mail",
                    prefix=INBOUND_PREFIX,
                    expiration=Duration.days(RAW_MAIL_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            # Raw mail is PII in transit: deleting the stack must not leave it behind unnoticed, so the
            # bucket is retained (and expires its objects on its own) rather than emptied by a custom resource.
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.rule_set = ses.ReceiptRuleSet(
            self,
            "RuleSet",
            rules=[
                ses.ReceiptRuleOptions(
                    recipients=[domain],
                    # The S3 action also adds the bucket policy statement that lets ses.amazonaws.com put
                    # objects under inbound/, conditioned on aws:SourceAccount (confused deputy).
                    actions=[ses_actions.S3(bucket=self.bucket, object_key_prefix=INBOUND_PREFIX)],
                    scan_enabled=True,
                    tls_policy=ses.TlsPolicy.REQUIRE,
                    enabled=True,
                )
            ],
        )

        self.bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED,
            s3n.SqsDestination(queue),
            s3.NotificationKeyFilter(prefix=INBOUND_PREFIX),
        )

        # add_event_notification manages the configuration through CDK's singleton custom resource
        # (S3 notifications are a bucket property CloudFormation cannot set on a bucket it did not
        # create with them; CDK's handler merges, keeping notifications added outside the stack).
        notifications_handler = Stack.of(self).node.try_find_child(NOTIFICATIONS_HANDLER_ID)
        if notifications_handler is not None:
            NagSuppressions.add_resource_suppressions(
                notifications_handler,
                [
                    {
                        "id": "AwsSolutions-IAM4",
                        "reason": "CDK's bucket-notifications custom resource handler only writes its own logs "
                        "with AWSLambdaBasicExecutionRole, the AWS-maintained minimum for a Lambda function.",
                        "applies_to": [
                            "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
                        ],
                    },
                    {
                        "id": "AwsSolutions-IAM5",
                        "reason": "CDK's bucket-notifications handler is a stack-wide singleton granted "
                        "s3:PutBucketNotification on '*' by aws-cdk-lib; it runs only during deploys, "
                        "on CloudFormation's behalf, and the action only configures notifications.",
                        "applies_to": ["Resource::*"],
                    },
                ],
                apply_to_children=True,
            )

        for reader in readers:
            # GetObject on the inbound prefix only: no listing, no writes, no deletes (the lifecycle expires).
            reader.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(f"{INBOUND_PREFIX}*")]
                )
            )
            NagSuppressions.add_resource_suppressions(
                reader.role,  # type: ignore[arg-type]
                [
                    {
                        "id": "AwsSolutions-IAM5",
                        "reason": "The ingestion function reads the raw message named in each S3 event; keys are "
                        "SES message ids under inbound/, unknown in advance, so the grant is the prefix.",
                        "applies_to": [{"regex": "/^Resource::<.*RawMail[0-9A-F]{8}\\.Arn>\\/inbound\\/\\*$/"}],
                    }
                ],
                apply_to_children=True,
            )

        NagSuppressions.add_resource_suppressions(
            self.bucket,
            [
                {
                    "id": "AwsSolutions-S1",
                    "reason": "Objects are written only by SES for this account and read only by the ingestion "
                    "function's role; both are recorded by CloudTrail. A second bucket for server access logs of "
                    "mail that expires in 30 days would add cost and another copy of who-mailed-whom metadata.",
                }
            ],
        )

        CfnOutput(self, "InboundMx", value=f"10 inbound-smtp.{Aws.REGION}.amazonaws.com", description=f"MX of {domain}")
        for index, (name, value) in enumerate(
            [
                (self.identity.dkim_dns_token_name1, self.identity.dkim_dns_token_value1),
                (self.identity.dkim_dns_token_name2, self.identity.dkim_dns_token_value2),
                (self.identity.dkim_dns_token_name3, self.identity.dkim_dns_token_value3),
            ],
            start=1,
        ):
            CfnOutput(self, f"DkimCname{index}", value=f"{name} CNAME {value}", description=f"DKIM record of {domain}")
        CfnOutput(self, "ReceiptRuleSetName", value=self.rule_set.receipt_rule_set_name)


# -- outbound: the configuration set every send names, and what SES tells us about each mail ---------------

# What SES publishes for each mail (EmailSendingEvent): Send proves SES took it (the queued sweep's evidence);
# the other five are what became of it.
SES_EVENT_TYPES = (
    ses.EmailSendingEvent.SEND,
    ses.EmailSendingEvent.DELIVERY,
    ses.EmailSendingEvent.BOUNCE,
    ses.EmailSendingEvent.COMPLAINT,
    ses.EmailSendingEvent.REJECT,
    ses.EmailSendingEvent.DELIVERY_DELAY,
)
# Their EventBridge detail-types (leadcrm.conversations.rules.delivery.DETAIL_TYPES, which consumes them).
SES_DETAIL_TYPES = (
    "Email Sent",
    "Email Delivered",
    "Email Bounced",
    "Email Complaint Received",
    "Email Rejected",
    "Email Delivery Delayed",
)
SES_EVENT_SOURCE = "aws.ses"
SENDER_REASON = (
    "ses:SendEmail on the SES identities of this account and region: the sending identity (MAIL_FROM) is chosen "
    "per deployment; the configuration set is this stack's one; no other SES action is granted."
)


class EmailSending(Construct):
    """The SES configuration set every send names, its event destination and the route of its events.

        send (SES_CONFIGURATION_SET) ──▶ SES ──event destination──▶ default EventBridge bus
            ──rule (source aws.ses, this set's tag)──▶ task_lifecycle queue ──▶ conversations.delivery

    - Every function in ``senders`` may call ses:SendEmail on the account's identities and this set only, and
      gets ``SES_CONFIGURATION_SET``: a send without it would publish no event.
    - SES publishes to the default bus only; the rule there matches SES's sending events of this set (the
      ``ses:configuration-set`` tag SES puts on each), so other sets of the account never reach us. Its target
      is the task_lifecycle queue, whose policy admits EventBridge for this rule only (CDK's SqsQueue target
      conditions it on the rule's ARN); undeliverable events land in that queue's DLQ.
    - The set keeps SES's reputation metrics (bounce and complaint rates per set) and suppresses, account
      level, addresses that bounced or complained: a send to one is answered by a Bounce event
      (``OnAccountSuppressionList``), which the consumer treats as any other.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        senders: Sequence[lambda_.Function],
        events_queue: sqs.IQueue,
        events_dead_letter_queue: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.configuration_set = ses.ConfigurationSet(
            self,
            "ConfigurationSet",
            reputation_metrics=True,
            sending_enabled=True,
            suppression_reasons=ses.SuppressionReasons.BOUNCES_AND_COMPLAINTS,
        )
        default_bus = events.EventBus.from_event_bus_name(self, "DefaultBus", "default")
        self.event_destination = self.configuration_set.add_event_destination(
            "ToEventBridge",
            destination=ses.EventDestination.event_bus(default_bus),
            events=list(SES_EVENT_TYPES),
        )
        self.rule = events.Rule(
            self,
            "ToTaskLifecycle",
            event_bus=default_bus,
            description="SES sending events of LeadCRM's configuration set to the task-lifecycle queue",
            event_pattern=events.EventPattern(
                source=[SES_EVENT_SOURCE],
                detail_type=list(SES_DETAIL_TYPES),
                detail={"mail": {"tags": {"ses:configuration-set": [self.configuration_set.configuration_set_name]}}},
            ),
            targets=[targets.SqsQueue(events_queue, dead_letter_queue=events_dead_letter_queue)],
        )
        stack = Stack.of(self)
        configuration_set_arn = stack.format_arn(
            service="ses", resource="configuration-set", resource_name=self.configuration_set.configuration_set_name
        )
        for sender in senders:
            grant_send_email(sender, SENDER_REASON, configuration_set_arn=configuration_set_arn)
            sender.add_environment("SES_CONFIGURATION_SET", self.configuration_set.configuration_set_name)
