"""HTTP API: API Gateway (HTTP API) in front of the api function.

- ``/organizations/{proxy+}``: the dashboard's API, behind a JWT authorizer for the configured
  issuer (Cognito, Clerk or any OIDC provider) and audience. The token only says who the caller is;
  the function reads the caller's roles from ``memberships`` on every request.
- ``POST /leads/organization/{orgId}``: public lead capture from web forms, no authorizer.
- ``GET /openapi.json``: the generated OpenAPI document, no authorizer.
- ``GET|POST /public/ticket-surveys/{token}``: a closed ticket's satisfaction survey, no authorizer (the
  random token in the mailed link is the credential; answered once).

The authorized routes list their methods instead of using ``ANY``: an ``ANY`` route with an
authorizer also catches the browser's unauthenticated ``OPTIONS`` preflight and rejects it, while
without an ``OPTIONS`` route API Gateway answers preflights itself from the CORS configuration.
"""

from dataclasses import dataclass

import jsii
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdk_nag import NagSuppressions
from constructs import Construct

AUTHENTICATED_METHODS = [
    apigwv2.HttpMethod.GET,
    apigwv2.HttpMethod.POST,
    apigwv2.HttpMethod.PUT,
    apigwv2.HttpMethod.PATCH,
    apigwv2.HttpMethod.DELETE,
]
CORS_ALLOWED_HEADERS = ["authorization", "content-type", "idempotency-key"]

# Access log fields: enough to trace a request end to end, and no PII (no source IP, no user agent,
# no path: paths carry ids only, but the route key already says which endpoint was hit).
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTime",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
    "errorMessage": "$context.error.message",
}


CAPTURE_PATH = "/leads/organization/{orgId}"
SURVEY_PATH = "/public/ticket-surveys/{token}"


@dataclass(frozen=True)
class ApiSettings:
    """Values that differ per deployment (read from CDK context by the stack)."""

    jwt_issuer: str
    jwt_audience: str
    dashboard_origin: str
    throttling_rate_limit: int = 50
    throttling_burst_limit: int = 100
    # The public capture route is anonymous: API Gateway caps it below the stage (per-IP and per-organization
    # limits are counted by the function itself, in PostgreSQL).
    capture_rate_limit: int = 10
    capture_burst_limit: int = 20


class LeadCrmApi(Construct):
    """HTTP API, JWT authorizer, routes, CORS and the throttled, access-logged default stage."""

    def __init__(
        self, scope: Construct, construct_id: str, *, handler: lambda_.Function, settings: ApiSettings
    ) -> None:
        super().__init__(scope, construct_id)

        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name="leadcrm",
            description="LeadCRM API",
            create_default_stage=False,
            cors_preflight=apigwv2.CorsPreflightOptions(
                allow_origins=[settings.dashboard_origin],
                allow_methods=[apigwv2.CorsHttpMethod.ANY],
                allow_headers=CORS_ALLOWED_HEADERS,
                max_age=Duration.hours(1),
            ),
        )

        access_logs = logs.LogGroup(self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH)
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=settings.throttling_rate_limit, burst_limit=settings.throttling_burst_limit
            ),
            access_log_settings=_AccessLogSettings(
                apigwv2.LogGroupLogDestination(access_logs),
                apigw.AccessLogFormat.custom(_json_log_format(ACCESS_LOG_FORMAT)),
            ),
        )

        stage_resource = self.stage.node.default_child
        stage_resource.route_settings = {  # type: ignore[union-attr]
            f"POST {CAPTURE_PATH}": {
                "ThrottlingRateLimit": settings.capture_rate_limit,
                "ThrottlingBurstLimit": settings.capture_burst_limit,
            }
        }

        self.jwt_authorizer = authorizers.HttpJwtAuthorizer(
            "JwtAuthorizer",
            jwt_issuer=settings.jwt_issuer,
            jwt_audience=[settings.jwt_audience],
            identity_source=["$request.header.Authorization"],
        )
        integration = integrations.HttpLambdaIntegration("Api", handler)

        self.http_api.add_routes(
            path="/organizations/{proxy+}",
            methods=AUTHENTICATED_METHODS,
            integration=integration,
            authorizer=self.jwt_authorizer,
        )
        public_routes = [
            *self.http_api.add_routes(
                path=CAPTURE_PATH,
                methods=[apigwv2.HttpMethod.POST],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            ),
            # Bulk mail's unsubscribe page and its RFC 8058 one-click POST: signed tokens, no account.
            *self.http_api.add_routes(
                path="/unsubscribe/{token}",
                methods=[apigwv2.HttpMethod.GET, apigwv2.HttpMethod.POST],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            ),
            *self.http_api.add_routes(
                path=SURVEY_PATH,
                methods=[apigwv2.HttpMethod.GET, apigwv2.HttpMethod.POST],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            ),
            *self.http_api.add_routes(
                path="/openapi.json",
                methods=[apigwv2.HttpMethod.GET],
                integration=integration,
                authorizer=apigwv2.HttpNoneAuthorizer(),
            ),
        ]
        for route in public_routes:
            NagSuppressions.add_resource_suppressions(
                route,
                [
                    {
                        "id": "AwsSolutions-APIG4",
                        "reason": "Public by design: lead capture from anonymous web forms (answers the same "
                        "body whatever happened, idempotent, stage-throttled), the signed-token unsubscribe "
                        "route of bulk mail, the OpenAPI document, and the ticket survey (its unguessable "
                        "mailed token is the credential; one answer per ticket).",
                    }
                ],
                apply_to_children=True,
            )

    @property
    def url(self) -> str:
        # The stage is created explicitly (to configure throttling and access logs), so HttpApi.url is unset.
        url = self.stage.url
        assert url is not None
        return url


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogSettings:
    """``IAccessLogSettings`` is an interface in aws-cdk-lib (no struct to instantiate from Python)."""

    def __init__(self, destination: apigwv2.IAccessLogDestination, log_format: apigw.AccessLogFormat) -> None:
        self._destination = destination
        self._format = log_format

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw.AccessLogFormat:
        return self._format


def _json_log_format(fields: dict[str, str]) -> str:
    """One JSON object per line; API Gateway substitutes the ``$context`` variables inside the quotes."""
    return "{" + ",".join(f'"{key}":"{value}"' for key, value in fields.items()) + "}"
