"""boto3 clients, created on first use and reused for the life of the container.

boto3 is imported here and only here, on first use, so a function that never calls AWS never pays for it
(and the region comes from `leadcrm.platform.environment`, so the receivers outside the VPC load no pydantic).
A client honours AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE>, which is how the local stack and the tests
point every client at moto.
"""

from __future__ import annotations

import threading
from typing import Any

_clients: dict[str, Any] = {}
_lock = threading.Lock()


def client(service: str) -> Any:
    found = _clients.get(service)
    if found is not None:
        return found
    with _lock:  # a boto3 Session is not thread-safe; the clients it makes are
        if service not in _clients:
            import boto3
            from botocore.config import Config

            from leadcrm.platform.environment import aws_region

            config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=5)
            if service == "s3":  # presigned URLs (CSV uploads) signed with SigV4, as every region accepts
                config = config.merge(Config(signature_version="s3v4"))
            _clients[service] = boto3.session.Session().client(service, region_name=aws_region(), config=config)
        return _clients[service]


def error_code(error: BaseException) -> str:
    """The AWS error code of a botocore ClientError ("MessageRejected", "NoSuchKey", …), else the class name:
    what a log line and a stored failure say, without the message's details."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    return type(error).__name__


def reset_clients() -> None:
    """Drop cached clients (tests switch endpoints between runs)."""
    with _lock:
        _clients.clear()
