"""The whole schema: every capability's `tables` module, loaded on demand onto the one shared MetaData.

Each capability declares its tables in its own `tables.py`; a module that must see all of them (Alembic,
the merge that moves every row naming a lead, the schema checks) asks here instead of importing each
capability, so `platform` imports no capability and a new capability's tables are found without a list.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from sqlalchemy import MetaData

import leadcrm
from leadcrm.platform.db.columns import metadata


@cache
def table_modules() -> tuple[str, ...]:
    """The `leadcrm.<package>.tables` modules that exist, in name order (platform's own included)."""
    return tuple(
        f"leadcrm.{package.name}.tables"
        for package in sorted(pkgutil.iter_modules(leadcrm.__path__), key=lambda p: p.name)
        if package.ispkg and importlib.util.find_spec(f"leadcrm.{package.name}.tables") is not None
    )


def all_tables() -> MetaData:
    """The shared MetaData with every table of every capability on it."""
    for name in table_modules():
        importlib.import_module(name)
    return metadata
