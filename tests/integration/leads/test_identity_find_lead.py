"""`leads.identity.find_lead_for_person` on real rows: the SQL prefilter (lower(email), last seven phone
digits) finds hand-typed and imported rows, `is_same_lead_person` decides, oldest first; managed users never
match and never count as "someone else on this phone"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from leadcrm.leads.identity import find_lead_for_person, organization_region, person_for_user
from leadcrm.leads.rules.identity import person_key
from leadcrm.platform.db.engine import get_engine
from tests.support.conversion_helpers import insert_lead, make_person, set_country, unique_email
from tests.support.factories import make_organization

PHONE = "+972501234567"


def _org(country: str | None = "IL"):
    org = make_organization()
    set_country(org.id, country)
    return org


def _find(org_id, email=None, phone=None, name=None, *, user_id=None):
    with get_engine().connect() as conn:
        region = organization_region(conn, org_id)
        key = person_key(email, phone, name, default_region=region)
        return find_lead_for_person(conn, org_id, key, default_region=region, user_id=user_id)


def _ago(days: int) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


def test_an_email_match_is_found_whatever_its_case():
    org = _org()
    email = unique_email("Dana")
    lead = insert_lead(org.id, name="Someone Else", email=email.upper())
    assert _find(org.id, email=email, name="Dana") == lead


def test_a_hand_typed_phone_is_found_through_the_last_seven_digits():
    org = _org()
    lead = insert_lead(org.id, name="Dana", phone="050-1234567")
    assert _find(org.id, phone=PHONE, name="Dana Cohen") == lead


def test_an_imported_phone_with_the_country_code_but_no_plus_is_found():
    org = _org()
    lead = insert_lead(org.id, name="Dana", phone="972 50 123 4567")
    assert _find(org.id, phone=PHONE, name="Dana") == lead


def test_a_lead_typed_in_hebrew_is_found_for_a_latin_signup():
    org = _org()
    lead = insert_lead(org.id, name="דור וידר", phone="0501234567")
    assert _find(org.id, phone=PHONE, name="Dor Vider") == lead


def test_a_phone_match_with_a_disagreeing_name_is_not_the_person():
    org = _org()
    insert_lead(org.id, name="Yossi Cohen", phone="050-1234567")
    assert _find(org.id, phone=PHONE, name="Dana Cohen") is None


def test_an_unnamed_lead_on_the_phone_is_the_person():
    org = _org()
    lead = insert_lead(org.id, phone="050-1234567")
    assert _find(org.id, phone=PHONE, name="Dana") == lead


def test_a_second_differently_named_lead_on_the_number_vetoes_the_phone():
    org = _org()
    insert_lead(org.id, phone="050-1234567")  # unnamed: would match on its own
    insert_lead(org.id, name="Yossi", phone="+972-50-123-4567")
    assert _find(org.id, phone=PHONE, name="Dana") is None


def test_a_second_differently_named_member_on_the_number_vetoes_the_phone():
    org = _org()
    insert_lead(org.id, name="Dana", phone="050-1234567")
    make_person(org.id, first_name="Yossi", last_name="Cohen", phone="+972501234567")
    assert _find(org.id, phone=PHONE, name="Dana") is None


def test_a_managed_member_on_the_number_does_not_veto():
    org = _org()
    lead = insert_lead(org.id, name="Dana", phone="050-1234567")
    make_person(org.id, first_name="Kid", last_name="Cohen", phone=PHONE, kind="managed")
    assert _find(org.id, phone=PHONE, name="Dana") == lead


def test_the_persons_own_user_row_does_not_veto():
    org = _org()
    lead = insert_lead(org.id, phone="050-1234567")
    me = make_person(org.id, first_name="Dana", phone=PHONE)
    assert _find(org.id, phone=PHONE, name="Dana", user_id=me.user_id) == lead


def test_a_shared_number_does_not_stop_an_email_match():
    org = _org()
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email, phone="050-1234567")
    make_person(org.id, first_name="Yossi", phone=PHONE)
    assert _find(org.id, email=email, phone=PHONE, name="Dana") == lead


def test_the_oldest_matching_lead_wins():
    org = _org()
    insert_lead(org.id, name="Dana", phone="050-1234567", created_at=_ago(1))
    oldest = insert_lead(org.id, name="Dana Cohen", phone="0501234567", created_at=_ago(30))
    assert _find(org.id, phone=PHONE, name="Dana Cohen") == oldest


def test_an_older_lead_that_is_not_the_person_is_passed_over():
    org = _org()
    insert_lead(org.id, name="Dana", phone="+44 20 7123 4567", created_at=_ago(30))  # same last seven digits
    newer = insert_lead(org.id, name="Dana", phone="050-1234567", created_at=_ago(1))
    assert _find(org.id, phone=PHONE, name="Dana") == newer


def test_leads_of_other_organizations_are_never_found():
    org, other = _org(), _org()
    email = unique_email("dana")
    insert_lead(other.id, name="Dana", email=email, phone="050-1234567")
    assert _find(org.id, email=email, phone=PHONE, name="Dana") is None


def test_the_organizations_region_reads_national_numbers():
    us = _org("US")
    lead = insert_lead(us.id, name="Sam", phone="(202) 555-0123")
    assert _find(us.id, phone="+1 202 555 0123", name="Sam") == lead
    no_region = _org(None)
    insert_lead(no_region.id, name="Sam", phone="(202) 555-0123")
    assert _find(no_region.id, phone="+1 202 555 0123", name="Sam") is None


def test_a_person_with_neither_email_nor_phone_matches_nothing():
    org = _org()
    insert_lead(org.id, name="Dana")
    assert _find(org.id, name="Dana") is None


def test_person_for_user_refuses_managed_users_and_joins_the_names():
    org = _org()
    email = unique_email("parent")
    account = make_person(org.id, first_name="Dana", last_name="Cohen", email=email, phone="050-1234567")
    child = make_person(org.id, first_name="Kid", email=email, phone="050-1234567", kind="managed")
    with get_engine().connect() as conn:
        found = person_for_user(conn, account.user_id, default_region="IL")
        assert found is not None
        assert (found.key.email, found.key.phone_e164, found.key.name) == (email, PHONE, "Dana Cohen")
        assert person_for_user(conn, child.user_id, default_region="IL") is None
