"""Reads what the service logs: the JSON lines the Powertools Logger writes while a block runs.

Powertools binds its handler to the stream it found when the logger was first made (the real stdout, before
pytest captured it), so the lines are read from a second handler on the same logger with the same formatter:
byte for byte what CloudWatch would get, the core's `leadcrm.*` stdlib loggers included (they propagate to it).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CapturedLogs:
    text: str = ""
    lines: list[dict[str, Any]] = field(default_factory=list)

    def with_message(self, message: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("message") == message]

    def one(self, message: str) -> dict[str, Any]:
        (line,) = self.with_message(message)
        return line


@contextmanager
def captured_logs() -> Iterator[CapturedLogs]:
    """Every line the service logs in the block; read them after it ends."""
    from leadcrm.platform.telemetry import logger

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    target = logging.getLogger(logger.name)
    target.addHandler(handler)
    captured = CapturedLogs()
    try:
        yield captured
    finally:
        target.removeHandler(handler)
        captured.text = stream.getvalue()
        captured.lines = [json.loads(line) for line in captured.text.splitlines() if line.strip()]
