"""The one filter every list with a person responsible takes: `assignee=me|unassigned|<userId>`.

Leads, tasks, conversations, deals and tickets name the person responsible `assigneeUserId` in the API
(whatever their column is called), and narrow a list to one person, or to nobody, the same way. `me` is
resolved on the server to the caller's own user id, so a client never has to know it.
Pure: no SQL, so any capability's rules can carry an `Assignee` in their filters.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from leadcrm.platform.errors import BadRequest

ME = "me"
UNASSIGNED = "unassigned"
# What the query parameter accepts (documented in the API schema as the parameter's pattern).
ASSIGNEE_PATTERN = r"^(me|unassigned|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
_ASSIGNEE_TEXT = re.compile(ASSIGNEE_PATTERN)


@dataclass(frozen=True)
class Assignee:
    """A list narrowed to one user's records, or (`user_id` None) to the records nobody is responsible for."""

    user_id: uuid.UUID | None

    @property
    def is_unassigned(self) -> bool:
        return self.user_id is None


NOBODY = Assignee(None)


def parse_assignee(raw: str | None, caller_user_id: uuid.UUID | None) -> Assignee | None:
    """The filter a request's `assignee` names; None when it names none. 400 VALIDATION_FAILED for anything
    else, and for `me` from a caller that is no user (the system), who is responsible for nothing."""
    if raw is None:
        return None
    if not _ASSIGNEE_TEXT.fullmatch(raw):
        raise BadRequest("assignee is me, unassigned or a user id.", code="VALIDATION_FAILED", field="assignee")
    if raw == UNASSIGNED:
        return NOBODY
    if raw == ME:
        if caller_user_id is None:
            raise BadRequest("assignee=me needs a signed-in user.", code="VALIDATION_FAILED", field="assignee")
        return Assignee(caller_user_id)
    return Assignee(uuid.UUID(raw))
