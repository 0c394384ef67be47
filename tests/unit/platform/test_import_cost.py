"""The webhook receiver and the graph_fetch function must stay cheap to start: no SQLAlchemy, no pydantic
(DESIGN.md, conventions). Neither touches the database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, sys
import {module}
print(json.dumps({{name: name in sys.modules for name in ("sqlalchemy", "pydantic", "boto3")}}))
"""


def _modules_loaded_by_a_fresh_import(module: str = "webhooks.handler") -> dict[str, bool]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "core" / "python")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_the_webhook_handler_loads_neither_sqlalchemy_nor_pydantic():
    loaded = _modules_loaded_by_a_fresh_import()
    assert loaded["sqlalchemy"] is False
    assert loaded["pydantic"] is False


def test_importing_the_webhook_handler_does_not_load_boto3_until_a_message_is_sent():
    assert _modules_loaded_by_a_fresh_import()["boto3"] is False


def test_importing_the_graph_fetch_handler_loads_neither_sqlalchemy_nor_pydantic():
    loaded = _modules_loaded_by_a_fresh_import("graph_fetch.handler")
    assert loaded["sqlalchemy"] is False
    assert loaded["pydantic"] is False
