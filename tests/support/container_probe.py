"""A handler that reports what its container sees (its process, the clock's offset, an armed fault), for the
local stack's container pool tests (tests/integration/platform/test_local_containers.py)."""

from __future__ import annotations

import os
import time
from typing import Any


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from infra.local import faults
    from leadcrm.platform import clock

    time.sleep(float(event.get("seconds", 0)))
    if event.get("raise"):
        raise ValueError(event["raise"])
    answer: dict[str, Any] = {
        "pid": os.getpid(),
        "function": context.function_name,
        "offsetSeconds": clock.offset().total_seconds(),
        "poolSize": os.environ.get("DB_POOL_SIZE"),
    }
    if "fault" in event:
        answer["fault"] = faults.registry.take(event["fault"])
    return answer
