"""The growing tables are kept in check (PostgreSQL): each retention's boundary (a row just inside is kept,
just outside deleted), what is still needed is never deleted, deletes go in bounded batches that skip locked
rows, a spent time budget leaves the rest for the next run, and the job reports and publishes its counts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Table, func, insert, select, text

from leadcrm.conversations.jobs import (
    APPLIED_EVENTS_KEPT_FOR,
    APPLIED_EVENTS_RETENTION,
    WHATSAPP_STATUSES_KEPT_FOR,
    WHATSAPP_STATUSES_RETENTION,
)
from leadcrm.ingestion.jobs import CLAIMS_KEPT_FOR, CLAIMS_RETENTION
from leadcrm.integrations.retention import DELIVERIES_KEPT_FOR, DELIVERIES_RETENTION
from leadcrm.leads.rate_limits import COUNTERS_KEPT_FOR
from leadcrm.leads.rate_limits import RETENTION as COUNTERS_RETENTION
from leadcrm.leads.tables import rate_limit_counters
from leadcrm.platform import retention as retention_module
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.idempotency import REPLAY_WINDOW
from leadcrm.platform.idempotency import RETENTION as KEYS_RETENTION
from leadcrm.platform.outbox import PUBLISHED_KEPT_FOR
from leadcrm.platform.outbox import RETENTION as OUTBOX_RETENTION
from leadcrm.platform.retention import DELETED_METRIC, Retention, delete_expired_batch, run_cleanup
from leadcrm.platform.tables import idempotency_keys, outbox
from leadcrm.wiring import RETAINED
from tests.support.factories import make_organization

MINUTE = timedelta(minutes=1)


def _age(age: timedelta) -> Any:
    """A stamp `age` before the database's now (the cleanup reads the same clock)."""
    return func.now() - age


def _idempotency_key(age: timedelta) -> dict[str, Any]:
    return {
        "scope": "test:retention",
        "key": uuid.uuid4().hex,
        "request_hash": "h",
        "response_status": 201,
        "response_body": {},
        "created_at": _age(age),
    }


def _counter(age: timedelta) -> dict[str, Any]:
    return {"bucket": f"capture:ip:{uuid.uuid4().hex}", "window_start": _age(age), "hits": 1}


def _claim(age: timedelta) -> dict[str, Any]:
    return {
        "channel": "meta_lead_ads",
        "external_ref": uuid.uuid4().hex,
        "organization_id": make_organization().id,
        "outcome": "created",
        "received_at": _age(age),
    }


def _applied_ses_event(age: timedelta) -> dict[str, Any]:
    return {
        "ses_message_id": uuid.uuid4().hex,
        "event_type": "delivery",
        "occurred_at": _age(age),
        "organization_id": make_organization().id,
        "received_at": _age(age),
    }


def _whatsapp_status(age: timedelta) -> dict[str, Any]:
    return {
        "wamid": f"wamid.{uuid.uuid4().hex}",
        "status": "delivered",
        "organization_id": make_organization().id,
        "occurred_at": _age(age),
        "received_at": _age(age),
    }


def _event(published_age: timedelta | None, occurred_age: timedelta = timedelta(days=30)) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(),
        "organization_id": uuid.uuid4(),
        "type": "lead.created",
        "aggregate_id": uuid.uuid4(),
        "payload": {},
        "occurred_at": _age(occurred_age),
        "published_at": _age(published_age) if published_age is not None else None,
    }


# (the retention, a row of that age, the retention's period)
def _webhook_delivery(age: timedelta) -> dict[str, Any]:
    organization, subscription_id = make_organization(), uuid.uuid4()
    with get_engine().begin() as conn:
        conn.execute(
            text(
                "INSERT INTO webhook_subscriptions (id, organization_id, url, event_types, secret) "
                "VALUES (:id, :org, 'https://93.184.216.34/h', ARRAY['lead.created'], 's')"
            ),
            {"id": subscription_id, "org": organization.id},
        )
    return {
        "id": uuid.uuid4(),
        "organization_id": organization.id,
        "subscription_id": subscription_id,
        "event_id": uuid.uuid4(),
        "event_type": "lead.created",
        "payload": {},
        "occurred_at": _age(age),
        "status": "succeeded",
        "updated_at": _age(age),
    }


