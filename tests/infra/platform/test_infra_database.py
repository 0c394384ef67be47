"""Aurora, RDS Proxy and the isolated network around them."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match, Template


def test_aurora_postgresql_16_serverless_v2_encrypted_with_iam_auth(template: Template) -> None:
    template.resource_count_is("AWS::RDS::DBCluster", 1)
    template.has_resource_properties(
        "AWS::RDS::DBCluster",
        {
            "Engine": "aurora-postgresql",
            "EngineVersion": Match.string_like_regexp(r"^16\."),
            "DatabaseName": "leadcrm",
            "MasterUsername": "leadcrm_admin",
            "StorageEncrypted": True,
            "EnableIAMDatabaseAuthentication": True,
            "ServerlessV2ScalingConfiguration": Match.object_like({"MinCapacity": Match.any_value()}),
            "EnableCloudwatchLogsExports": ["postgresql"],
        },
    )
    template.has_resource_properties(
        "AWS::RDS::DBInstance", {"DBInstanceClass": "db.serverless", "PubliclyAccessible": False}
    )


def test_cluster_is_snapshotted_on_delete(template: Template) -> None:
    template.has_resource("AWS::RDS::DBCluster", {"DeletionPolicy": "Snapshot", "UpdateReplacePolicy": "Snapshot"})


def test_master_secret_is_generated_and_rotated(template: Template) -> None:
    template.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {"GenerateSecretString": Match.object_like({"SecretStringTemplate": '{"username":"leadcrm_admin"}'})},
    )
    template.resource_count_is("AWS::SecretsManager::RotationSchedule", 1)


def test_proxy_requires_tls_and_iam(template: Template) -> None:
    template.has_resource_properties(
        "AWS::RDS::DBProxy",
        {"EngineFamily": "POSTGRESQL", "RequireTLS": True, "Auth": [Match.object_like({"IAMAuth": "REQUIRED"})]},
    )


def test_vpc_is_isolated_with_endpoints(resources: dict[str, Any], template: Template) -> None:
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    template.resource_count_is("AWS::EC2::InternetGateway", 0)
    subnets = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::EC2::Subnet"]
    assert len(subnets) == 2
    assert all(subnet["MapPublicIpOnLaunch"] is False for subnet in subnets)
    endpoints = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::EC2::VPCEndpoint"]
    services = {_service_suffix(e["ServiceName"]): e.get("VpcEndpointType", "Gateway") for e in endpoints}
    assert services == {
        "secretsmanager": "Interface",
        "sqs": "Interface",
        "events": "Interface",
        "email": "Interface",
        "s3": "Gateway",
    }
    template.resource_count_is("AWS::EC2::FlowLog", 1)


def test_database_admits_postgres_only_from_the_proxy_and_rotation(resources: dict[str, Any]) -> None:
    (db_group,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::EC2::SecurityGroup" and "Aurora" in r["Properties"]["GroupDescription"]
    ]
    sources = {
        r["Properties"]["SourceSecurityGroupId"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress"
        and r["Properties"]["GroupId"] == {"Fn::GetAtt": [db_group, "GroupId"]}
    }
    assert sorted(source.rstrip("0123456789ABCDEF") for source in sources) == [
        "NetworkProxySecurityGroup",
        "NetworkRotationSecurityGroup",
    ]


def _service_suffix(service_name: Any) -> str:
    """``com.amazonaws.<region>.sqs`` (a Fn::Join in an environment-agnostic stack) -> ``sqs``."""
    if isinstance(service_name, str):
        return service_name.rsplit(".", 1)[-1]
    parts = service_name["Fn::Join"][1]
    return str(parts[-1]).rsplit(".", 1)[-1]
