"""HTTP API: JWT authorizer from context, authorized and public routes, CORS, stage settings."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

AUTHENTICATED_ROUTES = [f"{method} /organizations/{{proxy+}}" for method in ("GET", "POST", "PUT", "PATCH", "DELETE")]
PUBLIC_ROUTES = [
    "POST /leads/organization/{orgId}",
    "GET /openapi.json",
    "GET /public/ticket-surveys/{token}",
    "POST /public/ticket-surveys/{token}",
    # bulk mail's unsubscribe page and its one-click POST (a signed token, no account)
    "GET /unsubscribe/{token}",
    "POST /unsubscribe/{token}",
]


def _routes(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        resource["Properties"]["RouteKey"]: resource["Properties"]
        for resource in resources.values()
        if resource["Type"] == "AWS::ApiGatewayV2::Route"
    }


def test_jwt_authorizer_uses_the_context_issuer_and_audience(template: Template, stack: Any) -> None:
    issuer = stack.node.try_get_context("jwtIssuer")
    audience = stack.node.try_get_context("jwtAudience")
    assert issuer and audience
    template.resource_count_is("AWS::ApiGatewayV2::Authorizer", 1)
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Authorizer",
        {
            "AuthorizerType": "JWT",
            "IdentitySource": ["$request.header.Authorization"],
            "JwtConfiguration": {"Issuer": issuer, "Audience": [audience]},
        },
    )


def test_routes_are_exactly_the_expected_ones(resources: dict[str, Any]) -> None:
    assert sorted(_routes(resources)) == sorted(AUTHENTICATED_ROUTES + PUBLIC_ROUTES)


@pytest.mark.parametrize("route_key", AUTHENTICATED_ROUTES)
def test_organization_routes_require_the_jwt(resources: dict[str, Any], route_key: str) -> None:
    (authorizer_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::ApiGatewayV2::Authorizer"]
    route = _routes(resources)[route_key]
    assert route["AuthorizationType"] == "JWT"
    assert route["AuthorizerId"] == {"Ref": authorizer_id}


@pytest.mark.parametrize("route_key", PUBLIC_ROUTES)
def test_public_routes_have_no_authorizer(resources: dict[str, Any], route_key: str) -> None:
    route = _routes(resources)[route_key]
    assert route["AuthorizationType"] == "NONE"
    assert "AuthorizerId" not in route


def test_no_any_route_swallows_cors_preflight(resources: dict[str, Any]) -> None:
    assert not [key for key in _routes(resources) if key.startswith(("ANY ", "OPTIONS "))]


def test_all_routes_reach_the_api_function(resources: dict[str, Any], function_ids: dict[str, str]) -> None:
    integrations = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Integration"]
    assert len(integrations) == 1
    assert integrations[0]["IntegrationUri"] == {"Fn::GetAtt": [function_ids["api"], "Arn"]}
    assert integrations[0]["PayloadFormatVersion"] == "2.0"


def test_cors_allows_the_dashboard_origin(template: Template, stack: Any) -> None:
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Api",
        {
            "ProtocolType": "HTTP",
            "CorsConfiguration": Match.object_like(
                {
                    "AllowOrigins": [stack.node.try_get_context("dashboardOrigin")],
                    "AllowHeaders": Match.array_with(["authorization", "content-type"]),
                }
            ),
        },
    )


def test_default_stage_is_throttled_and_access_logged(template: Template) -> None:
    template.resource_count_is("AWS::ApiGatewayV2::Stage", 1)
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "$default",
            "AutoDeploy": True,
            "DefaultRouteSettings": {"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 100},
            "AccessLogSettings": {
                "DestinationArn": {"Fn::GetAtt": [Match.string_like_regexp("^ApiAccessLogs"), "Arn"]},
                # JSON lines keyed by request id, and no caller IP in the logs (no PII)
                "Format": Match.string_like_regexp(r'^\{"requestId":"\$context\.requestId"'),
            },
        },
    )
    stage = next(r for r in template.to_json()["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Stage")
    assert "sourceIp" not in stage["Properties"]["AccessLogSettings"]["Format"]


def test_the_public_capture_route_is_throttled_below_the_stage(resources: dict[str, Any]) -> None:
    (stage,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    capture = stage["RouteSettings"]["POST /leads/organization/{orgId}"]
    assert capture["ThrottlingRateLimit"] < stage["DefaultRouteSettings"]["ThrottlingRateLimit"]
    assert capture["ThrottlingBurstLimit"] < stage["DefaultRouteSettings"]["ThrottlingBurstLimit"]
