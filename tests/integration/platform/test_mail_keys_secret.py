"""In AWS the signing keys are read from Secrets Manager (moto here), once per five minutes."""

from __future__ import annotations

import json

from leadcrm.platform import mail_keys
from tests.support.aws import aws_client


def test_the_keys_are_read_from_the_secret_and_cached(monkeypatch):
    arn = aws_client("secretsmanager").create_secret(
        Name="leadcrm-email-signing", SecretString=json.dumps({"keys": ["current", "previous"]})
    )["ARN"]
    monkeypatch.setenv("EMAIL_SIGNING_SECRET_ARN", arn)
    mail_keys.forget()
    try:
        assert mail_keys.signing_keys() == (b"current", b"previous")
        aws_client("secretsmanager").put_secret_value(SecretId=arn, SecretString=json.dumps({"keys": ["rotated"]}))
        assert mail_keys.signing_keys() == (b"current", b"previous")  # cached
        mail_keys.forget()
        assert mail_keys.signing_keys() == (b"rotated",)
    finally:
        mail_keys.forget()
