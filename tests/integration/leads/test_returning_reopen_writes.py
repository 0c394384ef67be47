"""What a reopen writes (spec "Returning leads" → "What a reopen writes"), through `return_lead`, the one writer
every entry point shares: the move back to a new stage, unarchive/unpause, the return call, the return
columns, the owner, the note appended in SQL, the filled fields and campaign, the history and the events.
Won and open leads are left alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from leadcrm.leads.moves import lock_lead
from leadcrm.leads.returning import note_sql, return_lead
from leadcrm.leads.rules.returning import ReturnKind, ReturnTouch, ReturnVia, append_note
from leadcrm.leads.tables import leads
from leadcrm.pipelines.tables import pipelines
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound
from tests.support.capture_helpers import make_campaign
from tests.support.factories import make_caller, make_membership, make_organization, make_user
from tests.support.lead_moves_helpers import (
    add_stage,
    archive_stage,
    default_pipeline,
    make_pipeline,
    pipeline_of,
    placements,
)
from tests.support.pipelines_helpers import place_lead
from tests.support.returning_helpers import insert_lead, lead_state, outbox_of, status_events_of, timeline_of


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """A return publishes its events after commit; the bus exists."""


def _return(org_id, lead_id, *, via=ReturnVia.PUBLIC_CAPTURE, actor_user_id=None, **kwargs):
    with UnitOfWork() as uow:
        outcome = return_lead(uow, org_id, lead_id, via=via, actor_user_id=actor_user_id, **kwargs)
        uow.commit()
    return outcome


def _archive_pipeline(pipeline_id) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(pipelines).where(pipelines.c.id == pipeline_id).values(archived_at=func.now()))


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def sales(owner):
    return default_pipeline(owner.org_id)


# --- the move back to new ---------------------------------------------------------------------------------


def test_a_lost_lead_moves_to_the_first_active_new_stage_of_its_own_pipeline(owner):
    courses = make_pipeline(owner.org_id, ["new", "new", "contacted", "customer", "lost"])
    archive_stage(courses.stage("new", 0))
    lead_id = insert_lead(owner.org_id, courses, "lost")
    outcome = _return(owner.org_id, lead_id)
    assert outcome.kind is ReturnKind.TO_NEW_STAGE
    lead = lead_state(lead_id)
    assert (lead["pipeline_id"], lead["stage_id"], lead["status"]) == (courses.id, courses.stage("new", 1), "new")
    assert lead["lost_reason"] is None  # it describes the current state; the history keeps it


def test_a_frozen_lead_moves_to_new_too(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "frozen")
    _return(owner.org_id, lead_id)
    lead = lead_state(lead_id)
    assert (lead["stage_id"], lead["status"]) == (sales.stage("new"), "new")


def test_the_move_records_a_status_event_with_the_acting_staff_member(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id, via=ReturnVia.STAFF_REOPEN, actor_user_id=owner.user.id)
    [event] = status_events_of(lead_id)
    assert (event["from_status"], event["to_status"]) == ("lost", "new")
    assert (event["from_stage_id"], event["to_stage_id"]) == (sales.stage("lost"), sales.stage("new"))
    assert event["actor_user_id"] == owner.user.id


def test_a_public_return_records_no_actor(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id)
    [event] = status_events_of(lead_id)
    assert event["actor_user_id"] is None


def test_the_move_is_on_the_timeline_as_a_stage_move_marked_as_a_return(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "frozen")
    _return(owner.org_id, lead_id, via=ReturnVia.STAFF_CREATE, actor_user_id=owner.user.id)
    [moved] = timeline_of(lead_id, "stage_moved")
    assert moved["payload"]["fromStatus"] == "frozen"
    assert moved["payload"]["toStatus"] == "new"
    assert moved["payload"]["toStageId"] == str(sales.stage("new"))
    assert (moved["payload"]["returned"], moved["payload"]["via"]) == (True, "staff_create")
    assert moved["actor_user_id"] == owner.user.id


def test_lead_status_changed_goes_out_from_the_closed_status_to_new_marked_as_a_return(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id, via=ReturnVia.META)
    [event] = outbox_of(lead_id, "lead.status_changed")
    payload = event["payload"]
    assert (payload["fromStatus"], payload["toStatus"]) == ("lost", "new")
    assert (payload["returned"], payload["via"], payload["actorUserId"]) == (True, "meta", None)
    assert "recoveredSignup" not in payload  # only a released join is a recovered signup


def test_the_status_changed_at_is_bumped_by_the_move(owner, sales):
    long_ago = datetime(2025, 1, 1, tzinfo=UTC)
    lead_id = insert_lead(owner.org_id, sales, "lost", status_changed_at=long_ago)
    _return(owner.org_id, lead_id)
    assert lead_state(lead_id)["status_changed_at"] > long_ago


def test_a_lead_whose_pipeline_is_archived_goes_to_the_default_pipelines_new_stage(owner, sales):
    courses = make_pipeline(owner.org_id, ["new", "contacted", "customer", "lost"])
    lead_id = insert_lead(owner.org_id, courses, "lost")
    _archive_pipeline(courses.id)
    _return(owner.org_id, lead_id)
    lead = lead_state(lead_id)
    assert (lead["pipeline_id"], lead["stage_id"], lead["status"]) == (sales.id, sales.stage("new"), "new")
    [moved] = timeline_of(lead_id, "stage_moved")
    assert moved["payload"]["fromPipelineId"] == str(courses.id)
    assert moved["payload"]["pipelineId"] == str(sales.id)


def test_a_secondary_placement_in_the_default_pipeline_merges_into_the_returned_primary(owner, sales):
    courses = make_pipeline(owner.org_id, ["new", "contacted", "customer", "lost"])
    lead_id = insert_lead(owner.org_id, courses, "lost")
    place_lead(owner.org_id, lead_id, sales.id, sales.stage("contacted"))
    _archive_pipeline(courses.id)
    _return(owner.org_id, lead_id)
    assert lead_state(lead_id)["pipeline_id"] == sales.id
    assert placements(lead_id) == {}  # in the default pipeline once, as its primary


def test_a_pipeline_whose_new_stages_are_all_archived_falls_back_to_the_default_pipeline(owner, sales):
    courses = add_stage(make_pipeline(owner.org_id, ["new", "contacted", "customer", "lost"]), owner.org_id, "new")
    for stage_id, category in pipeline_of(courses.id).stages:
        if category == "new":
            archive_stage(stage_id)
    lead_id = insert_lead(owner.org_id, courses, "lost")
    _return(owner.org_id, lead_id)
    assert lead_state(lead_id)["stage_id"] == sales.stage("new")


def test_an_archived_lead_that_was_still_open_keeps_its_stage_and_status(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "trial_booked", archived_at=datetime.now(UTC))
    outcome = _return(owner.org_id, lead_id)
    assert outcome.kind is ReturnKind.IN_PLACE
    lead = lead_state(lead_id)
    assert lead["archived_at"] is None
    assert (lead["stage_id"], lead["status"]) == (sales.stage("trial_booked"), "trial_booked")
    assert status_events_of(lead_id) == []
    assert outbox_of(lead_id, "lead.status_changed") == []
    [returned] = timeline_of(lead_id, "lead_returned")
    assert (returned["payload"]["fromStatus"], returned["payload"]["wasArchived"]) == ("trial_booked", True)


def test_an_archived_lost_lead_is_unarchived_and_moved_to_new(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", archived_at=datetime.now(UTC))
    _return(owner.org_id, lead_id)
    lead = lead_state(lead_id)
    assert (lead["archived_at"], lead["status"]) == (None, "new")


# --- the rest of the row --------------------------------------------------------------------------------------


def test_a_return_unpauses_the_lead_and_resets_its_unanswered_calls(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", paused_at=datetime.now(UTC), consecutive_no_answer_count=3)
    _return(owner.org_id, lead_id)
    lead = lead_state(lead_id)
    assert (lead["paused_at"], lead["consecutive_no_answer_count"]) == (None, 0)


def test_a_return_makes_a_call_due_now_and_drops_the_previous_follow_up(owner, sales):
    lead_id = insert_lead(
        owner.org_id,
        sales,
        "lost",
        next_action_at=datetime.now(UTC) + timedelta(days=30),
        next_action_type="email",
        next_action_note="Send the price list",
    )
    _return(owner.org_id, lead_id)
    lead = lead_state(lead_id)
    assert lead["next_action_at"] == lead["returned_at"]
    assert (lead["next_action_type"], lead["next_action_note"]) == ("call", None)


def test_a_return_records_when_from_what_and_through_which_entry_point(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "frozen")
    before = datetime.now(UTC)
    _return(owner.org_id, lead_id, via=ReturnVia.WHATSAPP)
    lead = lead_state(lead_id)
    assert lead["returned_at"] >= before - timedelta(seconds=5)
    assert (lead["returned_from_status"], lead["returned_via"], lead["return_count"]) == ("frozen", "whatsapp", 1)


def test_every_return_counts(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id)
    with get_engine().begin() as conn:
        conn.execute(
            update(leads)
            .where(leads.c.id == lead_id)
            .values(status="lost", stage_id=sales.stage("lost"), lost_reason="no_answer")
        )
    _return(owner.org_id, lead_id, via=ReturnVia.STAFF_REOPEN, actor_user_id=owner.user.id)
    lead = lead_state(lead_id)
    assert (lead["return_count"], lead["returned_via"]) == (2, "staff_reopen")
    assert len(timeline_of(lead_id, "lead_returned")) == 2


def test_the_lead_returned_entry_keeps_the_status_it_came_back_from_the_entry_point_and_the_words(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id, touch=ReturnTouch(note="Is the morning class still on?"))
    [entry] = timeline_of(lead_id, "lead_returned")
    assert entry["payload"] == {
        "fromStatus": "lost",
        "via": "public_capture",
        "note": "Is the morning class still on?",
        "wasArchived": False,
        "returnCount": 1,
    }


def test_lead_returned_goes_out_for_the_follow_up_sync_with_ids_only(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    _return(owner.org_id, lead_id, touch=ReturnTouch(note="Call me back", email="ada@example.com"))
    [event] = outbox_of(lead_id, "lead.returned")
    payload = event["payload"]
    assert payload["leadId"] == str(lead_id)
    assert (payload["via"], payload["fromStatus"], payload["toStatus"], payload["returnCount"]) == (
        "public_capture",
        "lost",
        "new",
        1,
    )
    assert payload["nextActionType"] == "call"
    assert "ada@example.com" not in str(payload) and "Call me back" not in str(payload)


# --- the owner -------------------------------------------------------------------------------------------------


def test_an_unowned_lead_on_a_public_path_goes_to_the_organizations_oldest_active_owner(owner, sales):
    make_membership(owner.organization, make_user(), role="owner")  # a younger owner
    make_membership(owner.organization, make_user(), role="coach")
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id)
    assert lead_state(lead_id)["assigned_to_user_id"] == owner.user.id
    [change] = timeline_of(lead_id, "owner_changed")
    assert change["payload"] == {"fromUserId": None, "toUserId": str(owner.user.id)}


def test_the_default_assignee_is_an_active_owner():
    org = make_organization()
    pipeline = default_pipeline(org.id)
    make_membership(org, make_user(), role="owner", status="suspended")
    make_membership(org, make_user(), role="owner", deleted=True)
    active = make_membership(org, make_user(), role="owner")
    lead_id = insert_lead(org.id, pipeline, "lost")
    _return(org.id, lead_id)
    assert lead_state(lead_id)["assigned_to_user_id"] == active.user_id


def test_an_organization_without_an_owner_leaves_the_lead_unowned():
    org = make_organization()
    lead_id = insert_lead(org.id, default_pipeline(org.id), "lost")
    _return(org.id, lead_id)
    assert lead_state(lead_id)["assigned_to_user_id"] is None


def test_an_unowned_lead_on_a_staff_path_goes_to_the_sales_actor(owner, sales):
    coach = make_caller(role="coach", organization=owner.organization)
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id, via=ReturnVia.STAFF_REOPEN, actor_user_id=coach.user.id)
    assert lead_state(lead_id)["assigned_to_user_id"] == coach.user.id


def test_a_chosen_assignee_takes_an_unowned_lead(owner, sales):
    coach = make_caller(role="coach", organization=owner.organization)
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id, via=ReturnVia.STAFF_CREATE, actor_user_id=owner.user.id, owner_user_id=coach.user.id)
    assert lead_state(lead_id)["assigned_to_user_id"] == coach.user.id


def test_an_existing_owner_stays(owner, sales):
    coach = make_caller(role="coach", organization=owner.organization)
    lead_id = insert_lead(owner.org_id, sales, "lost", assigned_to_user_id=coach.user.id)
    _return(owner.org_id, lead_id, via=ReturnVia.STAFF_REOPEN, actor_user_id=owner.user.id)
    assert lead_state(lead_id)["assigned_to_user_id"] == coach.user.id
    assert timeline_of(lead_id, "owner_changed") == []


# --- the note, in SQL -------------------------------------------------------------------------------------------


def test_the_entry_points_note_is_appended_on_a_line_of_its_own(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", note="Asked about prices.")
    _return(owner.org_id, lead_id, touch=ReturnTouch(note="Wants a trial"))
    assert lead_state(lead_id)["note"] == "Asked about prices.\nWants a trial"


def test_a_repeat_of_the_notes_last_sentence_is_not_appended(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", note="Asked about prices. Wants a trial.")
    _return(owner.org_id, lead_id, touch=ReturnTouch(note="Wants a trial"))
    assert lead_state(lead_id)["note"] == "Asked about prices. Wants a trial."


def test_a_lead_without_a_note_gets_the_entry_points_note(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", note=None)
    _return(owner.org_id, lead_id, touch=ReturnTouch(note="  Wants a trial "))
    assert lead_state(lead_id)["note"] == "Wants a trial"


def test_no_note_leaves_the_note_alone(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", note="Asked about prices.")
    _return(owner.org_id, lead_id, touch=ReturnTouch(note="   "))
    assert lead_state(lead_id)["note"] == "Asked about prices."


def test_the_append_reads_the_note_the_row_has_when_it_is_written(owner, sales):
    """The note is computed by PostgreSQL from the row, not from a value read earlier in Python: a note
    written just before (here: in the same transaction, after the lead was locked) is kept."""
    lead_id = insert_lead(owner.org_id, sales, "lost", note="First.")
    with UnitOfWork() as uow:
        lock_lead(uow.connection, owner.org_id, lead_id)
        uow.connection.execute(update(leads).where(leads.c.id == lead_id).values(note="First. Second."))
        return_lead(uow, owner.org_id, lead_id, via=ReturnVia.META, actor_user_id=None, touch=ReturnTouch("Third"))
        uow.commit()
    assert lead_state(lead_id)["note"] == "First. Second.\nThird"


NOTE_CASES = [
    (None, "Wants a trial"),
    ("", "Wants a trial"),
    ("  \n ", "Wants a trial"),
    ("Called twice.", "Wants a trial"),
    ("Wants a trial", "Wants a trial"),
    ("Wants a trial.", "Wants a trial"),
    ("Wants a trial!  \n", " Wants a trial? "),
    ("Called twice. Wants a trial", "Wants a trial"),
    ("Called twice?\nWants a trial.", "Wants a trial"),
    ("Called twice\nWants a trial", "Wants a trial"),
    ("Wants a trial. Called twice.", "Wants a trial"),
    ("I want a trial", "want a trial"),
    ("Xwants a trial", "wants a trial"),
    ("wants a trial", "Wants a trial"),
    ("Short", "A much longer sentence than the note"),
    ("Line one…  Wants a trial", "Wants a trial"),
    ("הגיעה דרך הטופס. רוצה שיעור ניסיון", "רוצה שיעור ניסיון"),
    ("50% off? Wants [a] trial (today)", "Wants [a] trial (today)"),  # regex characters are text
]


@pytest.mark.parametrize(("note", "addition"), NOTE_CASES)
def test_postgresql_appends_exactly_as_the_domain_rule_says(owner, sales, note, addition):
    lead_id = insert_lead(owner.org_id, sales, "lost", note=note)
    expected = append_note(note, addition)
    with get_engine().connect() as conn:
        appended = conn.execute(select(note_sql(addition)).where(leads.c.id == lead_id)).scalar_one()
    assert appended == (note if expected is None else expected)


# --- empty fields filled, campaign only when none ---------------------------------------------------------------


def test_empty_name_email_and_phone_are_filled_from_the_touch(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", name=None, email=None, phone=None, note="x")
    touch = ReturnTouch(name="Ada Lovelace", email="ada@example.com", phone="050-1234567")
    _return(owner.org_id, lead_id, touch=touch)
    lead = lead_state(lead_id)
    assert (lead["name"], lead["email"], lead["phone"]) == ("Ada Lovelace", "ada@example.com", "050-1234567")
    assert lead["phone_digits"] == "0501234567"


def test_existing_name_email_and_phone_are_never_overwritten(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", name="Ada", email="ada@example.com", phone="050-1234567")
    _return(owner.org_id, lead_id, touch=ReturnTouch(name="Ada L.", email="ada@work.test", phone="+972 52 000 0000"))
    lead = lead_state(lead_id)
    assert (lead["name"], lead["email"], lead["phone"]) == ("Ada", "ada@example.com", "050-1234567")


def test_the_campaign_is_set_when_the_lead_has_none(owner, sales):
    campaign = make_campaign(owner.org_id)
    lead_id = insert_lead(owner.org_id, sales, "lost")
    _return(owner.org_id, lead_id, touch=ReturnTouch(campaign_id=campaign))
    assert lead_state(lead_id)["campaign_id"] == campaign


def test_the_campaign_the_lead_has_is_kept(owner, sales):
    first, later = make_campaign(owner.org_id, name="First"), make_campaign(owner.org_id, name="Later")
    lead_id = insert_lead(owner.org_id, sales, "lost", campaign_id=first)
    _return(owner.org_id, lead_id, touch=ReturnTouch(campaign_id=later))
    assert lead_state(lead_id)["campaign_id"] == first


# --- leads that are not reopened -----------------------------------------------------------------------------


@pytest.mark.parametrize(("category", "archived"), [("converted", False), ("customer", False), ("customer", True)])
def test_a_won_lead_is_never_reopened(owner, sales, category, archived):
    lead_id = insert_lead(owner.org_id, sales, category, archived_at=datetime.now(UTC) if archived else None)
    before = lead_state(lead_id)
    outcome = _return(owner.org_id, lead_id, touch=ReturnTouch(note="Back again"))
    assert outcome.kind is ReturnKind.WON
    assert lead_state(lead_id) == before
    assert timeline_of(lead_id, "lead_returned") == [] and outbox_of(lead_id, "lead.returned") == []


def test_a_lost_lead_linked_to_a_membership_is_won_and_never_reopened(owner, sales):
    member = make_membership(owner.organization, make_user(), role="member")
    lead_id = insert_lead(owner.org_id, sales, "lost", converted_membership_id=member.id)
    assert _return(owner.org_id, lead_id).kind is ReturnKind.WON
    assert lead_state(lead_id)["status"] == "lost"


@pytest.mark.parametrize("category", ["new", "contacted", "callback", "trial_booked", "no_show"])
def test_an_open_lead_is_left_exactly_as_it_is(owner, sales, category):
    lead_id = insert_lead(owner.org_id, sales, category)
    before = lead_state(lead_id)
    outcome = _return(owner.org_id, lead_id, touch=ReturnTouch(note="Back again", email="new@example.com"))
    assert outcome.kind is ReturnKind.ALREADY_OPEN
    assert outcome.lead["id"] == lead_id and outcome.lead["return_count"] == 0
    assert lead_state(lead_id) == before
    assert status_events_of(lead_id) == [] and timeline_of(lead_id, "lead_returned") == []


def test_another_organizations_lead_is_not_found(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    with pytest.raises(NotFound):
        _return(make_organization().id, lead_id)
    with pytest.raises(NotFound):
        _return(owner.org_id, uuid.uuid4())
    assert lead_state(lead_id)["status"] == "lost"
