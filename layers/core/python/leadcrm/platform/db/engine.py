"""The module-level engine: one pooled connection per Lambda container, reused across invocations.

Credentials come from configuration: a DATABASE_URL (local stack, tests), a Secrets Manager secret, or an
RDS IAM auth token minted for each new connection (through RDS Proxy in AWS).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, ExceptionContext, make_url

from leadcrm.platform.config import DatabaseSettings, get_settings
from leadcrm.platform.db import statements
from leadcrm.platform.db.storable import storable_json, storable_parameters

_engine: Engine | None = None
_lock = threading.Lock()


def get_engine() -> Engine:
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                _engine = build_engine(get_settings().database)
    return _engine


def dispose_engine() -> None:
    """Forget the engine (tests and the local stack switch databases); the next use builds a new one."""
    global _engine
    with _lock:
        if _engine is not None:
            _engine.dispose()
        _engine = None


def pg8000_url(url: str) -> URL:
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+pg8000")


def build_engine(settings: DatabaseSettings) -> Engine:
    # Imported here: they import pg8000, which only a request that reaches the database needs.
    from leadcrm.platform.db import paramstyle
    from leadcrm.platform.db.timestamps import register_fast_parsers

    connect_args: dict[str, Any] = {}
    if settings.ssl:
        connect_args["ssl_context"] = ssl.create_default_context()
    if settings.auth_mode == "url":
        url = pg8000_url(settings.url or "")
    elif settings.auth_mode == "secret":
        url = _url_from_secret(settings)
    elif settings.auth_mode == "iam":
        url = URL.create(
            "postgresql+pg8000", username=settings.user, host=settings.host, port=settings.port, database=settings.name
        )
    else:
        raise ValueError(f"DB_AUTH_MODE must be url, secret or iam, not {settings.auth_mode!r}")
    engine = create_engine(
        url,
        pool_size=settings.pool_size,
        max_overflow=0,
        pool_pre_ping=True,
        pool_recycle=900,
        connect_args=connect_args,
        json_serializer=storable_json,
    )
    # pg8000 rewrites each statement's placeholders once, not on every execute (paramstyle.py).
    paramstyle.install()
    if settings.auth_mode == "iam":
        _mint_iam_token_per_connection(engine, settings)
    event.listen(engine, "connect", _disable_nagle)
    # Dates and timestamps parsed by fromisoformat, not strptime: ~70× cheaper a value (timestamps.py).
    event.listen(engine, "connect", register_fast_parsers)
    event.listen(engine, "handle_error", discard_unless_the_server_answered)
    # No NUL reaches PostgreSQL, whatever the column (storable.py).
    event.listen(engine, "before_cursor_execute", storable_parameters, retval=True)
    # Every statement counted (and timed) for the request log line and the unit of work's trace (statements.py).
    event.listen(engine, "before_cursor_execute", statements.before_cursor_execute)
    event.listen(engine, "after_cursor_execute", statements.after_cursor_execute)
    return engine


def answered_by_the_server(error: BaseException) -> bool:
    """pg8000 raises a DatabaseError carrying the server's ErrorResponse fields only once it has read every
    reply up to ReadyForQuery: the connection is then in step with the server and may be used again."""
    from pg8000.exceptions import DatabaseError

    return isinstance(error, DatabaseError) and bool(error.args) and isinstance(error.args[0], dict)


def discard_unless_the_server_answered(context: ExceptionContext) -> None:
    """Any other failure while a statement is under way (pg8000 failing to encode a parameter after it sent
    the Parse and Describe, an exception in a bind processor or an event hook, an interrupt in the middle of
    a read) may leave replies unread on the socket. The next statement on that connection would then read
    the previous one's answer: another request's rows, or no membership (a false 403). So the connection is
    invalidated (closed and dropped from the pool, which opens a new one) rather than returned. Only this
    connection: the others in the pool are not suspect, unlike after a real disconnect."""
    if context.is_disconnect or answered_by_the_server(context.original_exception):
        return
    context.is_disconnect = True
    context.invalidate_pool_on_disconnect = False


def _disable_nagle(dbapi_connection: Any, connection_record: Any) -> None:
    """pg8000 leaves Nagle's algorithm on: a statement larger than one TCP segment then waits ~40 ms for a
    delayed acknowledgement before its tail is sent. Queries go out whole and at once instead."""
    sock = getattr(dbapi_connection, "_usock", None)
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _url_from_secret(settings: DatabaseSettings) -> URL:
    from leadcrm.platform.adapters.aws import client

    secret = json.loads(client("secretsmanager").get_secret_value(SecretId=settings.secret_arn)["SecretString"])
    return URL.create(
        "postgresql+pg8000",
        username=secret["username"],
        password=secret["password"],
        host=settings.host or secret["host"],
        port=int(secret.get("port", settings.port)),
        database=secret.get("dbname", settings.name),
    )


def _mint_iam_token_per_connection(engine: Engine, settings: DatabaseSettings) -> None:
    from leadcrm.platform.adapters.aws import client

    @event.listens_for(engine, "do_connect")
    def _provide_token(dialect: Any, conn_rec: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["password"] = client("rds").generate_db_auth_token(
            DBHostname=settings.host, Port=settings.port, DBUsername=settings.user
        )