CASES: dict[str, tuple[Retention, Callable[[timedelta], dict[str, Any]], timedelta]] = {
    "idempotency_keys": (KEYS_RETENTION, _idempotency_key, REPLAY_WINDOW),
    "rate_limit_counters": (COUNTERS_RETENTION, _counter, COUNTERS_KEPT_FOR),
    "ingested_events": (CLAIMS_RETENTION, _claim, CLAIMS_KEPT_FOR),
    "ses_delivery_events": (APPLIED_EVENTS_RETENTION, _applied_ses_event, APPLIED_EVENTS_KEPT_FOR),
    "whatsapp_status_events": (WHATSAPP_STATUSES_RETENTION, _whatsapp_status, WHATSAPP_STATUSES_KEPT_FOR),
    "outbox": (OUTBOX_RETENTION, _event, PUBLISHED_KEPT_FOR),
    "webhook_deliveries": (DELIVERIES_RETENTION, _webhook_delivery, DELIVERIES_KEPT_FOR),
}


def _insert(table: Table, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows' primary keys."""
    key = list(table.primary_key.columns)
    with get_engine().begin() as conn:
        return [tuple(conn.execute(insert(table).values(**row).returning(*key)).one()) for row in rows]


def _present(table: Table, keys: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    columns = list(table.primary_key.columns)
    with get_engine().connect() as conn:
        found = {tuple(row) for row in conn.execute(select(*columns))}
    return [key for key in keys if key in found]


def _expired_count(retention: Retention) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count()).select_from(retention.table).where(retention.stamp < func.now() - retention.kept_for)
        ).scalar_one()


@pytest.fixture(autouse=True)
def _nothing_expired_before() -> None:
    """Each test starts with no expired row anywhere (what earlier tests of this module left is cleaned)."""
    run_cleanup(RETAINED)


def test_the_job_covers_the_six_growing_tables():
    assert sorted(retention.name for retention in RETAINED) == sorted(CASES)


@pytest.mark.parametrize("table", sorted(CASES))
def test_a_row_just_inside_its_retention_is_kept_and_one_just_outside_is_deleted(table):
    retention, row, period = CASES[table]
    inside, outside = _insert(retention.table, [row(period - MINUTE), row(period + MINUTE)])
    result = run_cleanup(RETAINED)
    assert result[table] == 1
    assert _present(retention.table, [inside, outside]) == [inside]


@pytest.mark.parametrize(
    ("table", "period"),
    [("idempotency_keys", timedelta(hours=24)), ("rate_limit_counters", timedelta(hours=1)),
     ("ingested_events", timedelta(days=90)), ("ses_delivery_events", timedelta(days=30)),
     ("whatsapp_status_events", timedelta(days=30)), ("outbox", timedelta(days=7)),
     ("webhook_deliveries", timedelta(days=30))],
)  # fmt: skip
def test_the_documented_retention_periods(table, period):
    assert CASES[table][0].kept_for == period


def test_an_unpublished_outbox_row_is_never_deleted_however_old():
    (unpublished,) = _insert(outbox, [_event(published_age=None, occurred_age=timedelta(days=400))])
    run_cleanup(RETAINED)
    assert _present(outbox, [unpublished]) == [unpublished]


def test_a_batch_deletes_at_most_its_size_and_only_expired_rows():
    expired = _insert(rate_limit_counters, [_counter(timedelta(days=days)) for days in (10, 12, 14, 16, 18)])
    (recent,) = _insert(rate_limit_counters, [_counter(MINUTE)])
    with get_engine().begin() as conn:
        assert delete_expired_batch(conn, COUNTERS_RETENTION, batch=2) == 2
    assert len(_present(rate_limit_counters, expired)) == 3
    with get_engine().begin() as conn:
        assert delete_expired_batch(conn, COUNTERS_RETENTION, batch=10) == 3
    assert _present(rate_limit_counters, [*expired, recent]) == [recent]


def test_a_backlog_larger_than_a_batch_is_deleted_batch_after_batch():
    keys = _insert(idempotency_keys, [_idempotency_key(REPLAY_WINDOW + timedelta(hours=i + 1)) for i in range(7)])
    result = run_cleanup([KEYS_RETENTION], batch=3)
    assert result == {"idempotency_keys": 7, "unfinished": 0}
    assert _present(idempotency_keys, keys) == []


