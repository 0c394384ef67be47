"""Permanent or transient: what a consumer does with a message that failed (DESIGN.md: consumers tell them apart).

A permanent failure can never succeed, however often SQS delivers the message again: bad data (a body that is
not JSON, a payload of the wrong type, a field that does not parse), a refusal of ours (an AppError), a row a
constraint will refuse again, an AWS request AWS refuses as it stands. It is *rejected*: logged as one
structured line (the message id, the function, the reason; ids only, never the payload), counted as the
metric `RejectedMessages` (dimensions `function` and `reason`), and acknowledged.

A transient failure may succeed on a later delivery: the database unreachable, restarting, deadlocked or timed
out, AWS throttling or failing, a network timeout, an error raised as a TransientFailure (Graph's, say). It is
raised again: SQS redelivers it and, after the queue's receive limit, parks it in the DLQ, where a redrive
once the cause is gone can still succeed. An error this module cannot name is treated so too: retrying a
message costs a few deliveries, rejecting one we should not have loses it.

Every consumer (task_lifecycle, ingestion, graph_fetch) wraps its record handler in `rejecting_permanent`,
so the rule is this one module; the same wrapper makes the record's message id the correlation id of every
log line written while it is handled (telemetry.correlated). It imports neither SQLAlchemy nor botocore: an
error of theirs can only exist
once they are loaded, so it looks them up in sys.modules (graph_fetch and the webhook receiver load no ORM).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from leadcrm.platform.errors import AppError
from leadcrm.platform.telemetry import correlated

logger = logging.getLogger(__name__)

METRICS_NAMESPACE = "LeadCRM"  # the POWERTOOLS_METRICS_NAMESPACE infra sets on every function
REJECTED_METRIC = "RejectedMessages"

# Reasons, a short closed list (each is a metric dimension value; the log line carries the detail).
MALFORMED = "malformed"  # the message is not what its consumer reads: not JSON, the wrong shape or types
INVALID_DATA = "invalid_data"  # a value in it does not parse or validate
REFUSED = "refused"  # one of our rules refused it (an AppError)
CONSTRAINT = "constraint"  # the database refuses the row as it stands (integrity, data exception, trigger)
AWS_REFUSED = "aws_refused"  # AWS refuses the request as it stands (a 4xx other than throttling or access)

# SQLSTATE: class 22 (data exception), 23 (integrity constraint), P0001 (a trigger's RAISE) fail the same way
# on every delivery. Every other code (08 connection, 40 deadlock or serialization, 53 resources, 55P03 lock
# not available, 57 timeout or shutdown, 42 a schema a deploy is still migrating, …) is worth a retry.
_PERMANENT_SQLSTATE_CLASSES = ("22", "23")
_PERMANENT_SQLSTATES = frozenset({"P0001"})
# AWS error codes of a 4xx that a later attempt can pass: throttling, and credentials, permissions or a
# missing queue, bucket or secret that a deploy fixes (the message then waits in the DLQ for its redrive).
_RETRYABLE_AWS_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "SlowDown",
        "PriorRequestNotComplete",
        "RequestTimeout",
        "RequestTimeoutException",
        "KMSThrottlingException",
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "NoSuchBucket",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "ResourceNotFoundException",
    }
)
# Python's own errors for data that is not what the code reads (JSONDecodeError, UnicodeError and pydantic's
# ValidationError are ValueErrors; a payload `5` where an object belongs raises AttributeError or TypeError).
_BAD_DATA = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)


class Rejected(Exception):
    """Raised by a consumer that knows the message can never succeed; `reason` is one of the reasons above."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class TransientFailure(Exception):
    """Raised by an adapter whose failure a later attempt may not meet (an outside service's 5xx, a timeout)."""


@dataclass(frozen=True)
class Failure:
    transient: bool
    reason: str  # for a permanent failure, one of the reasons above; "transient" otherwise
    detail: str  # the error's type and codes: no message text, which can quote row values


def classify(error: BaseException) -> Failure:
    """Whether `error` is worth a retry, and why (see the module's docstring)."""
    if isinstance(error, Rejected):
        return Failure(False, error.reason, error.detail)
    if isinstance(error, TransientFailure):
        return _transient(error)
    if isinstance(error, AppError):
        # 429 is a refusal for now, not for ever (a rate limit)
        return _transient(error) if error.status == 429 else Failure(False, REFUSED, f"AppError {error.code}")
    database = _database_failure(error)
    if database is not None:
        return database
    aws = _aws_failure(error)
    if aws is not None:
        return aws
    if isinstance(error, OSError):  # ConnectionError, TimeoutError, socket and urllib errors
        return _transient(error)
    if isinstance(error, _BAD_DATA):
        return Failure(False, INVALID_DATA, type(error).__name__)
    return _transient(error)


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Around the code that reads a message into what its consumer needs: a data error there is the
    message's fault, never worth a retry (Rejected MALFORMED)."""
    try:
        yield
    except Rejected:
        raise
    except (*_BAD_DATA, AppError) as error:
        raise Rejected(MALFORMED, f"{what}: {type(error).__name__}") from error


