"""The six traffic functions, invoked the way Lambda invokes them: their handlers, paths and context.

`LocalLambdas` runs them in the calling process, one invocation at a time per function (a Lambda container
runs one at a time, and the handlers rely on that: the HTTP resolver keeps the current event on the app).
The local stack runs several such containers per function, each a process of its own (containers.py).
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[2]
# Lambda puts the shared code asset (functions/) and the layer (python/) on the path; so do we.
CODE_PATHS = (REPO / "functions", REPO / "layers" / "core" / "python")

HANDLERS = {
    "api": "api.handler",
    "webhooks": "webhooks.handler",
    "ingestion": "ingestion.handler",
    "graph_fetch": "graph_fetch.handler",
    "meta_events": "meta_events.handler",
    "webhook_delivery": "webhook_delivery.handler",
    "task_lifecycle": "task_lifecycle.handler",
}


class Invoker(Protocol):
    """Lambda's Invoke as pollers and the scheduler use it: LocalLambdas, or the stack's ContainerPool."""

    def invoke(self, name: str, event: dict[str, Any]) -> Any: ...


@dataclass
class LocalContext:
    function_name: str
    timeout_seconds: int = 30
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:eu-west-1:123456789012:function:leadcrm-{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/leadcrm-{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self.started)) * 1000))


class LocalLambdas:
    def __init__(self) -> None:
        self._locks = {name: threading.Lock() for name in HANDLERS}
        self._handlers: dict[str, Any] = {}

    def load(self) -> None:
        for path in CODE_PATHS:
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        for name, module in HANDLERS.items():
            self._handlers[name] = importlib.import_module(module).lambda_handler

    def invoke(self, name: str, event: dict[str, Any]) -> Any:
        with self._locks[name]:
            return self._handlers[name](event, LocalContext(function_name=name))
