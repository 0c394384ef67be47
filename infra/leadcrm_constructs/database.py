"""Database: Aurora PostgreSQL Serverless v2 behind RDS Proxy, reached with IAM authentication.

Functions never hold a password: they sign an IAM auth token for ``DB_USER`` and connect over TLS to
the proxy, which pools connections to the cluster with the generated master secret. The secret's ARN
is still handed to the database functions (``DB_SECRET_ARN``) for the jobs that need the password
itself, such as running migrations.
"""

from collections.abc import Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from cdk_nag import NagSuppressions
from constructs import Construct

from infra.leadcrm_constructs.network import POSTGRES_PORT, Network

# 16.6 and the older 16.x minors can no longer create clusters (cfn-lint W3690 tracks the deprecations);
# 16.13 is the newest 16.x that aws-cdk-lib 2.275 names. Auto minor version upgrade stays on (RDS default).
ENGINE_VERSION = rds.AuroraPostgresEngineVersion.VER_16_13
DATABASE_NAME = "leadcrm"
MASTER_USERNAME = "leadcrm_admin"


class Database(Construct):
    """Aurora PostgreSQL cluster, its generated secret (rotated), RDS Proxy and the client wiring."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        network: Network,
        clients: Sequence[lambda_.Function],
        deletion_protection: bool = True,
        min_capacity: float = 0.5,
        max_capacity: float = 4,
    ) -> None:
        super().__init__(scope, construct_id)
        self.max_capacity = max_capacity  # ACUs; Observability alarms as the writer nears it

        # Aurora exports to /aws/rds/cluster/<identifier>/postgresql. Creating that group here, with a
        # retention, needs the identifier at synth time; the alternative (cloudwatch_logs_retention)
        # deploys a log-retention Lambda function just to set it.
        cluster_identifier = f"{Stack.of(self).stack_name}-{construct_id}".lower()
        postgresql_logs = logs.LogGroup(
            self,
            "PostgresqlLogs",
            log_group_name=f"/aws/rds/cluster/{cluster_identifier}/postgresql",
            retention=logs.RetentionDays.ONE_MONTH,
            # a retained group with this fixed name would make the next deploy of the stack fail
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            cluster_identifier=cluster_identifier,
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=ENGINE_VERSION),
            credentials=rds.Credentials.from_generated_secret(MASTER_USERNAME),
            default_database_name=DATABASE_NAME,
            writer=rds.ClusterInstance.serverless_v2("Writer", publicly_accessible=False),
            serverless_v2_min_capacity=min_capacity,
            serverless_v2_max_capacity=max_capacity,
            vpc=network.vpc,
            vpc_subnets=network.isolated_subnets,
            security_groups=[network.database_security_group],
            port=POSTGRES_PORT,
            storage_encrypted=True,
            iam_authentication=True,
            deletion_protection=deletion_protection,
            removal_policy=RemovalPolicy.SNAPSHOT,
            backup=rds.BackupProps(retention=Duration.days(7)),
            cloudwatch_logs_exports=["postgresql"],
        )
        self.cluster.node.add_dependency(postgresql_logs)
        # generated credentials always produce a secret; narrow the Optional for readers and type checkers
        assert self.cluster.secret is not None
        self.secret = self.cluster.secret
        # The rotation function (a Secrets Manager application) runs in the isolated subnets and reaches
        # Secrets Manager at its regional hostname, which private DNS resolves to the VPC endpoint.
        self.cluster.add_rotation_single_user(
            automatically_after=Duration.days(30),
            vpc_subnets=network.isolated_subnets,
            security_group=network.rotation_security_group,
        )

        self.proxy = rds.DatabaseProxy(
            self,
            "Proxy",
            proxy_target=rds.ProxyTarget.from_cluster(self.cluster),
            secrets=[self.secret],
            vpc=network.vpc,
            vpc_subnets=network.isolated_subnets,
            security_groups=[network.proxy_security_group],
            iam_auth=True,
            require_tls=True,
        )

        for function in clients:
            self.grant_client(function)

        NagSuppressions.add_resource_suppressions(
            self.cluster,
            [
                {
                    "id": "AwsSolutions-RDS11",
                    "reason": "Clients only ever reach the cluster through RDS Proxy, which always listens on 5432 "
                    "for PostgreSQL; the cluster sits in isolated subnets and its security group admits the "
                    "proxy alone, so a non-default port would add no protection.",
                },
            ],
            apply_to_children=True,
        )

    def grant_client(self, function: lambda_.Function) -> None:
        """Let ``function`` connect through the proxy as the database user, and tell it how."""
        self.proxy.grant_connect(function, MASTER_USERNAME)
        self.secret.grant_read(function)
        for name, value in {
            "DB_AUTH_MODE": "iam",
            "DB_HOST": self.proxy.endpoint,
            "DB_PORT": str(POSTGRES_PORT),
            "DB_NAME": DATABASE_NAME,
            "DB_USER": MASTER_USERNAME,
            "DB_SECRET_ARN": self.secret.secret_arn,
        }.items():
            function.add_environment(name, value)
