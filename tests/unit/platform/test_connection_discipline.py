"""Every transaction of the product runs through the platform's unit of work (UnitOfWork, or `transaction()` for
work without events), which invalidates a connection that an exception left in doubt. A module that opened its
own `engine.begin()` or `engine.connect()` would hand such a connection back to the pool, so none may."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# The platform's own database code (the engine, the unit of work, Alembic's one-off migration run).
ALLOWED = ("layers/core/python/leadcrm/platform/db/",)
OPENS_ITS_OWN = re.compile(r"(get_engine\(\)|engine)\.(begin|connect)\(")


def test_no_module_opens_a_connection_outside_the_unit_of_work():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("functions", "layers/core/python/leadcrm")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(ALLOWED)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OPENS_ITS_OWN.search(line)
    ]
    assert offenders == []
