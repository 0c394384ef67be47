"""What the directory does when a platform event arrives (task_lifecycle, at least once, in any order).

The platform's detail comes as it sends it (no outbox envelope). Each reaction parses it
(directory.rules.sync) and hands the state to its use case (organization_sync, user_sync, membership_sync),
on the consumer's connection. True when the directory changed or held the event (a held event waits for what
it needs and is no failure); False when it changed nothing (a replay, an older version).

A detail that can never be applied (malformed, or naming a membership's organization or user other than its
own) is a permanent failure: raised as `leadcrm.platform.failures.Rejected`, so the consumer records it as
every consumer records its rejections (one log line with the message id and the reason, the
`RejectedMessages` metric) and acknowledges it, never into a retry loop. Nothing of it is written: the
consumer's transaction is rolled back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Connection

from leadcrm.directory import membership_sync, organization_sync, user_sync
from leadcrm.directory.rules.sync import (
    MalformedDetail,
    parse_membership,
    parse_membership_deletion,
    parse_membership_status_change,
    parse_organization,
    parse_organization_deletion,
    parse_user,
)
from leadcrm.platform.db.consumer_uow import ConsumerUnitOfWork
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.failures import MALFORMED, Rejected

ORGANIZATION_CREATED = organization_sync.ORGANIZATION_CREATED
ORGANIZATION_UPDATED = organization_sync.ORGANIZATION_UPDATED
ORGANIZATION_DELETED = organization_sync.ORGANIZATION_DELETED
USER_CREATED = user_sync.USER_CREATED
USER_UPDATED = user_sync.USER_UPDATED
MEMBERSHIP_CREATED = membership_sync.MEMBERSHIP_CREATED
MEMBERSHIP_UPDATED = membership_sync.MEMBERSHIP_UPDATED
MEMBERSHIP_DELETED = membership_sync.MEMBERSHIP_DELETED
MEMBERSHIP_STATUS_CHANGED = membership_sync.MEMBERSHIP_STATUS_CHANGED

S = TypeVar("S")
Reaction = Callable[[Connection, dict[str, Any]], bool]


def _reaction(
    detail_type: str, parse: Callable[[Mapping[str, Any]], S], apply: Callable[[UnitOfWork, S], bool]
) -> Reaction:
    def react(conn: Connection, detail: dict[str, Any]) -> bool:
        try:
            state = parse(detail)
        except MalformedDetail as error:
            # The reason names the field and the rule, never the value (no PII in logs)
            raise Rejected(MALFORMED, f"{detail_type}: {error.reason}") from error
        uow = ConsumerUnitOfWork(conn)
        changed = apply(uow, state)
        uow.write_events()  # what the subscribers of its messages announced (an ownership handover)
        return changed

    react.__name__ = react.__qualname__ = f"on_{detail_type.replace('.', '_')}"
    react.__doc__ = f"`{detail_type}`: {parse.__doc__}"
    return react


on_organization_created = _reaction(ORGANIZATION_CREATED, parse_organization, organization_sync.apply_organization)
on_organization_updated = _reaction(ORGANIZATION_UPDATED, parse_organization, organization_sync.apply_organization)
on_organization_deleted = _reaction(
    ORGANIZATION_DELETED, parse_organization_deletion, organization_sync.delete_organization
)
on_user_created = _reaction(USER_CREATED, parse_user, user_sync.apply_user)
on_user_updated = _reaction(USER_UPDATED, parse_user, user_sync.apply_user)
on_membership_created = _reaction(
    MEMBERSHIP_CREATED,
    parse_membership,
    lambda uow, state: membership_sync.apply_membership(uow, state, detail_type=MEMBERSHIP_CREATED),
)
on_membership_updated = _reaction(
    MEMBERSHIP_UPDATED,
    parse_membership,
    lambda uow, state: membership_sync.apply_membership(uow, state, detail_type=MEMBERSHIP_UPDATED),
)
on_membership_deleted = _reaction(MEMBERSHIP_DELETED, parse_membership_deletion, membership_sync.delete_membership)
on_membership_status_changed = _reaction(
    MEMBERSHIP_STATUS_CHANGED, parse_membership_status_change, membership_sync.apply_status_change
)
