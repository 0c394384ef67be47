"""The pure rules every lead move obeys (leadcrm.leads.rules.moves), without a database."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from leadcrm.leads.rules.moves import (
    BulkCandidate,
    LeadPosition,
    MoveRefusal,
    MoveRefused,
    convert_refusal,
    distinct_in_order,
    is_converted,
    lost_reason_after,
    lost_reason_correction,
    plan_bulk_move,
    plan_primary_swap,
    plan_stage_move,
    requested_status_needs_move,
    target_refusal,
)
from leadcrm.pipelines.rules.statuses import StageCategory as C

SALES = uuid.uuid4()
COURSES = uuid.uuid4()


@dataclass(frozen=True)
class Stage:
    id: uuid.UUID
    pipeline_id: uuid.UUID
    category: C
    archived_at: datetime | None = None


def stage(category: C, pipeline_id: uuid.UUID = SALES, *, archived: bool = False) -> Stage:
    return Stage(uuid.uuid4(), pipeline_id, category, datetime.now(UTC) if archived else None)


def lead_on(current: Stage, *, converted: bool = False, lost_reason: str | None = None) -> LeadPosition:
    return LeadPosition(
        lead_id=uuid.uuid4(),
        pipeline_id=current.pipeline_id,
        stage_id=current.id,
        status=current.category,
        converted=converted,
        lost_reason=lost_reason,
    )


def refusal_of(call) -> MoveRefusal:
    with pytest.raises(MoveRefused) as raised:
        call()
    return raised.value.refusal


# -- is_converted -------------------------------------------------------------------------------------------


def test_a_lead_with_a_converted_membership_is_converted_wherever_it_stands():
    assert is_converted(C.CUSTOMER, uuid.uuid4())


def test_a_lead_on_a_converted_stage_is_converted():
    assert is_converted("converted", None)


@pytest.mark.parametrize("category", [c for c in C if c != C.CONVERTED])
def test_a_lead_without_membership_elsewhere_is_not_converted(category):
    assert not is_converted(category, None)


# -- converted only via convert -----------------------------------------------------------------------------


def test_an_unconverted_lead_may_not_enter_a_converted_stage():
    assert convert_refusal(C.CONVERTED, lead_converted=False) is MoveRefusal.CONVERT_REQUIRED


def test_a_converted_lead_may_enter_a_converted_stage():
    assert convert_refusal(C.CONVERTED, lead_converted=True) is None


@pytest.mark.parametrize("category", [c for c in C if c != C.CONVERTED])
def test_every_other_category_needs_no_convert(category):
    assert convert_refusal(category, lead_converted=False) is None


# -- target_refusal -----------------------------------------------------------------------------------------


def test_a_stage_of_another_pipeline_is_not_in_pipeline():
    assert target_refusal(SALES, stage(C.CONTACTED, COURSES), False) is MoveRefusal.NOT_IN_PIPELINE


def test_an_archived_stage_is_refused():
    assert target_refusal(SALES, stage(C.CONTACTED, archived=True), False) is MoveRefusal.STAGE_ARCHIVED


def test_the_pipeline_is_checked_before_the_conversion():
    assert target_refusal(SALES, stage(C.CONVERTED, COURSES), False) is MoveRefusal.NOT_IN_PIPELINE


def test_an_active_stage_of_the_pipeline_is_fine():
    assert target_refusal(SALES, stage(C.CALLBACK), False) is None


# -- plan_stage_move ----------------------------------------------------------------------------------------


def test_a_move_to_the_current_stage_is_no_move():
    current = stage(C.NEW)
    assert plan_stage_move(lead_on(current), current) is None


def test_a_move_to_the_current_stage_is_no_move_even_if_that_stage_was_archived_since():
    current = stage(C.NEW, archived=True)
    assert plan_stage_move(lead_on(current), current) is None


def test_a_move_carries_both_stages_and_both_statuses():
    current, target = stage(C.NEW), stage(C.CONTACTED)
    lead = lead_on(current)
    move = plan_stage_move(lead, target)
    assert move is not None
    assert (move.from_stage_id, move.to_stage_id) == (current.id, target.id)
    assert (move.from_status, move.to_status) == (C.NEW, C.CONTACTED)
    assert move.lead_id == lead.lead_id
    assert move.category_changed


def test_a_same_category_move_is_a_move_without_a_category_change():
    move = plan_stage_move(lead_on(stage(C.NEW)), stage(C.NEW))
    assert move is not None
    assert not move.category_changed


def test_an_unconverted_lead_aimed_at_converted_is_refused():
    assert refusal_of(lambda: plan_stage_move(lead_on(stage(C.NEW)), stage(C.CONVERTED))) is (
        MoveRefusal.CONVERT_REQUIRED
    )


def test_a_converted_lead_may_reposition_between_converted_stages():
    lead = lead_on(stage(C.CONVERTED), converted=True)
    move = plan_stage_move(lead, stage(C.CONVERTED))
    assert move is not None and not move.category_changed


def test_a_converted_lead_may_leave_converted():
    move = plan_stage_move(lead_on(stage(C.CONVERTED), converted=True), stage(C.CUSTOMER))
    assert move is not None and move.to_status == C.CUSTOMER


def test_a_stage_of_another_pipeline_is_refused():
    assert refusal_of(lambda: plan_stage_move(lead_on(stage(C.NEW)), stage(C.NEW, COURSES))) is (
        MoveRefusal.NOT_IN_PIPELINE
    )


# -- lost needs a reason ------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", [None, ""])
def test_entering_lost_without_a_reason_is_refused(given):
    assert refusal_of(lambda: lost_reason_after(C.NEW, C.LOST, None, given)) is MoveRefusal.LOST_REASON_REQUIRED


def test_entering_lost_with_a_reason_keeps_it_and_records_it():
    assert lost_reason_after(C.CONTACTED, C.LOST, None, "Too far") == ("Too far", "Too far")


def test_moving_between_lost_stages_keeps_the_reason_and_records_none():
    assert lost_reason_after(C.LOST, C.LOST, "Too far", None) == ("Too far", None)


def test_moving_between_lost_stages_with_a_new_reason_replaces_and_records_it():
    assert lost_reason_after(C.LOST, C.LOST, "Too far", "Price") == ("Price", "Price")


def test_leaving_lost_clears_the_reason():
    assert lost_reason_after(C.LOST, C.CONTACTED, "Too far", None) == (None, None)


@pytest.mark.parametrize("to_status", [c for c in C if c != C.LOST])
def test_a_reason_for_a_status_that_is_not_lost_is_refused(to_status):
    assert refusal_of(lambda: lost_reason_after(C.NEW, to_status, None, "Too far")) is (
        MoveRefusal.LOST_REASON_NOT_LOST
    )


def test_a_lost_move_plans_the_reason():
    move = plan_stage_move(lead_on(stage(C.NEW)), stage(C.LOST), lost_reason="Price")
    assert move is not None
    assert (move.lost_reason, move.status_reason) == ("Price", "Price")


def test_a_lost_reason_correction_on_a_lost_lead():
    assert lost_reason_correction(lead_on(stage(C.LOST), lost_reason="Too far"), "Price") == "Price"


def test_the_same_lost_reason_again_is_no_correction():
    assert lost_reason_correction(lead_on(stage(C.LOST), lost_reason="Too far"), "Too far") is None


def test_a_lost_reason_correction_on_a_lead_that_is_not_lost_is_refused():
    assert refusal_of(lambda: lost_reason_correction(lead_on(stage(C.NEW)), "Price")) is (
        MoveRefusal.LOST_REASON_NOT_LOST
    )


# -- bare status ----------------------------------------------------------------------------------------------


def test_a_bare_status_the_lead_already_has_needs_no_move():
    assert not requested_status_needs_move(C.NEW, C.NEW)


def test_a_bare_status_the_lead_does_not_have_needs_a_move():
    assert requested_status_needs_move(C.NEW, C.CONTACTED)


# -- set-primary ------------------------------------------------------------------------------------------------


def test_a_swap_re_mirrors_the_status_from_the_promoted_stage():
    move = plan_primary_swap(lead_on(stage(C.NEW)), stage(C.TRIAL_BOOKED, COURSES))
    assert (move.from_status, move.to_status) == (C.NEW, C.TRIAL_BOOKED)
    assert move.category_changed


def test_a_swap_to_the_same_category_is_no_category_change():
    assert not plan_primary_swap(lead_on(stage(C.NEW)), stage(C.NEW, COURSES)).category_changed


def test_a_swap_cannot_fabricate_converted():
    assert refusal_of(lambda: plan_primary_swap(lead_on(stage(C.NEW)), stage(C.CONVERTED, COURSES))) is (
        MoveRefusal.CONVERT_REQUIRED
    )


def test_a_converted_lead_may_swap_onto_a_converted_stage():
    move = plan_primary_swap(lead_on(stage(C.CONVERTED), converted=True), stage(C.CONVERTED, COURSES))
    assert move.to_status == C.CONVERTED


def test_a_swap_into_lost_needs_a_reason():
    assert refusal_of(lambda: plan_primary_swap(lead_on(stage(C.NEW)), stage(C.LOST, COURSES))) is (
        MoveRefusal.LOST_REASON_REQUIRED
    )


# -- bulk ---------------------------------------------------------------------------------------------------------


def candidate(lead: LeadPosition, placement_stage_id: uuid.UUID | None = None) -> BulkCandidate:
    return BulkCandidate(lead_id=lead.lead_id, position=lead, placement_stage_id=placement_stage_id)


def test_distinct_in_order_keeps_the_first_occurrence():
    a, b = uuid.uuid4(), uuid.uuid4()
    assert distinct_in_order([b, a, b, a]) == (b, a)


def test_a_bulk_plan_sorts_leads_by_where_they_stand():
    target = stage(C.CONTACTED)
    primary = lead_on(stage(C.NEW))
    already = lead_on(target)
    secondary_lead = lead_on(stage(C.NEW, COURSES))
    secondary_stage = uuid.uuid4()
    outsider = lead_on(stage(C.NEW, COURSES))
    unknown = uuid.uuid4()
    candidates = {
        c.lead_id: c
        for c in (
            candidate(primary),
            candidate(already),
            candidate(secondary_lead, secondary_stage),
            candidate(outsider),
        )
    }
    requested = [primary.lead_id, already.lead_id, secondary_lead.lead_id, outsider.lead_id, unknown]
    plan = plan_bulk_move(requested, candidates, target, None)
    assert [m.lead_id for m in plan.primary_moves] == [primary.lead_id]
    assert plan.secondary_moves == [(secondary_lead.lead_id, secondary_stage)]
    assert plan.unchanged == [already.lead_id]
    assert plan.skipped == [(outsider.lead_id, "not_in_pipeline"), (unknown, "not_found")]
    assert plan.moved == [primary.lead_id, already.lead_id, secondary_lead.lead_id]


def test_a_bulk_plan_skips_unconverted_leads_aimed_at_converted_primary_or_secondary():
    target = stage(C.CONVERTED)
    primary = lead_on(stage(C.NEW))
    secondary = lead_on(stage(C.NEW, COURSES))
    converted = lead_on(stage(C.CONVERTED), converted=True)
    candidates = {c.lead_id: c for c in (candidate(primary), candidate(secondary, uuid.uuid4()), candidate(converted))}
    plan = plan_bulk_move([primary.lead_id, secondary.lead_id, converted.lead_id], candidates, target, None)
    assert plan.skipped == [(primary.lead_id, "convert_required"), (secondary.lead_id, "convert_required")]
    assert plan.moved == [converted.lead_id]


def test_a_bulk_plan_into_lost_without_a_reason_is_refused_when_a_lead_would_enter_lost():
    lead = lead_on(stage(C.NEW))
    assert refusal_of(lambda: plan_bulk_move([lead.lead_id], {lead.lead_id: candidate(lead)}, stage(C.LOST), None)) is (
        MoveRefusal.LOST_REASON_REQUIRED
    )


def test_a_bulk_plan_between_lost_stages_needs_no_reason_and_keeps_each_leads_own():
    lead = lead_on(stage(C.LOST), lost_reason="Too far")
    plan = plan_bulk_move([lead.lead_id], {lead.lead_id: candidate(lead)}, stage(C.LOST), None)
    (move,) = plan.primary_moves
    assert move.lost_reason == "Too far"


def test_a_bulk_plan_into_lost_with_a_reason_gives_it_to_leads_entering_lost_only():
    entering = lead_on(stage(C.NEW))
    staying = lead_on(stage(C.LOST), lost_reason="Too far")
    candidates = {c.lead_id: c for c in (candidate(entering), candidate(staying))}
    plan = plan_bulk_move([entering.lead_id, staying.lead_id], candidates, stage(C.LOST), "Season over")
    reasons = {m.lead_id: m.lost_reason for m in plan.primary_moves}
    assert reasons == {entering.lead_id: "Season over", staying.lead_id: "Too far"}


def test_a_bulk_reason_for_a_target_that_is_not_lost_is_refused():
    assert refusal_of(lambda: plan_bulk_move([], {}, stage(C.CONTACTED), "Too far")) is (
        MoveRefusal.LOST_REASON_NOT_LOST
    )


def test_a_bulk_plan_names_each_repeated_id_once():
    lead = lead_on(stage(C.NEW))
    plan = plan_bulk_move([lead.lead_id, lead.lead_id], {lead.lead_id: candidate(lead)}, stage(C.CONTACTED), None)
    assert len(plan.primary_moves) == 1
    assert plan.moved == [lead.lead_id]


def test_a_bulk_plan_for_a_secondary_placement_already_on_the_target_is_unchanged():
    target = stage(C.CONTACTED, COURSES)
    lead = lead_on(stage(C.NEW))
    plan = plan_bulk_move([lead.lead_id], {lead.lead_id: candidate(lead, target.id)}, target, None)
    assert plan.unchanged == [lead.lead_id]
    assert plan.secondary_moves == []
