"""What the deals capability does, in the same unit of work (platform.messagebus), when a lead becomes a member
or is erased; owner departure reacts to `membership.status_changed` from the bus (deals.owner_departure)."""

from __future__ import annotations

from sqlalchemy import Connection

from leadcrm.deals.people import forget_erased_lead, link_member_to_lead_deals
from leadcrm.leads.messages import LeadBecameMember, LeadErasing


def link_member_on_deals(conn: Connection, message: LeadBecameMember) -> int:
    """A converted lead's deals link both the lead and the member."""
    return link_member_to_lead_deals(message.uow, message.actor, message.lead_id, message.membership_id)


def forget_person_on_deals(conn: Connection, message: LeadErasing) -> None:
    """An erased lead's deals stay as history, without the person's traces."""
    forget_erased_lead(conn, message.organization_id, message.lead_id)
