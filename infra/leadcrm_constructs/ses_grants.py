"""One grant for every function that sends mail: SES v2 SendEmail on this account's identities and on the
configuration set every send names (SES authorizes a send against both), nothing else.

Which identity sends (MAIL_FROM) is chosen per deployment, so the grant is every identity of the account and
region; cdk-nag's wildcard finding is suppressed with the reason the caller gives. The configuration set is
one, named exactly.
"""

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagSuppressions


def grant_send_email(function: lambda_.Function, reason: str, *, configuration_set_arn: str) -> None:
    stack = Stack.of(function)
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["ses:SendEmail"],
            resources=[
                stack.format_arn(service="ses", resource="identity", resource_name="*"),
                configuration_set_arn,
            ],
        )
    )
    NagSuppressions.add_resource_suppressions(
        function,
        [
            {
                "id": "AwsSolutions-IAM5",
                "reason": reason,
                "applies_to": [
                    {"regex": "/^Resource::arn:<AWS::Partition>:ses:<AWS::Region>:<AWS::AccountId>:identity/\\*$/"}
                ],
            }
        ],
        apply_to_children=True,
    )
