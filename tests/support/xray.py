"""A process that believes it runs in Lambda with active tracing, and a stand-in X-Ray daemon that reads what
it sends: the Lambda variables, a trace header, and a UDP port where the SDK sends each finished subsegment."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.aws import EVENT_BUS

ROOT = Path(__file__).resolve().parents[2]
IN_LAMBDA = {"LAMBDA_TASK_ROOT": "/var/task", "AWS_LAMBDA_FUNCTION_NAME": "leadcrm-api"}
TRACE_ROOT = "1-65a1b2c3-0123456789abcdef01234567"
# What the functions check at cold start in Lambda (functions/*/settings.py), as the stack would set it.
FUNCTION_SETTINGS = {
    "EVENT_BUS_NAME": EVENT_BUS,
    "INGESTION_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/leadcrm-ingestion",
    "LEAD_IMPORTS_BUCKET": "leadcrm-lead-imports",
    "EMAIL_SIGNING_KEYS": "tracing-test-signing-key",
    "INBOUND_EMAIL_DOMAIN": "mail.leadcrm.test",
    "MAIL_FROM": "LeadCRM <no-reply@mail.leadcrm.test>",
    "PSEUDONYM_KEY": "tracing-test-pseudonym-key",
    "SES_CONFIGURATION_SET": "leadcrm-test",
    "GRAPH_FETCH_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/leadcrm-graph-fetch",
    "WEBHOOK_DELIVERY_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/leadcrm-webhook-delivery",
    "WEBHOOK_BODIES_BUCKET": "leadcrm-webhook-bodies",
    "META_APP_SECRET": "tracing-test-app-secret",
    "META_VERIFY_TOKEN": "tracing-test-verify-token",
}
_LAMBDA_VARIABLES = ("LAMBDA_TASK_ROOT", "AWS_LAMBDA_FUNCTION_NAME", "_X_AMZN_TRACE_ID", "POWERTOOLS_TRACE_DISABLED")


def without_lambda() -> dict[str, str]:
    """This process's environment without anything that says Lambda."""
    return {k: v for k, v in os.environ.items() if k not in _LAMBDA_VARIABLES}


def run_python(script: str, env: dict[str, str], *args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """`script` in a fresh interpreter with the worktree's code on the path and every warning an error."""
    path = os.pathsep.join(str(p) for p in (ROOT / "functions", ROOT / "layers" / "core" / "python", ROOT))
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", script, *args],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": path},
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def last_json_line(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


class XRayDaemon:
    """The UDP port the SDK sends to; `subsegments()` reads everything sent so far."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.5)

    def lambda_environment(self) -> dict[str, str]:
        host, port = self._socket.getsockname()
        return {
            **FUNCTION_SETTINGS,
            **without_lambda(),
            **IN_LAMBDA,
            "_X_AMZN_TRACE_ID": f"Root={TRACE_ROOT};Parent=53995c3f42cd8ad8;Sampled=1",
            "AWS_XRAY_DAEMON_ADDRESS": f"{host}:{port}",
        }

    def subsegments(self) -> list[dict[str, Any]]:
        documents = []
        while True:
            try:
                datagram = self._socket.recv(65536).decode()
            except TimeoutError:
                return documents
            header, _, body = datagram.partition("\n")
            assert json.loads(header) == {"format": "json", "version": 1}
            documents.append(json.loads(body))

    def close(self) -> None:
        self._socket.close()


def named(subsegments: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [s for s in subsegments if s["name"] == name]
    return found
