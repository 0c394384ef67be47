"""LeadCRM CDK app: one stack, ``LeadCrmStack``, checked by cdk-nag's AwsSolutions rules.

Synthesize (offline, no Docker, no CDK CLI needed), from the repository root::

    .venv/bin/python infra/app.py --context-file infra/test-context.json   # what `make synth` runs
    .venv/bin/python infra/app.py -c jwtIssuer=https://... -c ...           # your own values

It writes cdk.out/LeadCrmStack.template.json and the assets. Deploy with the CDK CLI (it runs
``python3 infra/app.py`` from ``cdk.json``; the Python environment must have aws-cdk-lib and cdk-nag
installed)::

    npx aws-cdk deploy LeadCrmStack \\
        -c jwtIssuer=https://<your-issuer> -c jwtAudience=<audience> \\
        -c dashboardOrigin=https://<dashboard-host> -c inboundDomain=<mail-domain> -c mailFrom=<sender>

Context values (``-c key=value``, or ``cdk.context.json``; none of the first five has a default, and a
synth without any of them fails naming each: see ``infra/config.py``):

- ``jwtIssuer``, ``jwtAudience``: the OIDC issuer URL and audience the HTTP API's JWT authorizer accepts;
- ``dashboardOrigin``: the origin allowed by CORS;
- ``inboundDomain``: the domain SES receives mail for (identity, receipt rule → S3 → ingestion queue);
- ``mailFrom``: the sender of LeadCRM's own mail (the digest);
- ``databaseDeletionProtection`` (default ``true``, in ``cdk.json``): set ``false`` for a throwaway stack
  you mean to destroy (the cluster is still snapshotted on delete);
- ``alarmEmails``, ``alarmHttpsEndpoints`` (optional, comma-separated): who the alarm topic notifies.

``infra/test-context.json`` holds the example values the tests and ``make test`` synthesize with.

After the first deploy, store the Meta app secret in the ``MetaSecret`` secret (``appSecret``); until
then every webhook signature check fails.

Every cdk-nag finding is an error that fails synthesis: with the recommended feature flag
``@aws-cdk/core:annotationsInValidationReport`` (cdk.json), ``app.synth()`` raises and writes
``cdk.out/validation-report.json``; should the flag be turned off, this script still lists error
annotations and exits 1. Accepted findings are suppressed in code next to the resource they concern,
each with its reason.
"""

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as a script: ``python3 infra/app.py`` puts infra/ first, not the root
    sys.path.insert(0, str(REPO_ROOT))

import aws_cdk as cdk  # noqa: E402
from aws_cdk import cx_api as cxapi  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.config import ConfigError, LeadCrmConfig  # noqa: E402
from infra.stacks import LeadCrmStack  # noqa: E402

STACK_NAME = "LeadCrmStack"


def cdk_json_context() -> dict[str, Any]:
    """The ``context`` of cdk.json and cdk.context.json (the CLI reads both), so that running this file
    directly synthesizes what the CLI would."""
    context: dict[str, Any] = {}
    cdk_json = REPO_ROOT / "cdk.json"
    if cdk_json.exists():
        context.update(json.loads(cdk_json.read_text()).get("context", {}))
    cdk_context_json = REPO_ROOT / "cdk.context.json"
    if cdk_context_json.exists():
        context.update(json.loads(cdk_context_json.read_text()))
    return context


def read_context_file(path: Path) -> dict[str, Any]:
    """A JSON object of context values (``infra/test-context.json``, or an operator's own)."""
    values = json.loads(path.read_text())
    if not isinstance(values, dict):
        raise ValueError(f"{path} must hold a JSON object of context values")
    return values


def build_app(*, context: dict[str, Any] | None = None, outdir: str | None = None) -> tuple[cdk.App, LeadCrmStack]:
    """Build the app and its stack without synthesizing.

    ``context`` overrides cdk.json and cdk.context.json; under the CDK CLI, ``-c`` values override all of
    them. Without ``outdir`` and outside the CLI, CDK synthesizes into a temporary directory (what tests
    want). Raises ConfigError, naming every missing or invalid deploy setting, before building anything.
    """
    app = cdk.App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    stack = LeadCrmStack(
        app,
        STACK_NAME,
        config=LeadCrmConfig.from_context(app),
        description="LeadCRM: lead management API, ingestion and task lifecycle (Lambda + Aurora PostgreSQL)",
    )
    # AWS::RDS::DBProxyTargetGroup has no Tags property, although CDK considers it taggable.
    cdk.Tags.of(app).add("project", "leadcrm", exclude_resource_types=["AWS::RDS::DBProxyTargetGroup"])
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stack


def parse_args(argv: list[str] | None) -> dict[str, Any]:
    """Context given on this script's command line (the CDK CLI passes its own through the environment)."""
    parser = argparse.ArgumentParser(description="Synthesize LeadCrmStack into cdk.out/ (cdk-nag checked).")
    parser.add_argument("--context-file", type=Path, action="append", default=[], help="a JSON object of context")
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="one value")
    args = parser.parse_args(argv)
    context: dict[str, Any] = {}
    for path in args.context_file:
        context.update(read_context_file(path))
    for pair in args.context:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            parser.error(f"-c takes KEY=VALUE, not {pair!r}")
        context[key] = value
    return context


def main(argv: list[str] | None = None) -> int:
    under_cli = "CDK_OUTDIR" in os.environ
    context = parse_args(argv)
    # The CDK CLI tells the app where to write; run directly, write ./cdk.out as the CLI would.
    try:
        app, _ = build_app(context=context, outdir=None if under_cli else str(REPO_ROOT / "cdk.out"))
    except ConfigError as error:  # one message naming everything that is missing, not a traceback
        print(error, file=sys.stderr)
        return 2
    assembly = app.synth()
    if under_cli:
        return 0  # the CLI reports annotations itself (and fails on errors unless --ignore-errors)
    errors = [
        f"{message.id}: {message.entry.data}"
        for stack in assembly.stacks
        for message in stack.messages
        if message.level == cxapi.SynthesisMessageLevel.ERROR
    ]
    for error in errors:
        print(f"[error] {error}", file=sys.stderr)
    print(f"synthesized {len(assembly.stacks)} stack(s) into {assembly.directory}; {len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
