"""What a consumer leaves behind when it rejects a message (leadcrm.platform.failures): its "message rejected"
log line and its `RejectedMessages` metric (an EMF document printed to stdout)."""

from __future__ import annotations

import json

import pytest


def rejections(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, str]]:
    """(function, messageId, reason) of every "message rejected" log line."""
    return [
        (r.function, r.messageId, r.reason)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "leadcrm.platform.failures" and r.getMessage() == "message rejected"
    ]


def rejection_details(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The detail of every "message rejected" log line (what was wrong, never the values)."""
    return [
        r.detail  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "leadcrm.platform.failures" and r.getMessage() == "message rejected"
    ]


def rejected_metrics(stdout: str) -> list[tuple[str, str]]:
    """(function, reason) of every RejectedMessages EMF document printed."""
    found = []
    for line in stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and "RejectedMessages" in document and "_aws" in document:
            (directive,) = document["_aws"]["CloudWatchMetrics"]
            assert {"function", "reason"} <= {d for dims in directive["Dimensions"] for d in dims}
            found.append((document["function"], document["reason"]))
    return found
