"""admin: the operator commands of `make admin` (leadcrm.directory.administration), invoked with IAM.

The database sits in isolated subnets, so an operator never connects to it: the CLI (infra/admin.py, with
`--aws`) invokes this function, and locally runs `run` in-process against the local stack's database.

Event `{"command": "create-organization", "args": {...}, "operator": "<who ran it>"}`; answer
`{"ok": true, "data": {...}}`, or `{"ok": false, "error": {"code", "message"}}` when the command is refused
(then nothing was written). Every command is logged with its operator; CloudTrail records the invoke itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from leadcrm.directory.administration import AdminError, DirectoryAdmin, Person
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.telemetry import instrumented
from leadcrm.wiring import handle_event

logger = Logger(service="leadcrm")

Args = dict[str, Any]


def _text(args: Args, name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise AdminError("MISSING_ARGUMENT", f"{name} is required.")
        return None
    if not isinstance(value, str) or len(value) > 320:
        raise AdminError("INVALID_ARGUMENT", f"{name} must be a string of at most 320 characters.")
    return value.strip()


def _person(args: Args, prefix: str = "") -> Person:
    def key(name: str) -> str:
        return prefix + name[0].upper() + name[1:] if prefix else name

    return Person(
        email=_text(args, key("email")) or "",
        subject=_text(args, key("subject"), required=False),
        first_name=_text(args, key("firstName"), required=False),
        last_name=_text(args, key("lastName"), required=False),
    )


def _rebuild_analytics_rollups(admin: DirectoryAdmin, args: Args) -> dict[str, Any]:
    """The recovery path of the analytics rollups (migration 0023): recomputed from the organization's leads,
    status history, touches and deals, replacing its rollup rows in this command's transaction."""
    from leadcrm.analytics.jobs import rebuild_rollups

    organization_id = admin.live_organization(_text(args, "organizationId") or "")
    return {"organizationId": str(organization_id), "leadsCounted": rebuild_rollups(admin.connection, organization_id)}


COMMANDS: dict[str, Callable[[DirectoryAdmin, Args], dict[str, Any]]] = {
    "create-organization": lambda admin, a: admin.create_organization(
        name=_text(a, "name") or "",
        owner=_person(a, "owner"),
        timezone=_text(a, "timezone", required=False) or "UTC",
        country=_text(a, "country", required=False),
        locale=_text(a, "locale", required=False) or "en",
    ),
    "add-member": lambda admin, a: admin.add_member(
        organization_id=_text(a, "organizationId") or "", person=_person(a), role=_text(a, "role") or ""
    ),
    "set-role": lambda admin, a: admin.set_role(
        organization_id=_text(a, "organizationId") or "", member=_text(a, "member") or "", role=_text(a, "role") or ""
    ),
    "remove-member": lambda admin, a: admin.remove_member(
        organization_id=_text(a, "organizationId") or "", member=_text(a, "member") or ""
    ),
    "show-organization": lambda admin, a: admin.show_organization(organization_id=_text(a, "organizationId") or ""),
    "rebuild-analytics-rollups": lambda admin, a: _rebuild_analytics_rollups(admin, a),
}


def run(command: str, args: Args, operator: str) -> dict[str, Any]:
    """One command in one transaction: committed whole, or refused with nothing written."""
    logger.append_keys(operator=operator, command=command)
    try:
        if command not in COMMANDS:
            raise AdminError("UNKNOWN_COMMAND", f"command must be one of {', '.join(COMMANDS)}.")
        if not isinstance(args, dict):
            raise AdminError("INVALID_ARGUMENT", "args must be an object.")
        with UnitOfWork() as uow:
            admin = DirectoryAdmin(uow.connection, lambda kind, detail: handle_event(uow.connection, kind, detail))
            data = COMMANDS[command](admin, args)
            uow.commit()
        logger.info("admin command done", extra={"result": {k: v for k, v in data.items() if k != "members"}})
        return {"ok": True, "data": data}
    except AdminError as refused:
        logger.warning("admin command refused", extra={"code": refused.code, "reason": str(refused)})
        return {"ok": False, "error": {"code": refused.code, "message": str(refused)}}
    finally:
        logger.remove_keys(["operator", "command"])


@instrumented()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return run(str(event.get("command", "")), event.get("args") or {}, str(event.get("operator") or "unknown"))
