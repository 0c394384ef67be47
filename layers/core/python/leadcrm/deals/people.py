"""What happens to deals when their person changes: a converted lead's deals link the new member, and an
erased lead's deals forget the person (leads.conversion and leads.erase call these in their own
transactions)."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, Text, and_, case, cast, insert, literal, or_, update
from sqlalchemy.dialects.postgresql import ARRAY

from leadcrm.deals.deals import HISTORY_COMPENSATION, HISTORY_MEMBER_LINKED, HISTORY_REACTIVATED, HISTORY_STAGE_CHANGED
from leadcrm.deals.rules.deals import DealStatus
from leadcrm.deals.tables import deal_compensations, deal_history, deals
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7


def link_member_to_lead_deals(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, membership_id: uuid.UUID) -> int:
    """A lead became a member (leads.conversion): its deals now link the member too, in one UPDATE, with a
    `member_linked` history row each. Sealed deals take the link as well (who the deal is with is not one of
    its sealed terms); the version is not bumped, since nothing a person edits changed."""
    conn = uow.connection
    linked = conn.execute(
        update(deals)
        .where(
            deals.c.organization_id == actor.organization_id,
            deals.c.lead_id == lead_id,
            deals.c.membership_id.is_(None),
        )
        .values(membership_id=membership_id, updated_at=sql_now())
        .returning(deals.c.id)
    ).all()
    if linked:
        conn.execute(
            insert(deal_history).values(
                [
                    {
                        "id": uuid7(),
                        "organization_id": actor.organization_id,
                        "deal_id": row.id,
                        "type": HISTORY_MEMBER_LINKED,
                        "actor_user_id": actor.user_id,
                        "payload": {"membershipId": str(membership_id)},
                    }
                    for row in linked
                ]
            )
        )
    return len(linked)


# -- erase ----------------------------------------------------------------------------------------------------

ERASED_TEXT = "erased"
# Free text staff typed into a history payload (it may name the person); ids, codes and amounts stay.
_FREE_TEXT_KEYS = ("activityNote", "lossNote", "documentRef", "quoteRef")


def forget_erased_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> int:
    """Before a lead is erased (leads.erase): its deals stay as non-identifiable transactional history
    (spec section 8: "transactional history retained in non-identifiable form"), so the free text on them is
    replaced (title, closure reason, compensation reasons) or dropped (offer reference, loss note, the notes
    and references on their history); values, currencies, dates, stages and codes are kept. The deals lose
    the lead itself through their foreign key (SET NULL). Three statements; the number of deals moved."""
    forgotten = [
        row.id
        for row in conn.execute(
            update(deals)
            .where(deals.c.organization_id == organization_id, deals.c.lead_id == lead_id)
            .values(
                title=ERASED_TEXT,
                offer_ref=None,
                loss_note=None,
                close_reason=case((deals.c.close_reason.is_(None), None), else_=literal(ERASED_TEXT)),
                updated_at=sql_now(),
            )
            .returning(deals.c.id)
        )
    ]
    if not forgotten:
        return 0
    free_text_reason = or_(
        deal_history.c.type.in_([HISTORY_REACTIVATED, HISTORY_COMPENSATION]),
        and_(deal_history.c.type == HISTORY_STAGE_CHANGED, deal_history.c.to_status == DealStatus.WON.value),
    )
    conn.execute(
        update(deal_history)
        .where(deal_history.c.organization_id == organization_id, deal_history.c.deal_id.in_(forgotten))
        .values(
            payload=deal_history.c.payload.op("-")(cast(list(_FREE_TEXT_KEYS), ARRAY(Text))),
            reason=case((free_text_reason, None), else_=deal_history.c.reason),
        )
    )
    conn.execute(
        update(deal_compensations)
        .where(deal_compensations.c.organization_id == organization_id, deal_compensations.c.deal_id.in_(forgotten))
        .values(reason=ERASED_TEXT, document_ref=None)
    )
    return len(forgotten)