def test_each_statement_deletes_one_batch(monkeypatch):
    _insert(idempotency_keys, [_idempotency_key(REPLAY_WINDOW + timedelta(hours=i + 1)) for i in range(7)])
    sizes: list[int] = []
    real = retention_module.delete_expired_batch

    def counting(conn: Any, retention: Retention, batch: int) -> int:
        sizes.append(real(conn, retention, batch))
        return sizes[-1]

    monkeypatch.setattr(retention_module, "delete_expired_batch", counting)
    run_cleanup([KEYS_RETENTION], batch=3)
    assert sizes == [3, 3, 1]


def test_the_tables_take_turns_and_a_spent_budget_leaves_the_rest_for_the_next_run(monkeypatch):
    _insert(rate_limit_counters, [_counter(timedelta(hours=2 + i)) for i in range(4)])
    _insert(idempotency_keys, [_idempotency_key(REPLAY_WINDOW + timedelta(hours=1 + i)) for i in range(4)])
    readings = iter([0.0, 0.5, 0.6])  # the deadline, the loop's first look, after the first table's batch

    monkeypatch.setattr(retention_module, "monotonic", lambda: next(readings, 10.0))
    first = run_cleanup([COUNTERS_RETENTION, KEYS_RETENTION], batch=3, budget_seconds=1.0)
    assert first == {"rate_limit_counters": 3, "idempotency_keys": 3, "unfinished": 2}
    monkeypatch.undo()
    second = run_cleanup([COUNTERS_RETENTION, KEYS_RETENTION], batch=3)
    assert second == {"rate_limit_counters": 1, "idempotency_keys": 1, "unfinished": 0}


def test_a_row_another_transaction_holds_is_skipped_not_waited_for(private_engine):
    (held,) = _insert(rate_limit_counters, [_counter(timedelta(hours=3))])
    with private_engine.connect() as other:
        other.execute(text("SET lock_timeout = '5s'"))
        other.execute(
            select(rate_limit_counters.c.bucket).where(rate_limit_counters.c.bucket == held[0]).with_for_update()
        )
        assert run_cleanup([COUNTERS_RETENTION])["rate_limit_counters"] == 0
        other.rollback()
    assert run_cleanup([COUNTERS_RETENTION])["rate_limit_counters"] == 1


def test_the_scheduled_job_returns_its_counts_per_table_and_publishes_them(ctx, capsys):
    from task_lifecycle.handler import lambda_handler as task_lifecycle

    for table, (retention, row, period) in CASES.items():
        _insert(retention.table, [row(period + MINUTE) for _ in range(2 if table == "outbox" else 1)])
    capsys.readouterr()
    result = task_lifecycle({"job": "retention_cleanup"}, ctx)
    assert result == {
        "job": "retention_cleanup",
        "idempotency_keys": 1,
        "rate_limit_counters": 1,
        "ingested_events": 1,
        "ses_delivery_events": 1,
        "whatsapp_status_events": 1,
        "outbox": 2,
        "webhook_deliveries": 1,
        "unfinished": 0,
    }
    assert _published(capsys.readouterr().out) == {
        "idempotency_keys": 1,
        "rate_limit_counters": 1,
        "ingested_events": 1,
        "ses_delivery_events": 1,
        "whatsapp_status_events": 1,
        "outbox": 2,
        "webhook_deliveries": 1,
    }
    assert all(_expired_count(retention) == 0 for retention in RETAINED)


def test_a_run_with_nothing_to_delete_publishes_zeros(capsys):
    capsys.readouterr()
    assert run_cleanup(RETAINED) == {**{name: 0 for name in CASES}, "unfinished": 0}
    assert _published(capsys.readouterr().out) == {name: 0 for name in CASES}


def _published(stdout: str) -> dict[str, float]:
    """RetentionRowsDeleted per table, from the EMF documents the run printed."""
    counts = {}
    for line in stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and DELETED_METRIC in document:
            (directive,) = document["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "LeadCRM"
            assert any("table" in dimensions for dimensions in directive["Dimensions"])
            value = document[DELETED_METRIC]
            counts[document["table"]] = float(value[0] if isinstance(value, list) else value)
    return counts
