"""One request can never hurt another: a statement that fails part-way never leaves its connection in the pool.

pg8000 sends a statement's Parse and Describe before it encodes the parameters; when encoding fails (a datetime
at year 1 +14:00 overflows when it is turned to UTC), the replies stay unread on the socket and the next
statement on that connection reads the previous one's answer: another organization's request then gets a 500
or a false 403 NOT_A_MEMBER until the process restarts. Every kind of mid-statement failure below is followed
by 100 requests from another organization through the API handler, on a pool of one connection (the one that
failed would be handed straight back), and every one of them must get its own organization's answer.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import String, TypeDecorator, bindparam, select, text
from sqlalchemy.exc import DBAPIError, StatementError

from leadcrm.platform.db.consumer_uow import ConsumerUnitOfWork
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.transactions import transaction
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound
from tests.support.api import call_api
from tests.support.reliability_helpers import OrgWorld, make_world

REQUESTS_AFTER = 100


@pytest.fixture(autouse=True)
def pool_of_one(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The product's pool, with one connection: whatever the failed request leaves is the next one's."""
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    monkeypatch.setenv("DB_POOL_SIZE", "1")
    get_settings.cache_clear()
    dispose_engine()
    yield
    get_settings.cache_clear()
    dispose_engine()


@pytest.fixture(scope="module")
def bystander() -> tuple[OrgWorld, str]:
    """Another organization and the one lead it has: what each of its requests must find."""
    world = make_world("Bystander")
    return world, world.lead(name="Bystander lead")


class Unprintable:
    """A value pg8000 has no encoder for: it falls back to str(), which fails after Parse and Describe went out."""

    def __str__(self) -> str:
        raise RuntimeError("no text form")


class RefusedInBindProcessor(TypeDecorator[str]):
    """A type whose bind processor (run while the statement is compiled for execution) raises."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        raise ValueError("refused while binding")


class Interrupted(BaseException):
    """KeyboardInterrupt-like: not an Exception, raised by a signal handler in the middle of a read."""


@contextmanager
def raised_by_alarm(error: BaseException, after: float = 0.05) -> Iterator[None]:
    """`error` raised from a signal handler while the block waits on the server (a read in flight)."""

    def _raise(signum: int, frame: Any) -> None:
        raise error

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, after)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _the_issues_sla_report(attacker: OrgWorld) -> None:
    response = call_api(
        "GET",
        f"/organizations/{attacker.id}/ticket-reports/sla",
        sub=attacker.owner,
        query={"from": "0001-01-01", "to": "0001-01-02"},
    )
    assert response.status < 600  # whatever it answers (a 400 once dates are bounded), it harms nobody else


def _unencodable_parameter(attacker: OrgWorld) -> None:
    with pytest.raises(RuntimeError), UnitOfWork() as uow:
        uow.connection.execute(text("SELECT :v"), {"v": Unprintable()})


def _datetime_the_driver_cannot_convert(attacker: OrgWorld) -> None:
    from datetime import datetime, timedelta, timezone

    year_one = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
    with pytest.raises(OverflowError), UnitOfWork() as uow:
        uow.connection.execute(text("SELECT CAST(:at AS timestamptz)"), {"at": year_one})


def _bind_processor_raises(attacker: OrgWorld) -> None:
    with pytest.raises(StatementError), UnitOfWork() as uow:
        uow.connection.execute(select(bindparam("v", "x", type_=RefusedInBindProcessor())))


def _interrupt_while_reading(attacker: OrgWorld) -> None:
    with pytest.raises(Interrupted), UnitOfWork() as uow, raised_by_alarm(Interrupted()):
        uow.connection.execute(text("SELECT pg_sleep(2)"))


def _timeout_while_reading(attacker: OrgWorld) -> None:
    with pytest.raises((TimeoutError, DBAPIError)), UnitOfWork() as uow, raised_by_alarm(TimeoutError()):
        uow.connection.execute(text("SELECT pg_sleep(2)"))


def _statement_timeout_on_the_server(attacker: OrgWorld) -> None:
    with pytest.raises(DBAPIError, match="statement timeout"), UnitOfWork() as uow:
        uow.connection.execute(text("SET LOCAL statement_timeout = 20"))
        uow.connection.execute(text("SELECT pg_sleep(2)"))


def _python_error_between_statements(attacker: OrgWorld) -> None:
    with pytest.raises(KeyError), UnitOfWork() as uow:
        uow.connection.execute(text("SELECT 1"))
        {}["missing"]  # noqa: B018 - the bug between two statements


def _failure_in_a_jobs_transaction(attacker: OrgWorld) -> None:
    with pytest.raises(RuntimeError), transaction() as conn:
        conn.execute(text("SELECT :v"), {"v": Unprintable()})


def _failure_in_a_consumers_unit_of_work(attacker: OrgWorld) -> None:
    """task_lifecycle runs its reactions on a ConsumerUnitOfWork over the UnitOfWork's connection."""
    with pytest.raises(RuntimeError), UnitOfWork() as uow:
        inner = ConsumerUnitOfWork(uow.connection)
        inner.connection.execute(text("SELECT :v"), {"v": Unprintable()})


