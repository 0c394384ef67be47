"""leadcrm.leads.rules.returning: which leads come back and how, the note's sentence rule, what the touch fills,
who owns a returned lead, and the platform's released-join detail."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from leadcrm.leads.rules.returning import (
    JoinRelease,
    LeadFacts,
    ReturnKind,
    ReturnTouch,
    append_note,
    classify_return,
    ends_with_sentence,
    filled_fields,
    is_closed_lead,
    is_won_lead,
    owner_after_return,
    parse_join_release,
    sentence_core,
)
from leadcrm.pipelines.rules.statuses import StageCategory

MEMBERSHIP = uuid.UUID("01890000-0000-7000-8000-0000000000aa")
ORG = uuid.UUID("01890000-0000-7000-8000-000000000001")
USER = uuid.UUID("01890000-0000-7000-8000-000000000002")
ANA, BEN, OWNER = (uuid.UUID(f"01890000-0000-7000-8000-00000000010{i}") for i in range(3))
CAMPAIGN, OTHER_CAMPAIGN = uuid.UUID(int=1), uuid.UUID(int=2)

# --- which leads come back, and how ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "archived", "kind"),
    [
        (StageCategory.LOST, False, ReturnKind.TO_NEW_STAGE),
        (StageCategory.FROZEN, False, ReturnKind.TO_NEW_STAGE),
        (StageCategory.LOST, True, ReturnKind.TO_NEW_STAGE),  # archived and lost: back to a new stage too
        (StageCategory.FROZEN, True, ReturnKind.TO_NEW_STAGE),
        (StageCategory.TRIAL_BOOKED, True, ReturnKind.IN_PLACE),  # archived but open: keeps its stage
        (StageCategory.NEW, True, ReturnKind.IN_PLACE),
        (StageCategory.NO_SHOW, True, ReturnKind.IN_PLACE),
        (StageCategory.NEW, False, ReturnKind.ALREADY_OPEN),
        (StageCategory.CONTACTED, False, ReturnKind.ALREADY_OPEN),
        (StageCategory.CALLBACK, False, ReturnKind.ALREADY_OPEN),
        (StageCategory.TRIAL_BOOKED, False, ReturnKind.ALREADY_OPEN),
        (StageCategory.CONVERTED, False, ReturnKind.WON),
        (StageCategory.CUSTOMER, False, ReturnKind.WON),
        (StageCategory.CONVERTED, True, ReturnKind.WON),  # archived, but a member: never reopened
        (StageCategory.CUSTOMER, True, ReturnKind.WON),
    ],
)
def test_what_coming_back_does_to_a_lead(status, archived, kind):
    assert classify_return(status.value, archived=archived) is kind


@pytest.mark.parametrize("status", [StageCategory.LOST, StageCategory.FROZEN, StageCategory.NEW])
def test_a_lead_linked_to_a_membership_is_won_wherever_it_sits(status):
    assert classify_return(status, archived=False, converted_membership_id=MEMBERSHIP) is ReturnKind.WON
    assert is_won_lead(status, MEMBERSHIP)


@pytest.mark.parametrize(
    ("kind", "reopens"),
    [
        (ReturnKind.TO_NEW_STAGE, True),
        (ReturnKind.IN_PLACE, True),
        (ReturnKind.ALREADY_OPEN, False),
        (ReturnKind.WON, False),
    ],
)
def test_only_closed_leads_are_reopened(kind, reopens):
    assert kind.reopens is reopens


@pytest.mark.parametrize("status", list(StageCategory))
def test_closed_is_lost_frozen_or_archived(status):
    assert is_closed_lead(status, False) is (status in (StageCategory.LOST, StageCategory.FROZEN))
    assert is_closed_lead(status, True) is True


@pytest.mark.parametrize("status", list(StageCategory))
def test_won_is_converted_or_customer(status):
    assert is_won_lead(status) is (status in (StageCategory.CONVERTED, StageCategory.CUSTOMER))


# --- the note: appended, without repeating the sentence it ends with -----------------------------------------


@pytest.mark.parametrize(
    ("note", "addition", "after"),
    [
        (None, "Wants a trial", "Wants a trial"),
        ("", "Wants a trial", "Wants a trial"),
        ("   \n", "Wants a trial", "Wants a trial"),
        ("Called twice.", "Wants a trial", "Called twice.\nWants a trial"),
        ("Wants a trial", "Wants a trial", None),  # the last sentence again: skipped
        ("Wants a trial.", "Wants a trial", None),  # trailing punctuation does not make it another sentence
        ("Wants a trial", "Wants a trial!", None),
        ("Wants a trial  \n", "  Wants a trial ", None),  # blanks around either side do not either
        ("Called twice. Wants a trial", "Wants a trial", None),  # the note's last sentence
        ("Called twice!  Wants a trial", "Wants a trial", None),
        ("Called twice?\nWants a trial.", "Wants a trial", None),
        ("Called twice\nWants a trial", "Wants a trial", None),  # a line of its own is a sentence
        ("Wants a trial. Called twice.", "Wants a trial", "Wants a trial. Called twice.\nWants a trial"),  # not last
        ("I want a trial", "want a trial", "I want a trial\nwant a trial"),  # the tail of a longer sentence
        ("Xwants a trial", "wants a trial", "Xwants a trial\nwants a trial"),  # mid-word
        ("wants a trial", "Wants a trial", "wants a trial\nWants a trial"),  # case counts
        ("Called twice.", "", None),  # nothing to append
        ("Called twice.", "  ...  ", None),  # punctuation only is nothing either
        ("Called twice.", None, None),
        ("הגיעה דרך הטופס. רוצה שיעור ניסיון", "רוצה שיעור ניסיון", None),
        ("הגיעה דרך הטופס", "רוצה שיעור ניסיון", "הגיעה דרך הטופס\nרוצה שיעור ניסיון"),
        ("Line one…  Wants a trial", "Wants a trial", None),
    ],
)
def test_the_entry_points_note_is_appended_unless_it_repeats_the_last_sentence(note, addition, after):
    assert append_note(note, addition) == after
    assert ends_with_sentence(note, addition) is (after is None)


def test_a_sentence_is_compared_without_its_blanks_and_trailing_punctuation():
    assert sentence_core("  Wants a trial?!  ") == "Wants a trial"
    assert sentence_core(None) == ""


def test_appending_twice_is_the_same_as_appending_once():
    once = append_note("Called twice.", "Wants a trial")
    assert append_note(once, "Wants a trial") is None


# --- the touch fills what is empty, never overwrites --------------------------------------------------------


def _lead(**overrides) -> LeadFacts:
    values = {"name": "Ada", "email": "ada@example.com", "phone": "050-1234567", "campaign_id": CAMPAIGN}
    values |= {"assigned_to_user_id": None}
    return LeadFacts(**(values | overrides))


def test_existing_contact_details_and_campaign_are_never_overwritten():
    touch = ReturnTouch(name="Ada L.", email="other@example.com", phone="+972 50 999 9999", campaign_id=OTHER_CAMPAIGN)
    assert filled_fields(_lead(), touch) == {}


def test_empty_contact_details_are_filled_from_the_touch():
    lead = _lead(name=None, email="  ", phone=None)
    touch = ReturnTouch(name=" Ada Lovelace ", email="ada@example.com", phone="050-1234567")
    assert filled_fields(lead, touch) == {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "050-1234567"}


def test_a_blank_touch_fills_nothing():
    lead = _lead(name=None, email=None, phone=None, campaign_id=None)
    assert filled_fields(lead, ReturnTouch(name=" ", email=None, phone="")) == {}


def test_the_campaign_is_set_only_when_the_lead_has_none():
    assert filled_fields(_lead(campaign_id=None), ReturnTouch(campaign_id=OTHER_CAMPAIGN)) == {
        "campaign_id": OTHER_CAMPAIGN
    }
    assert filled_fields(_lead(), ReturnTouch(campaign_id=OTHER_CAMPAIGN)) == {}


# --- the owner -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "sales", "default", "owner"),
    [
        (ANA, BEN, OWNER, ANA),  # an existing owner stays
        (ANA, None, None, ANA),
        (None, BEN, OWNER, BEN),  # staff path: the Sales actor
        (None, None, OWNER, OWNER),  # public / platform path: the default assignee
        (None, None, None, None),  # nobody to give it to
    ],
)
def test_an_unowned_lead_gets_the_sales_actor_else_the_default_assignee(current, sales, default, owner):
    assert owner_after_return(current, sales, default) == owner


# --- membership.join_released ----------------------------------------------------------------------------------


def test_a_release_detail_is_read_with_its_optional_fields():
    release = parse_join_release(
        {
            "organizationId": str(ORG),
            "userId": str(USER),
            "membershipId": str(MEMBERSHIP),
            "releasedAt": "2026-11-29T10:00:00Z",
        }
    )
    assert release == JoinRelease(ORG, USER, MEMBERSHIP, datetime(2026, 11, 29, 10, tzinfo=UTC))


@pytest.mark.parametrize(
    "detail",
    [
        {},
        {"organizationId": str(ORG)},
        {"userId": str(USER)},
        {"organizationId": "not-a-uuid", "userId": str(USER)},
        {"organizationId": str(ORG), "userId": 42},
        "a string",
        None,
    ],
)
def test_a_release_without_valid_ids_is_not_a_release(detail):
    assert parse_join_release(detail) is None


def test_invalid_optional_fields_are_ignored_not_fatal():
    release = parse_join_release(
        {"organizationId": str(ORG), "userId": str(USER), "membershipId": "nope", "releasedAt": "yesterday"}
    )
    assert release == JoinRelease(ORG, USER, None, None)


def test_a_release_time_without_a_zone_is_read_as_utc():
    release = parse_join_release({"organizationId": str(ORG), "userId": str(USER), "releasedAt": "2026-11-29T10:00"})
    assert release is not None and release.released_at == datetime(2026, 11, 29, 10, tzinfo=UTC)


def test_the_same_release_has_the_same_key_and_another_release_another():
    first = JoinRelease(ORG, USER, MEMBERSHIP)
    assert first.key == JoinRelease(ORG, USER, MEMBERSHIP, datetime(2026, 1, 1, tzinfo=UTC)).key  # per membership
    assert first.key != JoinRelease(ORG, USER, uuid.uuid4()).key
    assert JoinRelease(ORG, USER).key == JoinRelease(ORG, USER).key
    at = datetime(2026, 11, 29, tzinfo=UTC)
    assert JoinRelease(ORG, USER, released_at=at).key != JoinRelease(ORG, USER).key  # per user and time
    assert JoinRelease(ORG, USER).key != JoinRelease(uuid.uuid4(), USER).key
