"""G6 / G7: a lead that arrived through a Meta Lead Ads form or a click-to-WhatsApp ad.

Both go through the create every entry point shares (`leads.intake.intake_lead`: dedup by person, a
closed lead reopened, the auto-task, `lead.created`), under a natural key claimed in the same transaction
(`ingested_events`: leadgen_id, ctwa_clid or wamid). A redelivery finds the claim and writes nothing; a
concurrent one waits on the key until the first commits, then finds it. Every lead gets its campaign hook
and one `lead_attributions` row (ad, ad set, form, campaign, platform, external ref).

One SQS batch is one unit of work (`ingest_batch`): each delivery is read in Python first (bad data
fails that delivery alone, leadcrm.ingestion.webhook_deliveries), then the batch is routed in one statement,
claims its natural keys in one, mints its campaign hooks in two, takes every person lock in one (one global
order: batches sharing people queue, never deadlock), takes each lead in through `intake_lead` in order (so
two leads of one person in a batch dedup against each other exactly as in two batches), writes the
attributions and claim outcomes in one statement, then does what the caller asks of the same unit of work
(`Alongside`: the batch's WhatsApp messages and statuses), commits and publishes once. Should the batch's
transaction fail, each delivery is taken in again in a transaction of its own, so only the one at fault
fails, and the caller does its part its own way (`ingest_batch` says it was not done).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    ARRAY,
    Connection,
    Insert,
    Text,
    Update,
    Uuid,
    cast,
    func,
    insert,
    literal,
    literal_column,
    select,
    true,
    update,
)
from sqlalchemy.types import UserDefinedType

from leadcrm.ingestion.connections import ActiveConnection, active_connections
from leadcrm.ingestion.rules.meta import FetchedMetaLead, WhatsAppMessage
from leadcrm.ingestion.tables import ingested_events, lead_attributions
from leadcrm.ingestion.webhook_deliveries import (
    ATTRIBUTION_FIELDS,
    Delivery,
    Ingested,
    Outcome,
    Routable,
    WebhookLead,
    read,
)
from leadcrm.leads.activity import record_activity
from leadcrm.leads.batch_intake import Arrival, intake_many
from leadcrm.leads.campaigns import find_or_create_campaigns
from leadcrm.leads.capture import RESUBMITTED_ACTIVITY
from leadcrm.leads.dedup import IntakeContext, lock_people, open_batch_intake, open_intake
from leadcrm.leads.intake import DuplicateLead, intake_lead, record_receipt
from leadcrm.platform.db.inserts import insert_skipping_conflicts
from leadcrm.platform.db.recordsets import recordset, recordset_document
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

T = TypeVar("T")
Connections = Mapping[tuple[str, str], ActiveConnection]
_Statement = tuple[Update, dict[str, Any]]  # a statement built once, and the parameters of one execution


@dataclass(frozen=True)
class Alongside(Generic[T]):
    """The caller's own part of a batch, done in its unit of work once the leads are taken in: `run` gets the
    unit of work, the active connections of `accounts` (looked up with the leads' own, in one statement) and
    each delivery's result so far, in order; what it returns `ingest_batch` hands back after the commit."""

    accounts: frozenset[tuple[str, str]]
    run: Callable[[UnitOfWork, Connections, list[Ingested | Exception]], T]


@dataclass(frozen=True)
class _Routed:
    organization_id: uuid.UUID
    lead: WebhookLead


@dataclass
class _Batch:
    """The deliveries read: each one's result, or None while it waits in `pending` for the intake."""

    results: list[Ingested | Exception | None]
    pending: dict[int, Routable] = field(default_factory=dict)


# --- one delivery, one batch ----------------------------------------------------------------------------


def ingest_meta_lead(fetched: FetchedMetaLead) -> Ingested:
    """One fetched Lead Ads lead (the graph_fetch function read it from Graph): a batch of one.
    Nothing here calls Graph: the ingestion function runs in the VPC without internet access."""
    return _only(ingest_deliveries([fetched]))


def ingest_whatsapp_message(message: WhatsAppMessage) -> Ingested:
    """One inbound message: only a click-to-WhatsApp referral makes a lead; organic messages are dropped."""
    return _only(ingest_deliveries([message]))


def ingest_deliveries(deliveries: Sequence[Delivery]) -> list[Ingested | Exception]:
    """Every delivery of an SQS batch in one unit of work (see the module's docstring). Per delivery, in
    order: what happened to it, or the error it failed with (returned, not raised: the caller reports it)."""
    results, _ = ingest_batch(deliveries)
    return results


def ingest_batch(
    deliveries: Sequence[Delivery], alongside: Alongside[T] | None = None
) -> tuple[list[Ingested | Exception], T | None]:
    """`ingest_deliveries`, with the caller's `alongside` done in the same unit of work: each delivery's
    result, and what `alongside` returned, or None when the batch's unit of work failed (the leads were then
    taken in one by one, each alone, and the caller's part was not done)."""
    batch = _read_all(deliveries)
    done: T | None = None
    if alongside is not None or len(batch.pending) > 1:
        try:
            together, done = _ingest_together(batch, alongside)
        except Exception as error:  # its type only: a database error's text can quote row values
            logger.warning(
                "a batch of webhook leads failed; each is taken in alone",
                extra={"error": type(error).__name__, "deliveries": len(batch.pending)},
            )
            together = {index: _alone(index, routable) for index, routable in batch.pending.items()}
    else:
        together = {index: _alone(index, routable) for index, routable in batch.pending.items()}
    results = [together[index] if result is None else result for index, result in enumerate(batch.results)]
    return results, done


def _read_all(deliveries: Sequence[Delivery]) -> _Batch:
    batch = _Batch([None] * len(deliveries))
    for index, delivery in enumerate(deliveries):
        try:
            routable = read(delivery)
        except Exception as error:  # bad data: this delivery fails alone
            batch.results[index] = error
            continue
        if isinstance(routable, Ingested):
            batch.results[index] = routable
        else:
            batch.pending[index] = routable
    return batch


def _only(results: list[Ingested | Exception]) -> Ingested:
    (result,) = results
    if isinstance(result, Exception):
        raise result
    return result


def _alone(index: int, routable: Routable) -> Ingested | Exception:
    batch = _Batch([None], {0: routable})
    try:
        return _ingest_together(batch, None)[0][0]
    except Exception as error:
        return error


# --- the shared intake -----------------------------------------------------------------------------------


def _ingest_together(batch: _Batch, alongside: Alongside[T] | None) -> tuple[dict[int, Ingested], T | None]:
    """Route, claim, hook, lock, take in and attribute the pending deliveries, then the caller's part; one
    transaction."""
    results: dict[int, Ingested] = {}
    accounts = {(p.provider, p.account_id) for p in batch.pending.values()}
    with UnitOfWork() as uow:
        conn = uow.connection
        connections = active_connections(conn, accounts | (alongside.accounts if alongside else set()))
        routed: dict[int, _Routed] = {}
        for index, routable in batch.pending.items():
            connection: ActiveConnection | None = connections.get((routable.provider, routable.account_id))
            if connection is None:
                results[index] = Ingested(routable.lead.channel, routable.lead.external_ref, Outcome.NO_CONNECTION)
            else:
                routed[index] = _Routed(connection.organization_id, routable.lead)
        settle = _take_in_routed(uow, routed, results)
        done: T | None = None
        if alongside is not None:
            so_far = [results[index] if result is None else result for index, result in enumerate(batch.results)]
            done = alongside.run(uow, connections, so_far)
        if settle is not None:  # the unit's last write: the events not yet in the outbox go in with it
            uow.execute_with_events(*settle)
        uow.commit()
    return results, done


def ingest(organization_id: uuid.UUID, lead: WebhookLead) -> Ingested:
    """One lead already routed to its organization, taken in as a batch of one; one transaction."""
    results: dict[int, Ingested] = {}
    with UnitOfWork() as uow:
        settle = _take_in_routed(uow, {0: _Routed(organization_id, lead)}, results)
        if settle is not None:
            uow.execute_with_events(*settle)
        uow.commit()
    return results[0]


def _take_in_routed(uow: UnitOfWork, routed: dict[int, _Routed], results: dict[int, Ingested]) -> _Statement | None:
    """Claim, hook, lock and take in the routed deliveries, in the caller's unit of work; the statement that
    writes their attributions and settles their claims is returned for the caller to run as its last write
    (`UnitOfWork.execute_with_events`), None when the batch owned no claim."""
    conn = uow.connection
    claimed = _claim_all(conn, routed)
    for index, item in routed.items():
        if index not in claimed:
            results[index] = Ingested(item.lead.channel, item.lead.external_ref, Outcome.REPLAYED, item.organization_id)
    owned = {index: routed[index] for index in sorted(claimed)}
    if owned:
        hooks = _campaign_hooks(conn, owned.values())
        contexts = _open_intakes(conn, owned.values())
        campaigns = {index: _campaign_of(item, hooks) for index, item in owned.items()}
        taken: dict[int, tuple[uuid.UUID, Outcome]] = {}
        for organization_id in contexts:
            mine = {index: item for index, item in owned.items() if item.organization_id == organization_id}
            taken.update(_take_in_all(uow, organization_id, mine, campaigns, contexts[organization_id]))
        attributions = []
        for index, item in owned.items():
            lead_id, outcome = taken[index]
            attributions.append(_attribution_row(item, lead_id, campaigns[index]))
            results[index] = Ingested(item.lead.channel, item.lead.external_ref, outcome, item.organization_id, lead_id)
        return _attribute_and_settle(attributions, [results[index] for index in owned])
    return None


def _claim_all(conn: Connection, routed: dict[int, _Routed]) -> set[int]:
    """The deliveries this transaction owns, claimed in one statement in key order (two batches sharing keys
    queue on the first they share). A concurrent claimant waits on the primary key until the owner commits
    (then it is a replay) or rolls back (then it owns it). A key twice in the batch: its first delivery."""
    first: dict[tuple[str, str], int] = {}
    for index, item in routed.items():
        first.setdefault((item.lead.channel, item.lead.external_ref), index)
    if not first:
        return set()
    claims = [
        {"channel": channel, "external_ref": ref, "organization_id": routed[first[channel, ref]].organization_id}
        for channel, ref in sorted(first)
    ]
    rows = conn.execute(_claim_statement(), {"claims": recordset_document(claims)}).all()
    return {first[row.channel, row.external_ref] for row in rows}


@cache
def _claim_statement() -> Insert:
    """`_claim_all`'s statement, built once: only its `claims` change."""
    src = recordset("claims", "claims", [], {"channel": Text, "external_ref": Text, "organization_id": Uuid})
    return (
        insert_skipping_conflicts(ingested_events, ["channel", "external_ref"])
        .from_select(
            ["channel", "external_ref", "organization_id", "outcome"],
            select(src.c.channel, src.c.external_ref, src.c.organization_id, literal(Outcome.CREATED.value))
            .select_from(src)
            .order_by(src.c.channel, src.c.external_ref),
        )
        .returning(ingested_events.c.channel, ingested_events.c.external_ref)
    )


def _campaign_hooks(conn: Connection, owned: Any) -> dict[tuple[uuid.UUID, str, str], uuid.UUID]:
    """Every hook the batch's leads name, found or minted: two statements per organization and channel."""
    wanted: dict[tuple[uuid.UUID, str], dict[str, str]] = {}
    for item in owned:
        if item.lead.hook is not None:
            ref, name = item.lead.hook
            wanted.setdefault((item.organization_id, item.lead.channel), {}).setdefault(ref, name)
    found: dict[tuple[uuid.UUID, str, str], uuid.UUID] = {}
    for (organization_id, channel), hooks in sorted(wanted.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        for ref, campaign_id in find_or_create_campaigns(conn, organization_id, channel, hooks).items():
            found[organization_id, channel, ref] = campaign_id
    return found


def _open_intakes(conn: Connection, owned: Any) -> dict[uuid.UUID, IntakeContext | None]:
    """Every person lock of the batch, then what intake reads of each organization: one statement for a
    batch of one organization (the usual), else the locks of all in one global order first."""
    items = list(owned)
    organizations = sorted({item.organization_id for item in items}, key=str)
    if len(organizations) == 1:
        people = [(item.lead.new.email, item.lead.new.phone) for item in items]
        return {organizations[0]: open_batch_intake(conn, organizations[0], people)}
    lock_people(conn, [(item.organization_id, item.lead.new.email, item.lead.new.phone) for item in items])
    return {org: open_intake(conn, org, None, None) for org in organizations}


def _campaign_of(item: _Routed, hooks: dict[tuple[uuid.UUID, str, str], uuid.UUID]) -> uuid.UUID | None:
    return hooks[item.organization_id, item.lead.channel, item.lead.hook[0]] if item.lead.hook else None


def _take_in_all(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    items: dict[int, _Routed],
    campaigns: dict[int, uuid.UUID | None],
    context: IntakeContext | None,
) -> dict[int, tuple[uuid.UUID, Outcome]]:
    """One organization's leads through `intake_many` (created or reopened), else the person's lead each
    duplicates: kept on a receipt and the timeline (`_record_resubmission`)."""
    if context is None or len(items) == 1:  # one lead: the create every entry point shares, as it is
        return {index: _take_in(uow, item, campaigns[index], context) for index, item in items.items()}
    arrivals = [
        Arrival(
            replace(item.lead.new, campaign_id=campaigns[index]), item.lead.channel, item.lead.received, item.lead.via
        )
        for index, item in items.items()
    ]
    taken = {}
    for (index, item), intake in zip(
        items.items(), intake_many(uow, organization_id, arrivals, context=context), strict=True
    ):
        if isinstance(intake, DuplicateLead):
            if not intake.existing.suppressed:  # a pseudonymized person: nothing of what they sent is kept
                _record_resubmission(uow.connection, organization_id, intake.existing.id, item.lead, campaigns[index])
            taken[index] = (intake.existing.id, Outcome.DUPLICATE)
        else:
            taken[index] = (intake.lead["id"], Outcome(intake.outcome.value))
    return taken


def _take_in(
    uow: UnitOfWork, item: _Routed, campaign_id: uuid.UUID | None, context: IntakeContext | None
) -> tuple[uuid.UUID, Outcome]:
    """One lead through `intake_lead` (created or reopened), else the person's lead it duplicates."""
    lead = item.lead
    try:
        intake = intake_lead(
            uow,
            item.organization_id,
            replace(lead.new, campaign_id=campaign_id),
            actor_user_id=None,
            channel=lead.channel,
            received=lead.received,
            via=lead.via,
            context=context,
        )
        return intake.lead["id"], Outcome(intake.outcome.value)
    except DuplicateLead as duplicate:
        if not duplicate.existing.suppressed:  # a pseudonymized person: nothing of what they sent is kept
            _record_resubmission(uow.connection, item.organization_id, duplicate.existing.id, lead, campaign_id)
        return duplicate.existing.id, Outcome.DUPLICATE


def _attribution_row(item: _Routed, lead_id: uuid.UUID, campaign_id: uuid.UUID | None) -> dict[str, Any]:
    attribution = item.lead.attribution
    return {
        "id": uuid7(),
        "organization_id": item.organization_id,
        "lead_id": lead_id,
        "channel": item.lead.channel,
        "campaign_id": campaign_id,
        "external_ref": item.lead.external_ref,
        **{k: (str(attribution[k]) if attribution.get(k) is not None else None) for k in ATTRIBUTION_FIELDS},
    }


_ATTRIBUTION_COLUMNS = {
    "id": Uuid,
    "organization_id": Uuid,
    "lead_id": Uuid,
    "channel": Text,
    "campaign_id": Uuid,
    "external_ref": Text,
    **dict.fromkeys(ATTRIBUTION_FIELDS, Text),
}


def _attribute_and_settle(attributions: list[dict[str, Any]], results: list[Ingested]) -> _Statement:
    """Every attribution of the batch, and what each owned claim became (its lead and outcome), in one
    statement (built once, whatever the batch's size), with its parameters."""
    rows = [
        {"channel": r.channel, "external_ref": r.external_ref, "lead_id": str(r.lead_id), "outcome": r.outcome.value}
        for r in results
    ]
    parameters = {"attributions": recordset_document(attributions), "settled_claims": recordset_document(rows)}
    return _settle_statement(), parameters


@cache
def _settle_statement() -> Update:
    src = recordset("attributions", "attributions", [], _ATTRIBUTION_COLUMNS)
    attribute = insert(lead_attributions).from_select(
        list(_ATTRIBUTION_COLUMNS), select(*(src.c[name] for name in _ATTRIBUTION_COLUMNS)).select_from(src)
    )
    settled = recordset(
        "settled_claims", "settled", [], {"channel": Text, "external_ref": Text, "lead_id": Uuid, "outcome": Text}
    )
    # The claims are found one by one by their primary key (a LATERAL probe it cannot flatten into a join)
    # and updated by their row addresses (`ctid = ANY(…)`, a TID scan). Joined to the batch's rows, which it
    # guesses at 100, the claim table was read whole every batch until it held tens of thousands of rows (the
    # claims are this transaction's own rows: no one else moves them between the probe and the update).
    claim = ingested_events.alias("claim")
    found = (
        select(literal_column("claim.ctid", _Tid()).label("claim_row"))
        .select_from(claim)
        .where(claim.c.channel == settled.c.channel, claim.c.external_ref == settled.c.external_ref)
        .limit(1)
        .lateral("found")
    )
    claimed_rows = (
        select(func.array_agg(found.c.claim_row))
        .select_from(settled)
        .join(found, true())
        .correlate(None)
        .scalar_subquery()
    )
    return (
        update(ingested_events)
        .where(
            literal_column("ingested_events.ctid", _Tid()) == func.any(cast(claimed_rows, ARRAY(_Tid()))),
            ingested_events.c.channel == settled.c.channel,
            ingested_events.c.external_ref == settled.c.external_ref,
        )
        .values(lead_id=settled.c.lead_id, outcome=settled.c.outcome)
        .add_cte(attribute.cte("new_attributions"))
    )


class _Tid(UserDefinedType):
    """PostgreSQL's row address (`tid`), for `ctid = ANY(…)`."""

    cache_ok = True

    def get_col_spec(self, **_: Any) -> str:
        return "TID"


def _record_resubmission(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, lead: WebhookLead, campaign_id: uuid.UUID | None
) -> None:
    """The person's lead is open (or won): what they sent is kept on a duplicate receipt and staff see it on
    the timeline, as for a minisite resubmission. The lead's own fields and campaign are left as they are."""
    receipt_id = record_receipt(
        conn, organization_id, lead_id, lead.channel, lead.received, duplicate=True, campaign_id=campaign_id
    )
    record_activity(
        conn,
        organization_id,
        lead_id,
        RESUBMITTED_ACTIVITY,
        {
            "channel": lead.channel,
            "receiptId": str(receipt_id),
            "campaignId": str(campaign_id) if campaign_id else None,
        },
    )
