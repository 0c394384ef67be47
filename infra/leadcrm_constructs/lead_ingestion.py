"""Lead ingestion: where integration tokens live and where CSV imports are uploaded.

- Integration tokens: one Secrets Manager secret per connected account under ``leadcrm/integrations/``,
  named ``<provider>/<account id>`` (the API creates, replaces and deletes them on connect/disconnect). Only
  graph_fetch reads them, and only Meta pages' (``meta_lead_ads/*``): it calls Graph from outside the VPC.
  The ingestion function never calls Graph and reads no token. The grants are scoped to those prefixes,
  so no function can touch the database or Meta app secrets through them.
- CSV imports: the dashboard PUTs the file to a presigned URL of the imports bucket (the API signs it, so
  its role holds PutObject on ``imports/``); the ingestion function streams it back (GetObject). Files are
  PII in transit: encrypted, private, TLS-only, expired after ``IMPORT_FILE_DAYS``.
- The API queues import jobs, and the ingestion function queues a job's continuation when its time runs
  short, on the ingestion queue (``Messaging`` grants the sends).
"""

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

SECRET_PREFIX = "leadcrm/integrations/"
META_PAGE_SECRETS = f"{SECRET_PREFIX}meta_lead_ads/"
# A WhatsApp number's token: graph_fetch sends messages and reads templates with it.
WHATSAPP_NUMBER_SECRETS = f"{SECRET_PREFIX}whatsapp_cloud/"
IMPORTS_PREFIX = "imports/"
IMPORT_FILE_DAYS = 7


class LeadIngestion(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api: lambda_.Function,
        ingestion: lambda_.Function,
        graph_fetch: lambda_.Function,
        dashboard_origin: str,
    ) -> None:
        super().__init__(scope, construct_id)

        secret_arns = f"arn:{Aws.PARTITION}:secretsmanager:{Aws.REGION}:{Aws.ACCOUNT_ID}:secret:"
        secrets = f"{secret_arns}{SECRET_PREFIX}*"
        api.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "secretsmanager:CreateSecret",
                    "secretsmanager:PutSecretValue",
                    "secretsmanager:DeleteSecret",
                    # a connect right after a disconnect finds the name still scheduled for deletion
                    "secretsmanager:RestoreSecret",
                ],
                resources=[secrets],
            )
        )
        graph_fetch.add_to_role_policy(
            iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue"],
                resources=[f"{secret_arns}{META_PAGE_SECRETS}*", f"{secret_arns}{WHATSAPP_NUMBER_SECRETS}*"],
            )
        )
        graph_fetch.add_environment("INTEGRATION_SECRET_PREFIX", SECRET_PREFIX)
        NagSuppressions.add_resource_suppressions(
            graph_fetch.role,  # type: ignore[arg-type]
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "A page's (a number's) token secret is named after the page id (phone number id), "
                    "known only when a lead arrives (a message is sent): the read grant is the meta_lead_ads/ and "
                    "whatsapp_cloud/ prefixes of the connection secrets, nothing wider.",
                    "applies_to": [
                        "Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:"
                        f"{META_PAGE_SECRETS}*",
                        "Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:"
                        f"{WHATSAPP_NUMBER_SECRETS}*",
                    ],
                }
            ],
            apply_to_children=True,
        )

        self.imports_bucket = s3.Bucket(
            self,
            "Imports",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            cors=[
                s3.CorsRule(
                    allowed_methods=[s3.HttpMethods.PUT],
                    allowed_origins=[dashboard_origin],
                    allowed_headers=["content-type"],
                    max_age=600,
                )
            ],
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-import-files",
                    prefix=IMPORTS_PREFIX,
                    expiration=Duration.days(IMPORT_FILE_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            # Uploaded lead lists are PII: retained on stack deletion (they expire on their own) rather
            # than emptied by a custom resource.
            removal_policy=RemovalPolicy.RETAIN,
        )
        objects = self.imports_bucket.arn_for_objects(f"{IMPORTS_PREFIX}*")
        # PutObject: the API's presigned PUT is made with its role; GetObject: HeadObject before a start.
        api.add_to_role_policy(iam.PolicyStatement(actions=["s3:PutObject", "s3:GetObject"], resources=[objects]))
        ingestion.add_to_role_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=[objects]))

        api.add_environment("INTEGRATION_SECRET_PREFIX", SECRET_PREFIX)
        for function in (api, ingestion):
            function.add_environment("LEAD_IMPORTS_BUCKET", self.imports_bucket.bucket_name)
            NagSuppressions.add_resource_suppressions(
                function.role,  # type: ignore[arg-type]
                [
                    {
                        "id": "AwsSolutions-IAM5",
                        "reason": "Connection secrets are named per account under leadcrm/integrations/ and "
                        "import files per job under imports/: the names are made at run time, so the grants "
                        "are those prefixes (and nothing else of Secrets Manager or S3).",
                        "applies_to": [
                            "Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:"
                            f"{SECRET_PREFIX}*",
                            {"regex": "/^Resource::<.*Imports[0-9A-F]{8}\\.Arn>\\/imports\\/\\*$/"},
                        ],
                    }
                ],
                apply_to_children=True,
            )

        NagSuppressions.add_resource_suppressions(
            self.imports_bucket,
            [
                {
                    "id": "AwsSolutions-S1",
                    "reason": "Objects are written through presigned URLs the API signs and read only by the "
                    "ingestion function; both are recorded by CloudTrail. Access logs of lead lists that expire "
                    "in 7 days would add cost and another copy of their metadata.",
                }
            ],
        )
