"""Bulk email: audiences (ids, pipeline + stageIds on the effective stage, include/exclude tags, the list's
filters), leads without email consent or address skipped and reported, no conversation written and no lead
moved, each mail with the lead-keyed Reply-To, an unsubscribe link and List-Unsubscribe one-click headers,
a timeline entry per recipient, sending as a job within the SES rate, and the public unsubscribe route.
What SES says afterwards (delivery status, suppression, the bounce-rate pause): test_ses_events.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from unittest import mock

import pytest
from botocore.exceptions import ClientError
from sqlalchemy import func, update

from leadcrm.conversations.bulk_email import run_bulk_email
from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, parse_reply_address
from leadcrm.conversations.tables import bulk_email_recipients
from leadcrm.platform import mail_keys
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.conversations_helpers import (
    MAIL_DOMAIN,
    consent_ledger,
    consent_state,
    mail_text,
    revoke_email,
    sent_mails,
    threads_of_org,
    verify_sender,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, create_lead, default_pipeline, lead_row, make_pipeline


@pytest.fixture(autouse=True)
def _ses(event_bus) -> Iterator[None]:
    verify_sender()
    yield
    # The job sends for every organization and the database outlives the test: what a test left pending
    # is drained here, so the next test's run sends only its own recipients.
    clock = FakeClock()
    run_bulk_email(send=lambda mail: "drained", sleep=clock.sleep, clock=clock, run_seconds=3600)


@pytest.fixture
def owner():
    return make_caller(role="owner")


class FakeClock:
    """Time that passes only when the job sleeps (or sends take `per_send` seconds)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept += seconds
        self.now += seconds


def _run(**kwargs):
    clock = FakeClock()
    return run_bulk_email(sleep=clock.sleep, clock=clock, **kwargs), clock


def _create(caller, audience, subject="Open house on Friday", body="Come and try a class!"):
    return call_api(
        "POST",
        f"/organizations/{caller.org_id}/bulk-emails",
        sub=caller.sub,
        body={"subject": subject, "body": body, "audience": audience},
    )


def _job(caller, job_id):
    return call_api("GET", f"/organizations/{caller.org_id}/bulk-emails/{job_id}", sub=caller.sub)


def _ids(*leads):
    return {"leadIds": [lead["id"] for lead in leads]}


def _recipients(mails):
    return sorted(str(m["To"]) for m in mails)


def test_leads_without_email_consent_or_address_are_skipped_and_reported(owner):
    reachable = create_lead(owner, name="Dana", email="dana@example.com")
    revoked = create_lead(owner, name="Avi", email="avi@example.com")
    no_email = create_lead(owner, name="Noa", phone="+972501112233")
    revoke_email(owner, revoked["id"])
    response = _create(owner, _ids(reachable, revoked, no_email))
    assert response.status == 202, response.body
    job = response.data
    assert (job["total"], job["pending"], job["skipped"]) == (3, 1, 2)
    assert (job["skippedNoConsent"], job["skippedNoEmail"]) == (1, 1)
    assert {(s["leadId"], s["reason"]) for s in job["skippedLeads"]} == {
        (revoked["id"], "no_consent"),
        (no_email["id"], "no_email"),
    }


def test_a_bulk_send_mails_each_recipient_with_its_lead_keyed_reply_to_and_writes_no_conversation(owner):
    dana = create_lead(owner, email="dana@example.com")
    avi = create_lead(owner, email="avi@example.com")
    job = _create(owner, _ids(dana, avi)).data
    stats, _ = _run()
    assert stats["sent"] == 2
    mails = sent_mails()
    assert _recipients(mails) == ["avi@example.com", "dana@example.com"]
    for mail in mails:
        lead_id = dana["id"] if str(mail["To"]) == "dana@example.com" else avi["id"]
        target = parse_reply_address(str(mail["Reply-To"]), mail_keys.signing_keys(), MAIL_DOMAIN)
        assert target == AddressTarget(AddressKind.LEAD, uuid.UUID(lead_id))
        assert mail["Subject"] == "Open house on Friday"
        assert "Come and try a class!" in mail_text(mail)
    assert threads_of_org(owner.org_id) == []
    done = _job(owner, job["id"]).data
    assert (done["status"], done["sent"], done["pending"]) == ("done", 2, 0)


