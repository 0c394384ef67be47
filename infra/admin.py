"""`make admin ARGS="<command> …"`: the operator's bootstrap for organizations and their staff.

    create-organization --name N --owner-email E --owner-subject S [--timezone TZ] [--country CC] [--locale L]
    add-member         --organization ID --email E [--subject S] --role owner|admin|coach|member
    set-role           --organization ID --member EMAIL|USER_ID|MEMBERSHIP_ID --role R
    remove-member      --organization ID --member EMAIL|USER_ID|MEMBERSHIP_ID
    show-organization  --organization ID
    rebuild-analytics-rollups --organization ID   (recompute the funnel and attribution rollups from the source rows)

Locally (the default) it runs the admin function's code in this process against the local stack's database
(.local/postgres, started if it is not running; or DATABASE_URL). With `--aws` it invokes the deployed admin
function with your AWS credentials (IAM: lambda:InvokeFunction on it), so no one needs database access; the
function name comes from `--function` or the stack's `AdminFunctionName` output. Either way the run is logged
with who ran it (your IAM ARN, or user@host locally).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

FLAGS: dict[str, list[tuple[str, bool]]] = {  # command -> (flag, required)
    "create-organization": [
        ("name", True),
        ("owner-email", True),
        ("owner-subject", True),
        ("owner-first-name", False),
        ("owner-last-name", False),
        ("timezone", False),
        ("country", False),
        ("locale", False),
    ],
    "add-member": [
        ("organization", True),
        ("email", True),
        ("subject", False),
        ("first-name", False),
        ("last-name", False),
        ("role", True),
    ],
    "set-role": [("organization", True), ("member", True), ("role", True)],
    "remove-member": [("organization", True), ("member", True)],
    "show-organization": [("organization", True)],
    "rebuild-analytics-rollups": [("organization", True)],
}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="make admin ARGS=", description=__doc__.split("\n\n")[0])
    root.add_argument("--aws", action="store_true", help="invoke the deployed admin function (IAM)")
    root.add_argument("--function", help="the admin function's name (default: the stack's AdminFunctionName output)")
    root.add_argument("--stack", default="LeadCrmStack", help="the stack whose outputs name the function")
    root.add_argument("--data-dir", type=Path, default=Path(".local"), help="the local stack's data dir")
    commands = root.add_subparsers(dest="command", required=True)
    for command, flags in FLAGS.items():
        sub = commands.add_parser(command)
        for flag, required in flags:
            sub.add_argument(f"--{flag}", required=required)
    return root


def _camel(flag: str) -> str:
    head, *rest = flag.split("-")
    return head + "".join(part.title() for part in rest)


def command_args(options: argparse.Namespace) -> dict[str, Any]:
    """The admin event's `args`: the given flags in camelCase (`--organization` is `organizationId`)."""
    args: dict[str, Any] = {}
    for flag, _ in FLAGS[options.command]:
        value = getattr(options, flag.replace("-", "_"))
        if value is not None:
            args["organizationId" if flag == "organization" else _camel(flag)] = value
    return args


def run_locally(command: str, args: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    started = None
    if not os.environ.get("DATABASE_URL"):
        from infra.local.postgres import LocalPostgres

        started = LocalPostgres(data_dir.resolve() / "postgres")
        was_running = started._running()
        os.environ["DATABASE_URL"] = started.start()
        if was_running:
            started = None  # the local stack's cluster: leave it as it was
    try:
        from infra.local.lambdas import CODE_PATHS

        sys.path[:0] = [str(path) for path in CODE_PATHS if str(path) not in sys.path]  # as Lambda lays it out
        from leadcrm.platform.db.migrate import upgrade

        upgrade()
        from admin.handler import run

        return run(command, args, operator=f"{getpass.getuser()}@{socket.gethostname()}")
    finally:
        if started is not None:
            started.stop()


def run_in_aws(command: str, args: dict[str, Any], function: str | None, stack: str) -> dict[str, Any]:
    import boto3

    if function is None:
        outputs = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
        function = next((o["OutputValue"] for o in outputs if o["OutputKey"] == "AdminFunctionName"), None)
        if function is None:
            raise SystemExit(f"stack {stack} has no AdminFunctionName output; pass --function")
    operator = boto3.client("sts").get_caller_identity()["Arn"]
    response = boto3.client("lambda").invoke(
        FunctionName=function,
        Payload=json.dumps({"command": command, "args": args, "operator": operator}).encode(),
    )
    payload = json.loads(response["Payload"].read())
    if response.get("FunctionError"):
        raise SystemExit(f"the admin function failed: {json.dumps(payload)}")
    return payload


def main(argv: list[str] | None = None) -> int:
    options = parser().parse_args(argv)
    args = command_args(options)
    if options.aws:
        answer = run_in_aws(options.command, args, options.function, options.stack)
    else:
        answer = run_locally(options.command, args, options.data_dir)
    print(json.dumps(answer, indent=2, default=str))
    return 0 if answer.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
