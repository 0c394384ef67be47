"""Webhook ingress: the public function URL Meta calls, and the secret the receiver verifies with.

Meta (Lead Ads ``leadgen`` and WhatsApp) calls one URL: a ``GET`` to verify the subscription with our
``verifyToken`` and ``POST``s signed with HMAC-SHA256 of the body under the app's ``appSecret``. The
URL has no AWS auth (Meta cannot sign AWS requests); the signature check in the function is the auth,
and the function's reserved concurrency bounds what unauthenticated traffic can cost.
"""

import json

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagSuppressions
from constructs import Construct

# Meta issues the app secret; until an operator stores the real one, every signature check fails closed.
APP_SECRET_PLACEHOLDER = "set-me-to-the-meta-app-secret"


class WebhookIngress(Construct):
    """Function URL (auth NONE) for the webhooks function and its Meta secret."""

    def __init__(self, scope: Construct, construct_id: str, *, receiver: lambda_.Function) -> None:
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