def test_a_bulk_send_moves_no_lead_and_leaves_a_timeline_entry_each(owner):
    dana = create_lead(owner, email="dana@example.com")
    job = _create(owner, _ids(dana)).data
    _run()
    assert lead_row(dana["id"])["status"] == "new"
    [entry] = activities(dana["id"], "bulk_email_sent")
    assert entry["payload"] == {"jobId": job["id"], "subject": "Open house on Friday", "status": "sent"}
    timeline = call_api("GET", leads_path(owner.org_id, dana["id"]), sub=owner.sub).data["timeline"]
    assert timeline[0]["type"] == "bulk_email_sent"


def test_every_mail_carries_an_unsubscribe_link_and_one_click_headers(owner):
    dana = create_lead(owner, email="dana@example.com")
    _create(owner, _ids(dana))
    _run()
    [mail] = sent_mails()
    url = str(mail["List-Unsubscribe"]).strip("<>")
    assert url.startswith(f"{mail_keys.public_api_url()}/unsubscribe/")
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert url in mail_text(mail)


def test_the_unsubscribe_footer_speaks_the_leads_language(owner):
    dana = create_lead(owner, email="dana@example.com", locale="he")
    _create(owner, _ids(dana))
    _run()
    assert "להסרה מרשימת התפוצה" in mail_text(sent_mails()[0])


def test_one_click_unsubscribe_revokes_email_consent_once(owner):
    dana = create_lead(owner, email="dana@example.com")
    _create(owner, _ids(dana))
    _run()
    path = "/unsubscribe/" + str(sent_mails()[0]["List-Unsubscribe"]).strip("<>").rsplit("/", 1)[1]
    form = {"content-type": "application/x-www-form-urlencoded"}
    first = call_api("POST", path, sub=None, body="List-Unsubscribe=One-Click", headers=form)
    second = call_api("POST", path, sub=None, body="List-Unsubscribe=One-Click", headers=form)
    assert (first.status, second.status) == (200, 200)
    assert consent_state(dana["id"]) == {"email": "revoked"}
    [entry] = consent_ledger(dana["id"])
    assert (entry["source"], entry["actor_user_id"]) == ("unsubscribe_link", None)


def test_opening_the_unsubscribe_link_changes_nothing_until_confirmed(owner):
    dana = create_lead(owner, email="dana@example.com")
    _create(owner, _ids(dana))
    _run()
    path = "/unsubscribe/" + str(sent_mails()[0]["List-Unsubscribe"]).strip("<>").rsplit("/", 1)[1]
    page = call_api("GET", path, sub=None)
    assert page.status == 200 and 'method="post"' in page.body
    assert consent_state(dana["id"]) == {}


@pytest.mark.parametrize("token", ["forged", f"{uuid.uuid4().hex}.aaaaaaaaaaaaaaaa"])
def test_a_forged_unsubscribe_token_changes_nothing(owner, token):
    dana = create_lead(owner, email="dana@example.com")
    response = call_api("POST", f"/unsubscribe/{token}", sub=None)
    assert response.status == 404
    assert consent_state(dana["id"]) == {}


def test_an_unsubscribe_between_creating_and_sending_is_honoured(owner):
    dana = create_lead(owner, email="dana@example.com")
    avi = create_lead(owner, email="avi@example.com")
    job = _create(owner, _ids(dana, avi)).data
    revoke_email(owner, dana["id"])
    stats, _ = _run()
    assert (stats["sent"], stats["skipped"]) == (1, 1)
    assert _recipients(sent_mails()) == ["avi@example.com"]
    assert _job(owner, job["id"]).data["skippedNoConsent"] == 1


def test_the_job_sends_within_the_configured_rate(owner, monkeypatch):
    monkeypatch.setenv("BULK_EMAIL_SEND_RATE", "2")
    leads = [create_lead(owner, email=f"lead{i}@example.com") for i in range(5)]
    _create(owner, _ids(*leads))
    stats, clock = _run()
    assert stats["sent"] == 5
    assert clock.slept == pytest.approx(2.0)  # 5 mails at 2 per second: 4 gaps of 0.5 s


