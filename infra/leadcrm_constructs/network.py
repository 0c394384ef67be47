"""Network: an isolated VPC that reaches AWS only through VPC endpoints.

Nothing in the VPC talks to the internet: the database functions need Aurora (through RDS Proxy),
Secrets Manager, SQS, EventBridge and S3, and each of those has an endpoint here. There is no NAT
gateway to pay for or to leak through. The webhook receiver and graph_fetch (which reads Lead Ads leads
from graph.facebook.com), which touch no database, run outside the VPC.

Traffic rules, on the security groups of this construct:

    lambdas ──5432──▶ proxy ──5432──▶ database ◀──5432── secret rotation
    lambdas, proxy, secret rotation ──443──▶ interface endpoints (Secrets Manager, SQS, EventBridge)

Interface endpoints have private DNS, so the default regional hostnames resolve to them: no client
needs an endpoint-specific URL.
"""

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

POSTGRES_PORT = 5432
HTTPS_PORT = 443


class Network(Construct):
    """VPC (2 AZs, private isolated subnets only), VPC endpoints and the security groups of each tier."""

    def __init__(self, scope: Construct, construct_id: str, *, max_azs: int = 2) -> None:
        super().__init__(scope, construct_id)

        flow_log_group = logs.LogGroup(self, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=max_azs,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24)
            ],
            flow_logs={
                "all": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group))
            },
        )
        self.isolated_subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)

        # The subnets are isolated, so "all outbound" can only reach the VPC endpoints (the S3 gateway
        # endpoint's prefix list is not known at synth time) and the database proxy.
        self.lambda_security_group = ec2.SecurityGroup(
            self,
            "LambdaSecurityGroup",
            vpc=self.vpc,
            description="LeadCRM Lambda functions in the VPC",
            allow_all_outbound=True,
        )
        self.proxy_security_group = ec2.SecurityGroup(
            self,
            "ProxySecurityGroup",
            vpc=self.vpc,
            description="RDS Proxy: PostgreSQL from the functions, to the cluster",
            allow_all_outbound=False,
        )
        self.database_security_group = ec2.SecurityGroup(
            self,
            "DatabaseSecurityGroup",
            vpc=self.vpc,
            description="Aurora PostgreSQL cluster: PostgreSQL from RDS Proxy only",
            allow_all_outbound=False,
        )
        self.rotation_security_group = ec2.SecurityGroup(
            self,
            "RotationSecurityGroup",
            vpc=self.vpc,
            description="Secret rotation function: to the cluster and Secrets Manager",
            allow_all_outbound=False,
        )
        self.endpoint_security_group = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="Interface VPC endpoints: HTTPS from the functions, RDS Proxy and secret rotation",
            allow_all_outbound=False,
        )

        postgres = ec2.Port.tcp(POSTGRES_PORT)
        https = ec2.Port.tcp(HTTPS_PORT)
        self.proxy_security_group.connections.allow_from(self.lambda_security_group, postgres, "Functions to RDS Proxy")
        self.endpoint_security_group.connections.allow_from(self.lambda_security_group, https, "Functions to AWS APIs")
        self.endpoint_security_group.connections.allow_from(
            self.proxy_security_group, https, "RDS Proxy to Secrets Manager"
        )
        self.endpoint_security_group.connections.allow_from(
            self.rotation_security_group, https, "Secret rotation to Secrets Manager"
        )
        # Proxy and rotation to the cluster: CDK adds those rules (on the cluster's port) when Database
        # puts the proxy in front of the cluster and hands the rotation this group; adding them here
        # too would create duplicate rules, which EC2 rejects.

        self.s3_endpoint = self.vpc.add_gateway_endpoint(
            "S3", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[self.isolated_subnets]
        )
        self.secrets_manager_endpoint = self._interface_endpoint(
            "SecretsManager", ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER
        )
        self.sqs_endpoint = self._interface_endpoint("Sqs", ec2.InterfaceVpcEndpointAwsService.SQS)
        self.events_endpoint = self._interface_endpoint("Events", ec2.InterfaceVpcEndpointAwsService.EVENTBRIDGE)
        # task_lifecycle sends the staff digest through the SES API from the isolated subnets.
        self.email_endpoint = self._interface_endpoint("Email", ec2.InterfaceVpcEndpointAwsService.EMAIL)

    def _interface_endpoint(
        self, endpoint_id: str, service: ec2.InterfaceVpcEndpointAwsService
    ) -> ec2.InterfaceVpcEndpoint:
        return self.vpc.add_interface_endpoint(
            endpoint_id,
            service=service,
            subnets=self.isolated_subnets,
            private_dns_enabled=True,
            security_groups=[self.endpoint_security_group],
            open=False,
        )
