"""The engine gets its credentials the way Aurora is configured: a Secrets Manager secret or an IAM token."""

from __future__ import annotations

import json

import boto3
from sqlalchemy import make_url, text

from leadcrm.platform.config import DatabaseSettings
from leadcrm.platform.db.engine import build_engine


def _settings(database_url: str, **overrides: object) -> DatabaseSettings:
    url = make_url(database_url)
    values: dict[str, object] = {
        "url": None,
        "auth_mode": "secret",
        "host": url.host,
        "port": url.port,
        "name": url.database,
        "user": url.username,
        "secret_arn": None,
        "pool_size": 1,
        "ssl": False,
    }
    return DatabaseSettings(**{**values, **overrides})  # type: ignore[arg-type]


def test_secret_mode_reads_user_password_and_database_from_secrets_manager(database_url: str) -> None:
    url = make_url(database_url)
    arn = boto3.client("secretsmanager").create_secret(
        Name="leadcrm/platform/db",
        SecretString=json.dumps(
            {
                "username": url.username,
                "password": "from-the-secret",
                "host": "ignored-when-db-host-is-set",
                "port": url.port,
                "dbname": url.database,
            }
        ),
    )["ARN"]

    engine = build_engine(_settings(database_url, secret_arn=arn))

    assert engine.url.password == "from-the-secret"
    assert engine.url.host == url.host  # DB_HOST (the proxy endpoint) wins over the secret's host
    with engine.connect() as conn:
        assert conn.execute(text("SELECT current_database()")).scalar_one() == url.database
    engine.dispose()


def test_iam_mode_mints_a_fresh_auth_token_as_the_password_of_each_new_connection(database_url: str) -> None:
    engine = build_engine(_settings(database_url, auth_mode="iam"))
    seen: list[str] = []

    from sqlalchemy import event

    @event.listens_for(engine, "do_connect")
    def _capture(dialect, conn_rec, cargs, cparams):  # runs after the token listener
        seen.append(cparams["password"])

    with engine.connect() as conn:  # the test server trusts local connections, so the token is accepted
        assert conn.execute(text("SELECT 1")).scalar_one() == 1
    engine.dispose()

    assert len(seen) == 1
    assert "X-Amz-Signature=" in seen[0] and "Action=connect" in seen[0]


def test_one_pooled_connection_is_reused_across_invocations(database_url: str) -> None:
    engine = build_engine(_settings(database_url, auth_mode="url", url=database_url))
    with engine.connect() as first:
        pid = first.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with engine.connect() as second:
        assert second.execute(text("SELECT pg_backend_pid()")).scalar_one() == pid
    engine.dispose()


def test_connections_send_statements_without_waiting_for_delayed_acknowledgements(database_url: str) -> None:
    import socket

    engine = build_engine(_settings(database_url, auth_mode="url", url=database_url))
    with engine.connect() as conn:
        sock = conn.connection.dbapi_connection._usock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    engine.dispose()
