"""SQL for the filters every list shares (leadcrm.platform.assignee), written once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement

from leadcrm.platform.assignee import Assignee


def assignee_condition(column: ColumnElement[Any], assignee: Assignee) -> ColumnElement[bool]:
    """`column` (the record's person responsible) is the user the filter names, or nobody."""
    return column.is_(None) if assignee.user_id is None else column == assignee.user_id
