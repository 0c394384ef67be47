"""Guards: every table that references leads has a merge decision and a pseudonymization decision.

Tables other areas add with a foreign key to leads (messages, attributions, touches, deals, tickets, …) are
moved by the generic merge move when it can apply; when it cannot (no primary key or organization_id, or a
unique index over the lead column), the table needs an entry in qualification.merge_policies.SPECIAL_POLICIES, and these
tests fail until it has one. The same for personal data: a referencing table with text or JSON columns needs
a decision in qualification.pseudonymize.TABLE_POLICIES.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, ForeignKey, Index, MetaData, String, Table, Text, Uuid
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.leads.tables import leads
from leadcrm.qualification.merge_policies import (
    SPECIAL_POLICIES,
    LeadReference,
    generic_move_blocker,
    lead_references,
    policy_for,
)
from leadcrm.qualification.pseudonymize import TABLE_POLICIES
from tests.support.erase_helpers import foreign_keys_to_leads


def test_every_reference_to_leads_is_moved_by_the_generic_move_or_a_named_policy():
    undecided = {r.key: generic_move_blocker(r) for r in lead_references() if policy_for(r) is None}
    assert undecided == {}, "add a policy to qualification.merge_policies.SPECIAL_POLICIES for these tables"


def test_every_special_policy_names_a_table_that_references_leads():
    referencing = {r.table.name for r in lead_references()}
    assert set(SPECIAL_POLICIES) <= referencing


def test_the_metadata_knows_every_foreign_key_to_leads_the_database_has():
    """The merge discovers references from the SQLAlchemy metadata: a foreign key made outside it (raw SQL in
    a migration) would be left behind on the deleted duplicate."""
    assert set(foreign_keys_to_leads()) == {r.key for r in lead_references()}


def test_the_generic_move_refuses_a_table_with_a_unique_index_over_the_lead():
    scratch = MetaData()
    Table("leads", scratch, Column("id", Uuid, primary_key=True))
    table = Table(
        "lead_scores_per_lead",
        scratch,
        Column("id", Uuid, primary_key=True),
        Column("organization_id", Uuid),
        Column("lead_id", Uuid, ForeignKey("leads.id")),
        Index("uq_one_per_lead", "lead_id", unique=True),
    )
    reference = LeadReference(table, table.c.lead_id)
    assert generic_move_blocker(reference) == "the unique index uq_one_per_lead includes the lead column"


def test_the_generic_move_refuses_a_table_keyed_by_the_lead_or_without_an_organization():
    scratch = MetaData()
    Table("leads", scratch, Column("id", Uuid, primary_key=True))
    keyed = Table("by_lead", scratch, Column("lead_id", Uuid, ForeignKey("leads.id"), primary_key=True))
    unscoped = Table(
        "unscoped", scratch, Column("id", Uuid, primary_key=True), Column("lead_id", Uuid, ForeignKey("leads.id"))
    )
    assert generic_move_blocker(LeadReference(keyed, keyed.c.lead_id)) is not None
    assert generic_move_blocker(LeadReference(unscoped, unscoped.c.lead_id)) is not None


def test_the_generic_move_applies_to_a_plain_child_table():
    scratch = MetaData()
    Table("leads", scratch, Column("id", Uuid, primary_key=True))
    table = Table(
        "lead_notes",
        scratch,
        Column("id", Uuid, primary_key=True),
        Column("organization_id", Uuid),
        Column("lead_id", Uuid, ForeignKey("leads.id")),
    )
    assert generic_move_blocker(LeadReference(table, table.c.lead_id)) is None


_TEXTUAL = (Text, String, JSON, JSONB)


def test_every_referencing_table_with_text_or_json_has_a_pseudonymization_decision():
    undecided = sorted(
        r.table.name
        for r in lead_references()
        if r.table.name not in TABLE_POLICIES and any(isinstance(c.type, _TEXTUAL) for c in r.table.columns)
    )
    assert undecided == [], "add a decision to qualification.pseudonymize.TABLE_POLICIES for these tables"


def test_leads_itself_is_not_a_reference():
    assert all(r.table is not leads for r in lead_references())
