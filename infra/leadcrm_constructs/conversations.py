"""Conversations: the key that signs reply and unsubscribe addresses, and what the functions need to mail.

- A Secrets Manager secret holds the HMAC key (generated at deploy: `{"key": "…"}`). The API (signs the
  Reply-To of 1:1 mail), ingestion (verifies replies) and task_lifecycle (signs bulk mail) read it;
  `leadcrm.platform.mail_keys` caches it for five minutes. Rotation is by hand, without breaking replies
  to older mail: put `{"keys": ["<new>", "<old>"]}` (the first signs, all verify), drop the old one later.
- The API sends 1:1 conversation mail through SES v2 SendEmail from MAIL_FROM, like the digest (its grant
  and configuration set: ``EmailSending``).
- Bulk mail links to the public unsubscribe route, so task_lifecycle learns the API's URL.
"""

from collections.abc import Sequence

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagSuppressions
from constructs import Construct


class Conversations(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        inbound_domain: str,
        mail_from: str,
        api: lambda_.Function,
        readers: Sequence[lambda_.Function],
        bulk_sender: lambda_.Function,
        public_api_url: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.signing_key = secretsmanager.Secret(
            self,
            "EmailSigningKey",
            description="HMAC key of LeadCRM's signed reply and unsubscribe addresses",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template="{}", generate_string_key="key", exclude_punctuation=True, password_length=48
            ),
        )
        NagSuppressions.add_resource_suppressions(
            self.signing_key,
            [
                {
                    "id": "AwsSolutions-SMG4",
                    "reason": "Rotated by hand with an overlap (the secret lists keys: the first signs, all "
                    "verify), so replies to mail signed with the old key keep working; an automatic "
                    "single-key rotation would orphan every thread's Reply-To.",
                }
            ],
        )
        for function in dict.fromkeys([*readers, api, bulk_sender]):
            self.signing_key.grant_read(function)
            function.add_environment("EMAIL_SIGNING_SECRET_ARN", self.signing_key.secret_arn)
            function.add_environment("INBOUND_EMAIL_DOMAIN", inbound_domain)
        api.add_environment("MAIL_FROM", mail_from)
        bulk_sender.add_environment("PUBLIC_API_URL", public_api_url)