def test_a_run_stops_at_its_time_budget_and_the_next_run_goes_on(owner, monkeypatch):
    monkeypatch.setenv("BULK_EMAIL_SEND_RATE", "1")
    leads = [create_lead(owner, email=f"lead{i}@example.com") for i in range(5)]
    job = _create(owner, _ids(*leads)).data
    first, _ = _run(run_seconds=2.5)
    assert first["sent"] == 3
    progress = _job(owner, job["id"]).data
    assert (progress["status"], progress["sent"], progress["pending"]) == ("sending", 3, 2)
    second, _ = _run(run_seconds=10)
    assert second["sent"] == 2
    assert _job(owner, job["id"]).data["status"] == "done"
    assert len(sent_mails()) == 5


def test_a_recipient_ses_refuses_is_recorded_as_failed_and_the_others_are_sent(owner):
    dana = create_lead(owner, email="dana@example.com")
    avi = create_lead(owner, email="avi@example.com")
    job = _create(owner, _ids(dana, avi)).data
    real_send = __import__("leadcrm.platform.adapters.ses", fromlist=["send_mime"]).send_mime

    def _refuse_dana(mail):
        if mail.to_address == "dana@example.com":
            raise ClientError({"Error": {"Code": "MessageRejected", "Message": "no"}}, "SendEmail")
        return real_send(mail)

    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=_refuse_dana):
        stats, _ = _run()
    assert (stats["sent"], stats["failed"]) == (1, 1)
    view = _job(owner, job["id"]).data
    assert (view["status"], view["sent"], view["failed"]) == ("done", 1, 1)
    assert activities(dana["id"], "bulk_email_sent")[0]["payload"]["status"] == "failed"


def test_a_recipient_ses_throttles_goes_back_to_pending_and_a_later_run_mails_it_once(owner):
    dana = create_lead(owner, email="dana@example.com")
    job = _create(owner, _ids(dana)).data
    throttled = ClientError(
        {"Error": {"Code": "TooManyRequestsException", "Message": "Maximum sending rate exceeded."},
         "ResponseMetadata": {"HTTPStatusCode": 429}},
        "SendEmail",
    )  # fmt: skip
    with mock.patch("leadcrm.platform.adapters.ses.send_mime", side_effect=throttled):
        stats, _ = _run()
    assert (stats["deferred"], stats["failed"], stats["sent"]) == (1, 0, 0)
    view = _job(owner, job["id"]).data
    assert (view["status"], view["pending"], view["failed"]) == ("sending", 1, 0)
    assert activities(dana["id"], "bulk_email_sent") == []  # nothing happened to the lead yet
    again, _ = _run()
    assert again["sent"] == 1
    assert _job(owner, job["id"]).data["status"] == "done"
    assert len(sent_mails()) == 1


def test_the_pipeline_audience_uses_the_effective_stage_and_unites_stage_id_with_stage_ids(owner):
    courses = make_pipeline(owner.org_id, ["new", "contacted", "trial_booked", "converted", "lost"])
    in_new = create_lead(owner, email="a@example.com")
    in_trial = create_lead(owner, email="b@example.com")
    in_contacted = create_lead(owner, email="c@example.com")
    not_placed = create_lead(owner, email="d@example.com")
    for lead, category in ((in_new, "new"), (in_trial, "trial_booked"), (in_contacted, "contacted")):
        body = {"pipelineId": str(courses.id), "stageId": str(courses.stage(category))}
        placed = call_api("POST", leads_path(owner.org_id, lead["id"]) + "/pipelines", sub=owner.sub, body=body)
        assert placed.status in (200, 201), placed.body
    audience = {
        "pipelineId": str(courses.id),
        "stageIds": [str(courses.stage("trial_booked"))],
        "stageId": str(courses.stage("contacted")),
    }
    job = _create(owner, audience).data
    assert job["total"] == 2
    _run()
    assert _recipients(sent_mails()) == ["b@example.com", "c@example.com"]
    assert not_placed["id"] not in {s["leadId"] for s in job["skippedLeads"]}


