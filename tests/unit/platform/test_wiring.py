"""The composition root names every reaction and job by module and function, imported on first use
(leadcrm.wiring): each name is the function its capability declares, each detail-type the constant its
capability declares, and importing a consumer imports no capability's reactions until an event needs one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from leadcrm import wiring

ROOT = Path(__file__).resolve().parents[3]


def _declared_reactions() -> dict[str, object]:
    """What reacts to which detail-type, by the constants and functions the capabilities declare."""
    from leadcrm.analytics import attribution
    from leadcrm.conversations import reactions as conversations_reactions
    from leadcrm.directory import reactions as directory_reactions
    from leadcrm.ingestion import meta_crm_events
    from leadcrm.integrations import deliveries as webhook_deliveries
    from leadcrm.leads import reactions as leads_reactions
    from leadcrm.leads import released_joins
    from leadcrm.leads.rules.returning import LEAD_RETURNED_EVENT, MEMBERSHIP_JOIN_RELEASED
    from leadcrm.platform.events import LEAD_CREATED, LEAD_STATUS_CHANGED
    from leadcrm.work import follow_ups, task_closing

    d = directory_reactions
    return {
        d.ORGANIZATION_CREATED: d.on_organization_created,
        d.ORGANIZATION_UPDATED: d.on_organization_updated,
        d.ORGANIZATION_DELETED: d.on_organization_deleted,
        d.USER_CREATED: d.on_user_created,
        d.USER_UPDATED: d.on_user_updated,
        d.MEMBERSHIP_CREATED: d.on_membership_created,
        d.MEMBERSHIP_UPDATED: d.on_membership_updated,
        d.MEMBERSHIP_DELETED: d.on_membership_deleted,
        d.MEMBERSHIP_STATUS_CHANGED: d.on_membership_status_changed,
        LEAD_CREATED: leads_reactions.record_lead_created,
        leads_reactions.MINISITE_EVENT_PUBLISHED: leads_reactions.minisite_event_published,
        leads_reactions.MINISITE_EVENT_UPDATED: leads_reactions.minisite_event_published,
        leads_reactions.MINISITE_EVENT_ARCHIVED: leads_reactions.minisite_event_archived,
        leads_reactions.MEMBERSHIP_SELF_SIGNUP: leads_reactions.handle_membership_self_signup,
        leads_reactions.ENTITLEMENT_ACTIVATED: leads_reactions.handle_entitlement_activated,
        MEMBERSHIP_JOIN_RELEASED: released_joins.handle_join_released,
        LEAD_STATUS_CHANGED: task_closing.handle_lead_status_changed,
        LEAD_RETURNED_EVENT: follow_ups.sync_return_call,
        attribution.CONVERSATION_INBOUND_RECEIVED: attribution.handle_inbound_received,
        meta_crm_events.LEAD_CRM_EVENT_RECORDED: meta_crm_events.hand_to_sender,
        **{t: conversations_reactions.on_ses_event for t in conversations_reactions.SES_DETAIL_TYPES},
        webhook_deliveries.ATTEMPTED: webhook_deliveries.record_attempt,
    }


def _resolved(value: object) -> object:
    return value.target if isinstance(value, wiring.Deferred) else value


def test_each_detail_type_names_the_reaction_its_capability_declares_for_it():
    table = {detail_type: _resolved(reaction) for detail_type, reaction in wiring.EVENT_REACTIONS.items()}
    assert table == _declared_reactions()


def test_the_events_that_rescore_are_the_ones_scoring_declares():
    from leadcrm.qualification import scoring

    assert wiring.RESCORING_EVENTS == scoring.RESCORING_EVENTS
    assert wiring._rescore.target is scoring.handle_lead_changed


def test_the_events_sent_to_meta_as_crm_events_are_the_ones_ingestion_declares():
    from leadcrm.ingestion import meta_crm_events

    assert frozenset(meta_crm_events.STAGE_EVENTS) == wiring.META_CRM_EVENTS
    assert wiring._meta_crm_event.target is meta_crm_events.on_stage_event


def test_the_events_that_fan_out_to_webhooks_are_the_ones_integrations_declares():
    from leadcrm.integrations import fanout
    from leadcrm.integrations.rules.events import SOURCE_TYPES

    assert wiring.WEBHOOK_EVENTS == SOURCE_TYPES
    assert wiring._fan_out.target is fanout.fan_out


def test_every_deferred_job_and_message_handler_names_a_function():
    deferred = [
        v for v in (*wiring.JOBS.values(), *(h for _, h in wiring.IN_PROCESS)) if isinstance(v, wiring.Deferred)
    ]
    assert deferred
    assert all(callable(d.target) and d.target.__name__ == d.name for d in deferred)


def test_importing_task_lifecycle_imports_no_capability_reaction_until_an_event_needs_it():
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "core" / "python")]),
    }
    heavy = ["leadcrm.directory.reactions", "leadcrm.qualification.scoring", "leadcrm.tickets.sweep",
             "leadcrm.conversations.bulk_email", "leadcrm.work.digest", "leadcrm.deals.rotting"]  # fmt: skip
    code = (
        "import json, sys; import task_lifecycle.handler\n"
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
