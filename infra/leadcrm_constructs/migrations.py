"""Migrations: Alembic runs on every deploy that can change the schema, after the database, before traffic.

A CDK trigger (``aws_cdk.triggers``: a custom resource whose provider invokes our function synchronously)
calls the ``migrations`` function. CloudFormation orders it by dependencies:

    database (cluster, proxy, secret) ──▶ trigger: migrations.handler ──▶ api, ingestion, task_lifecycle

so a new schema is in place before the functions that need it are created or updated, and a failed
migration fails the deploy (rolled back: the old code keeps serving the old schema).

The trigger re-runs whenever the migrations function's version changes (``execute_on_handler_change``).
That version covers its code asset, its configuration and its layers (feature flag
``@aws-cdk/aws-lambda:recognizeLayerVersion``), so any change to the core layer re-runs it; to make the
promise explicit, the function's environment also carries ``MIGRATIONS_HASH``, a digest of the
migration scripts. Re-running changes nothing: Alembic applies only what is missing.
"""

import hashlib
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import Duration, Stack, triggers
from aws_cdk import aws_lambda as lambda_
from cdk_nag import NagSuppressions
from constructs import Construct

from infra.leadcrm_constructs._paths import MIGRATIONS_DIR
from infra.leadcrm_constructs.database import Database

TRIGGER_TIMEOUT = Duration.minutes(10)
# construct id of aws-cdk-lib's stack-wide singleton provider behind every triggers.Trigger
TRIGGER_PROVIDER_ID = "AWSCDK.TriggerCustomResourceProviderCustomResourceProvider"


def migrations_hash(directory: Path = MIGRATIONS_DIR) -> str:
    """SHA-256 of the migration scripts (relative path and content), stable across machines."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        if path.suffix == ".pyc":
            continue
        digest.update(path.relative_to(directory).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


class Migrations(Construct):
    """Grants the migrations function database access and runs it through a trigger on deploy."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.Function,
        database: Database,
        before: Sequence[Construct],
    ) -> None:
        super().__init__(scope, construct_id)
        database.grant_client(handler)
        handler.add_environment("MIGRATIONS_HASH", migrations_hash())
        self.trigger = triggers.Trigger(
            self,
            "Trigger",
            handler=handler,
            invocation_type=triggers.InvocationType.REQUEST_RESPONSE,
            timeout=TRIGGER_TIMEOUT,
            execute_after=[database],
            execute_before=list(before),
            execute_on_handler_change=True,
        )
        provider = Stack.of(self).node.try_find_child(TRIGGER_PROVIDER_ID)
        if provider is not None:
            NagSuppressions.add_resource_suppressions(
                provider,
                [
                    {
                        "id": "AwsSolutions-IAM4",
                        "reason": "CDK's trigger provider only writes its own logs with AWSLambdaBasicExecutionRole, "
                        "the AWS-maintained minimum for a Lambda function.",
                        "applies_to": [
                            "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
                        ],
                    },
                    {
                        "id": "AwsSolutions-IAM5",
                        "reason": "CDK's trigger provider may invoke the migrations function only, in any of its "
                        "versions (<arn>:*): each deploy publishes a new version and the trigger invokes that one.",
                    },
                ],
                apply_to_children=True,
            )