def json_object(value: Any, what: str) -> dict[str, Any]:
    """`value` if it is a JSON object; Rejected MALFORMED otherwise (a payload `5`, `[]` or `null`)."""
    if not isinstance(value, dict):
        raise Rejected(MALFORMED, f"{what} is a {type(value).__name__}, not an object")
    return value


F = TypeVar("F", bound=Callable[..., Any])


def rejecting_permanent(function: str, message_id: Callable[[Any], str | None]) -> Callable[[F], F]:
    """A record handler that acknowledges (returns) a permanent failure after recording it, and raises a
    transient one (Powertools' BatchProcessor then reports it in batchItemFailures)."""

    def decorate(handler: F) -> F:
        @functools.wraps(handler)
        def record_handler(record: Any, **kwargs: Any) -> Any:
            with correlated(message_id(record)):
                try:
                    return handler(record, **kwargs)
                except Exception as error:
                    failure = classify(error)
                    if failure.transient:
                        logger.warning(
                            "message failed; retried",
                            extra={"function": function, "messageId": message_id(record), "detail": failure.detail},
                        )
                        raise
                    record_rejection(function, message_id(record), failure, error)
                    return {"rejected": failure.reason}

        return record_handler  # type: ignore[return-value]

    return decorate


def record_rejection(function: str, message_id: str | None, failure: Failure, error: BaseException) -> None:
    """The rejected message's structured log line and its count. A data error raised deep in the work may
    be our bug rather than the message's: the stack trace is kept (exc_info) so the log says which."""
    logger.error(
        "message rejected",
        extra={"function": function, "messageId": message_id, "reason": failure.reason, "detail": failure.detail},
        exc_info=failure.reason == INVALID_DATA and not isinstance(error, Rejected),
    )
    try:
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        # single_metric prints its EMF line at once, with its own dimensions: the function's other metrics,
        # flushed at the end of the batch, keep theirs.
        with single_metric(name=REJECTED_METRIC, unit=MetricUnit.Count, value=1, namespace=METRICS_NAMESPACE) as m:
            m.add_dimension(name="function", value=function)
            m.add_dimension(name="reason", value=failure.reason)
    except Exception:  # counting must never turn a handled message into a retried one
        logger.warning("rejection metric not emitted", extra={"metric": REJECTED_METRIC})


def sqlstate(error: BaseException) -> str | None:
    """The PostgreSQL error code behind a driver error (pg8000 passes the server's fields as a dict)."""
    original = getattr(error, "orig", None) or error
    for candidate in (getattr(original, "sqlstate", None), getattr(original, "pgcode", None)):
        if candidate:
            return str(candidate)
    args = getattr(original, "args", ())
    if args and isinstance(args[0], dict):
        code = args[0].get("C")
        return str(code) if code else None
    return None


def _transient(error: BaseException, *codes: str | None) -> Failure:
    return Failure(True, "transient", " ".join([type(error).__name__, *(c for c in codes if c)]))


def _database_failure(error: BaseException) -> Failure | None:
    exc = sys.modules.get("sqlalchemy.exc")
    if exc is None or not isinstance(error, exc.SQLAlchemyError):
        driver = sys.modules.get("pg8000.exceptions")
        if driver is not None and isinstance(error, driver.Error):
            return _by_sqlstate(error)
        return None
    if isinstance(error, exc.DBAPIError):
        if error.connection_invalidated:
            return _transient(error, "connection invalidated")
        return _by_sqlstate(error)
    if isinstance(error, exc.StatementError) and error.orig is not None:
        return classify(error.orig)  # a bind processor's own error (a value it cannot take)
    return _transient(error)  # the pool timing out, a connection closed under us


def _by_sqlstate(error: BaseException) -> Failure:
    code = sqlstate(error)
    if code is None:  # no answer from the server at all: the connection broke
        return _transient(error)
    if code[:2] in _PERMANENT_SQLSTATE_CLASSES or code in _PERMANENT_SQLSTATES:
        return Failure(False, CONSTRAINT, f"{type(error).__name__} {code}")
    return _transient(error, code)


def refused_for_now(error: BaseException) -> bool:
    """An AWS answer that refused the request for now: throttling, a 5xx, credentials (the transient
    ClientErrors). The request was answered and not carried out, so sending it again later cannot do it twice
    (botocore's own retries resend exactly these). A timeout or a broken connection is not one: the request
    may have been carried out."""
    exc = sys.modules.get("botocore.exceptions")
    return exc is not None and isinstance(error, exc.ClientError) and classify(error).transient


def _aws_failure(error: BaseException) -> Failure | None:
    exc = sys.modules.get("botocore.exceptions")
    if exc is None:
        return None
    if isinstance(error, exc.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if status >= 500 or status == 429 or code in _RETRYABLE_AWS_CODES:
            return _transient(error, code, str(status or ""))
        return Failure(False, AWS_REFUSED, f"ClientError {code} {status}".strip())
    if isinstance(error, exc.ParamValidationError):  # the request itself is malformed (too long, wrong type)
        return Failure(False, AWS_REFUSED, "ParamValidationError")
    if isinstance(error, exc.BotoCoreError):  # no endpoint, a connect or read timeout, no credentials yet
        return _transient(error)
    return None
