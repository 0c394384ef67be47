"""Deployment settings read from CDK context (``cdk.json`` defaults, ``-c key=value`` overrides)."""

from dataclasses import dataclass

from constructs import Construct

from infra.leadcrm_constructs.http_api import ApiSettings


@dataclass(frozen=True)
class LeadCrmConfig:
    api: ApiSettings
    database_deletion_protection: bool
    mail_from: str  # the sender of LeadCRM's own mail (digests); a verified SES identity
    inbound_domain: str  # the domain SES receives mail for (its MX points at SES inbound)

    @classmethod
    def from_context(cls, scope: Construct) -> "LeadCrmConfig":
        return cls(
            api=ApiSettings(
                jwt_issuer=_required(scope, "jwtIssuer"),
                jwt_audience=_required(scope, "jwtAudience"),
                dashboard_origin=_required(scope, "dashboardOrigin"),
            ),
            database_deletion_protection=_flag(scope, "databaseDeletionProtection", default=True),
            mail_from=_required(scope, "mailFrom"),
            inbound_domain=_required(scope, "inboundDomain"),
        )


def _required(scope: Construct, key: str) -> str:
    value = scope.node.try_get_context(key)
    if not value:
        raise ValueError(f"CDK context value {key!r} is required (set it in cdk.json or with -c {key}=...)")
    return str(value)


def _flag(scope: Construct, key: str, *, default: bool) -> bool:
    value = scope.node.try_get_context(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    # -c on the command line always passes strings
    return str(value).strip().lower() in {"1", "true", "yes"}
