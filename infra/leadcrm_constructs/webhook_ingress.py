"""Webhook ingress: the public function URL Meta calls, the secret the receiver verifies with, and the bucket
that carries a body too large for a queue message.

Meta (Lead Ads ``leadgen`` and WhatsApp) calls one URL: a ``GET`` to verify the subscription with our
``verifyToken`` and ``POST``s signed with HMAC-SHA256 of the body under the app's ``appSecret``. The
URL has no AWS auth (Meta cannot sign AWS requests); the signature check in the function is the auth,
and the function's reserved concurrency bounds what unauthenticated traffic can cost.

A signed body whose queue message would pass SQS's 256 KiB is stored under ``webhooks/`` of the webhook
bodies bucket and queued by reference (a claim check, leadcrm.platform.adapters.webhook_bodies): the
receiver may only put objects there, the consumers (graph_fetch for leadgen, ingestion for WhatsApp) only
get them. Bodies are PII: encrypted, private, TLS-only, expired with the queues' retention.
"""

import json
from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagSuppressions
from constructs import Construct

# Meta issues the app secret; until an operator stores the real one, every signature check fails closed.
APP_SECRET_PLACEHOLDER = "set-me-to-the-meta-app-secret"
BODIES_PREFIX = "webhooks/"
# A stored body outlives every message that can still name it: the queues and DLQs keep messages 14 days.
BODY_DAYS = 15


class WebhookIngress(Construct):
    """Function URL (auth NONE) for the webhooks function and its Meta secret."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        receiver: lambda_.Function,
        body_readers: Sequence[lambda_.Function] = (),
    ) -> None:
        super().__init__(scope, construct_id)

        # {"appSecret": <placeholder until set>, "verifyToken": <random, ours, entered in the Meta console>}
        self.meta_secret = secretsmanager.Secret(
            self,
            "MetaSecret",
            description="Meta app secret (webhook signatures) and webhook verify token for LeadCRM",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({"appSecret": APP_SECRET_PLACEHOLDER}),
                generate_string_key="verifyToken",
                exclude_punctuation=True,
                password_length=40,
            ),
        )
        self.meta_secret.grant_read(receiver)
        receiver.add_environment("META_SECRET_ARN", self.meta_secret.secret_arn)

        self.bodies_bucket = s3.Bucket(
            self,
            "WebhookBodies",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-webhook-bodies", prefix=BODIES_PREFIX, expiration=Duration.days(BODY_DAYS))
            ],
            # Webhook bodies are PII that expire on their own: retained on stack deletion rather than
            # emptied by a custom resource.
            removal_policy=RemovalPolicy.RETAIN,
        )
        bodies = self.bodies_bucket.arn_for_objects(f"{BODIES_PREFIX}*")
        receiver.add_to_role_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[bodies]))
        for function in (receiver, *body_readers):
            function.add_environment("WEBHOOK_BODIES_BUCKET", self.bodies_bucket.bucket_name)
        for reader in body_readers:
            reader.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[bodies]))
        for function in (receiver, *body_readers):
            NagSuppressions.add_resource_suppressions(
                function.role,  # type: ignore[arg-type]
                [
                    {
                        "id": "AwsSolutions-IAM5",
                        "reason": "A stored webhook body is named per delivery under webhooks/, at run time: "
                        "the grant is that prefix of the webhook bodies bucket (Put for the receiver, Get for "
                        "its consumers), nothing else of S3.",
                        "applies_to": [{"regex": "/^Resource::<.*WebhookBodies[0-9A-F]{8}\\.Arn>\\/webhooks\\/\\*$/"}],
                    }
                ],
                apply_to_children=True,
            )
        NagSuppressions.add_resource_suppressions(
            self.bodies_bucket,
            [
                {
                    "id": "AwsSolutions-S1",
                    "reason": "Objects are written only by the webhook receiver and read only by its consumers, "
                    "both recorded by CloudTrail; access logs of bodies that expire with the queues would add "
                    "cost and another copy of their metadata.",
                }
            ],
        )

        self.function_url = lambda_.FunctionUrl(
            self, "FunctionUrl", function=receiver, auth_type=lambda_.FunctionUrlAuthType.NONE
        )

        NagSuppressions.add_resource_suppressions(
            self.meta_secret,
            [
                {
                    "id": "AwsSolutions-SMG4",
                    "reason": "The app secret is issued by Meta and can only be rotated in the Meta app "
                    "dashboard (then stored here by an operator); no rotation function can change it.",
                }
            ],
        )

    @property
    def url(self) -> str:
        return self.function_url.url