def test_the_primary_pipeline_audience_reads_the_primary_stage(owner):
    create_lead(owner, email="fresh@example.com")
    moved = create_lead(owner, email="moved@example.com")
    call_api("PATCH", leads_path(owner.org_id, moved["id"]), sub=owner.sub, body={"status": "callback"})
    pipeline = default_pipeline(owner.org_id)
    job = _create(owner, {"pipelineId": str(pipeline.id), "stageIds": [str(pipeline.stage("callback"))]}).data
    assert job["total"] == 1
    _run()
    assert _recipients(sent_mails()) == ["moved@example.com"]


def _tag(owner, name):
    response = call_api("POST", leads_path(owner.org_id) + "/tags", sub=owner.sub, body={"name": name})
    assert response.status == 201, response.body
    return response.data["id"]


def _tag_lead(owner, lead, *tag_ids):
    path = leads_path(owner.org_id, lead["id"]) + "/tags"
    assert call_api("PUT", path, sub=owner.sub, body={"tagIds": list(tag_ids)}).status == 200


def test_include_and_exclude_tags(owner):
    yoga, bought = _tag(owner, "Yoga"), _tag(owner, "Bought course")
    only_yoga = create_lead(owner, email="yoga@example.com")
    yoga_buyer = create_lead(owner, email="buyer@example.com")
    create_lead(owner, email="none@example.com")
    _tag_lead(owner, only_yoga, yoga)
    _tag_lead(owner, yoga_buyer, yoga, bought)
    job = _create(owner, {"includeTagIds": [yoga], "excludeTagIds": [bought]}).data
    assert job["total"] == 1
    _run()
    assert _recipients(sent_mails()) == ["yoga@example.com"]


def test_every_lead_matching_a_list_filter(owner):
    create_lead(owner, name="Dana Cohen", email="dana@example.com")
    create_lead(owner, name="Dana Levi", email="dana.levi@example.com")
    create_lead(owner, name="Avi", email="avi@example.com")
    job = _create(owner, {"search": "dana", "statuses": ["new"]}).data
    assert job["total"] == 2
    everyone = _create(owner, {"allLeads": True}).data
    assert everyone["total"] == 3


def test_an_audience_must_be_named_and_match_someone(owner):
    assert _create(owner, {}).error_code == "VALIDATION_FAILED"
    assert _create(owner, {"stageIds": [str(uuid.uuid4())]}).error_code == "VALIDATION_FAILED"
    assert _create(owner, {"search": "nobody-at-all"}).error_code == "AUDIENCE_EMPTY"


def test_an_audience_larger_than_the_limit_is_refused_and_nothing_is_kept(owner, monkeypatch):
    monkeypatch.setattr("leadcrm.conversations.bulk_email.MAX_AUDIENCE", 2)
    leads = [create_lead(owner, email=f"l{i}@example.com") for i in range(3)]
    assert _create(owner, _ids(*leads)).error_code == "AUDIENCE_TOO_LARGE"
    assert _create(owner, _ids(*leads[:2])).status == 202
    stats, _ = _run()
    assert stats["sent"] == 2


def test_another_organizations_leads_are_never_in_the_audience(owner):
    stranger = make_caller(role="owner")
    theirs = create_lead(stranger, email="theirs@example.com")
    assert _create(owner, _ids(theirs)).error_code == "AUDIENCE_EMPTY"


def test_another_organizations_job_is_not_found(owner):
    stranger = make_caller(role="owner")
    job = _create(stranger, _ids(create_lead(stranger, email="s@example.com"))).data
    response = _job(owner, job["id"])
    assert (response.status, response.error_code) == (404, "BULK_EMAIL_NOT_FOUND")


def test_members_cannot_send_bulk_email():
    member = make_caller(role="member")
    assert _create(member, {"allLeads": True}).status == 403


def test_a_claim_whose_run_died_is_unknown_as_interrupted_and_never_resent(owner):
    dana = create_lead(owner, email="dana@example.com")
    job = _create(owner, _ids(dana)).data
    with get_engine().begin() as conn:
        conn.execute(
            update(bulk_email_recipients)
            .where(bulk_email_recipients.c.job_id == uuid.UUID(job["id"]))
            .values(status="sending", claimed_at=func.now() - timedelta(hours=1))
        )
    stats, _ = _run()
    assert (stats["interrupted"], stats["sent"]) == (1, 0)
    assert sent_mails() == []
    view = _job(owner, job["id"]).data
    assert (view["status"], view["unknown"], view["failed"]) == ("done", 1, 0)
