"""The pseudonym key: the master key pseudonymized erasure hashes emails and phones with (per organization,
see leadcrm.leads.rules.pseudonyms), and dedup recognizes a pseudonymized person with.

Every function that dedups leads reads it (api, ingestion, task_lifecycle: each can create leads). It is
generated once and never rotated: a new key would make every stored token unrecognizable.
"""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagSuppressions
from constructs import Construct


class PseudonymKey(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, readers: list[lambda_.Function]) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description="LeadCRM pseudonym master key (keyed hashes of erased people's email and phone)",
            generate_secret_string=secretsmanager.SecretStringGenerator(exclude_punctuation=True, password_length=64),
            removal_policy=RemovalPolicy.RETAIN,
        )
        for reader in readers:
            self.secret.grant_read(reader)
            reader.add_environment("PSEUDONYM_SECRET_ARN", self.secret.secret_arn)
        NagSuppressions.add_resource_suppressions(
            self.secret,
            [
                {
                    "id": "AwsSolutions-SMG4",
                    "reason": "Rotating the pseudonym key would make every stored token unrecognizable: dedup "
                    "suppression of erased people depends on the key staying the same.",
                }
            ],
        )
