"""The organization itself, for the dashboard: its settings and its members.

- `GET` (staff) / `PATCH` (owner/admin) `/organizations/{orgId}/settings`;
- `GET /organizations/{orgId}/members` (staff): active members for assignee pickers.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.directory.schemas_directory import (
    Member,
    OrganizationSettings,
    OrganizationSettingsEnvelope,
    UpdateOrganizationSettingsBody,
)
from api.http import caller
from api.operations import MANAGER, Operations
from api.params import DEFAULT_PAGE_SIZE, CursorParam, PageSize
from api.schemas import ListEnvelope
from leadcrm.directory import queries, settings
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.directory.rules import Role
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Organization")

SETTINGS = "/organizations/<orgId>/settings"

OWNERSHIP = (
    "Who owns what: `name`, `timezone`, `country` and `locale` are shared with the platform's "
    "`organization.updated` events, and per field the later change wins (this route's change is stamped at "
    "the time it is made; a platform event carrying an older `updatedAt` leaves the field as set here). "
    "`features` belong to the platform (plans) and are read-only here. `defaultAssigneeUserId` is LeadCRM's "
    "alone (the same setting as `PUT …/default-assignee`). `country` (ISO 3166-1 alpha-2) is the region phone "
    "numbers typed without a country code are read in, for dedup and search; without one, the country of the "
    "`timezone` is used, and `phoneRegion` shows the region in force (null: UTC or a zone of several countries, "
    "where only numbers with their country code are compared)."
)


@ops.get(
    SETTINGS,
    "getOrganizationSettings",
    "The organization's settings",
    OWNERSHIP,
    errors={404: ["ORGANIZATION_NOT_FOUND"]},
)
def read_settings(orgId: str) -> OrganizationSettingsEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = queries.read_settings(uow.connection, actor.organization_id)
    return OrganizationSettingsEnvelope(data=OrganizationSettings.from_view(view))


@ops.patch(
    SETTINGS,
    "updateOrganizationSettings",
    "Change the organization's name, timezone, country, locale or default assignee",
    OWNERSHIP + " Only the fields sent change; `country` and `defaultAssigneeUserId` may be null.",
    who=MANAGER,
    errors={400: ["ASSIGNEE_NOT_STAFF"], 404: ["ORGANIZATION_NOT_FOUND"]},
    ok={200: {"description": "The settings as they now are"}, 400: {"description": "ASSIGNEE_NOT_STAFF"}},
)
def update_settings(
    orgId: str, body: Annotated[UpdateOrganizationSettingsBody, Body()]
) -> OrganizationSettingsEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        view = settings.update_settings(uow, actor, body.changes())
        uow.commit()
    return OrganizationSettingsEnvelope(data=OrganizationSettings.from_view(view))


@ops.get(
    "/organizations/<orgId>/members",
    "listMembers",
    "Active members by name, in keyset pages",
    "Live, active memberships with the user's name and email, ordered by first name, last name; `role` "
    "takes several values (comma-separated or repeated). `nextCursor` names the page's last membership.",
)
def members(
    orgId: str,
    role: Annotated[list[Role] | None, Query(max_length=2 * len(Role))] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[Member]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        page = queries.list_members(
            uow.connection, actor.organization_id, roles=frozenset(role or ()), limit=limit, cursor=cursor
        )
    return ListEnvelope[Member](data=[Member.model_validate(m) for m in page.items], next_cursor=page.next_cursor)