FAILURES: dict[str, Callable[[OrgWorld], None]] = {
    "the issue's SLA report at year 1 +14:00": _the_issues_sla_report,
    "a parameter pg8000 cannot encode": _unencodable_parameter,
    "a datetime pg8000 cannot convert to UTC": _datetime_the_driver_cannot_convert,
    "an exception in a bind processor": _bind_processor_raises,
    "a BaseException in the middle of a read": _interrupt_while_reading,
    "a timeout in the middle of a read": _timeout_while_reading,
    "the server's statement timeout": _statement_timeout_on_the_server,
    "a Python error between two statements": _python_error_between_statements,
    "a failure in a job's transaction": _failure_in_a_jobs_transaction,
    "a failure in a consumer's unit of work": _failure_in_a_consumers_unit_of_work,
}


@pytest.mark.parametrize("kind", FAILURES)
def test_after_a_failed_statement_another_organizations_requests_all_succeed(kind, bystander):
    world, lead_id = bystander
    FAILURES[kind](make_world("Attacker"))

    answers = [
        call_api("GET", f"/organizations/{world.id}/leads", sub=world.owner) for _ in range(REQUESTS_AFTER)
    ]

    wrong = [(a.status, a.error_code) for a in answers if a.status != 200 or [x["id"] for x in a.data] != [lead_id]]
    assert wrong == [], f"{len(wrong)} of {REQUESTS_AFTER} requests were hurt: {wrong[:5]}"


def _connection_identity() -> int:
    with get_engine().connect() as conn:
        return conn.execute(text("SELECT pg_backend_pid()")).scalar_one()


def test_an_error_the_server_reported_and_the_work_handled_keeps_the_connection():
    """A unique violation caught in a savepoint (a dedup race, an idempotency claim) leaves the protocol in
    step with the server: the unit of work carries on and commits, and nothing reconnects for it."""
    before = _connection_identity()
    with UnitOfWork() as uow:
        try:
            with uow.connection.begin_nested():
                uow.connection.execute(text("SELECT 1 / 0"))
        except DBAPIError:
            pass
        assert uow.connection.execute(text("SELECT 2")).scalar_one() == 2
        uow.commit()
    assert _connection_identity() == before


def test_a_refusal_raised_between_statements_keeps_the_connection():
    """A 404 or 403 is an answer, not a fault: the rolled-back connection goes back to the pool."""
    before = _connection_identity()
    with pytest.raises(NotFound), UnitOfWork() as uow:
        uow.connection.execute(text("SELECT 1"))
        raise NotFound("Not found.", code="LEAD_NOT_FOUND")
    assert _connection_identity() == before


def test_a_failure_mid_statement_replaces_the_connection():
    before = _connection_identity()
    _unencodable_parameter(make_world("Attacker"))
    assert _connection_identity() != before
