"""Logs and traces that connect: the service's Powertools Logger, X-Ray tracing in Lambda only, and
`instrumented`, the decorator every function's handler wears.

Logs. The Powertools Logger is named after the `leadcrm` package, so every core module's stdlib logger
(`logging.getLogger(__name__)`: `leadcrm.leads.capture`, `leadcrm.platform.db.uow`, …) is its child: their
records go up to its handler and come out as its JSON lines, with the invocation's keys (Powertools keeps the
root logger from printing them a second time). An invocation's keys (the Lambda context, `cold_start`, the
`correlation_id`) are kept per thread, with Powertools' thread-safe keys (a contextvar), not in the
formatter's shared dict: the local stack runs its functions in threads of one process, and each line must
name its own function and request.

Traces. In Lambda (LAMBDA_TASK_ROOT and AWS_LAMBDA_FUNCTION_NAME set, not SAM or Chalice's emulators) and
unless POWERTOOLS_TRACE_DISABLED, the Powertools Tracer records the handler as a subsegment, each unit of work
(`leadcrm.platform.db.statements.traced_unit`) and each AWS call (botocore, patched when boto3 is first
imported). Outside Lambda (tests, the local stack) no tracer is built: the X-Ray SDK is not even imported,
no daemon is needed, nothing warns.

Cold start. Outside Lambda, importing the X-Ray SDK creates a botocore session and an X-Ray client for
centralised sampling (~200 ms); in Lambda it does not (Lambda samples), and what is left is the SDK, wrapt and
the Tracer: 8-14 ms of CPU on our machines, whatever the function (outside Lambda, this module costs ~1 ms).
wrapt stays below 2 (pyproject): wrapt 2 imports asyncio and importlib.metadata, ~45 ms more in the functions
that load no asyncio otherwise (webhooks, migrations). Patching botocore at once would import botocore.client
(~70 ms) in functions that create their first client late or never (the webhook receiver on a handshake), so
the patch waits for boto3's import (a wrapt post-import hook).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.lambda_context import build_lambda_context_model
from aws_lambda_powertools.utilities import jmespath_utils

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

SERVICE = "leadcrm"  # the package name: the Logger must be the parent of every `leadcrm.*` logger
logger = Logger(service=SERVICE)

_TRUTHY = frozenset({"1", "true", "t", "yes", "y", "on"})
Handler = TypeVar("Handler", bound=Callable[..., Any])


def tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process traces: in Lambda only, unless POWERTOOLS_TRACE_DISABLED says otherwise."""
    env = os.environ if environ is None else environ
    if env.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower() in _TRUTHY:
        return False
    in_lambda = bool(env.get("LAMBDA_TASK_ROOT")) and bool(env.get("AWS_LAMBDA_FUNCTION_NAME"))
    emulated = bool(env.get("AWS_SAM_LOCAL")) or bool(env.get("AWS_CHALICE_CLI_MODE"))
    return in_lambda and not emulated


@functools.cache
def tracer() -> Tracer | None:
    """The Powertools Tracer when this process traces (built once, at the first handler's import), else None."""
    if not tracing_enabled():
        return None
    import wrapt  # the X-Ray SDK's own dependency
    from aws_lambda_powertools import Tracer

    built = Tracer(service=SERVICE, auto_patch=False)  # patch_all would also wrap pg8000's connections
    # Every client is made through boto3 (adapters.aws, Powertools Parameters), so botocore is patched once boto3
    # is loaded: at once if it is, otherwise as its import ends (by then botocore.client is whole and bound).
    wrapt.register_post_import_hook(lambda _module: built.patch(["botocore"]), "boto3")
    return built


@contextmanager
def subsegment(name: str) -> Iterator[Any]:
    """An X-Ray subsegment around the block (yields it), or nothing (yields None) when not tracing. Local
    work is named `## what`, after Powertools' convention."""
    active = tracer()
    if active is None:
        yield None
        return
    with active.provider.in_subsegment(name=name) as segment:
        yield segment


def instrumented(*, correlation_id_path: str | None = None) -> Callable[[Handler], Handler]:
    """Every function's handler: its log lines carry the Lambda context (function name, request id, memory,
    ARN), `cold_start` and, with `correlation_id_path` (a Powertools correlation path such as
    `correlation_paths.API_GATEWAY_HTTP`), the event's correlation id; in Lambda the handler is traced.

    The trace records neither the response nor the error's details as metadata: both can hold PII (a lead's
    answer, a constraint's message quoting a value). X-Ray still marks a failed invocation as a fault."""

    def decorate(handler: Handler) -> Handler:
        active = tracer()
        traced = (
            handler
            if active is None
            else active.capture_lambda_handler(handler, capture_response=False, capture_error=False)
        )
        cold = [True]

        @functools.wraps(handler)
        def invoke(event: Any, context: Any) -> Any:
            keys: dict[str, Any] = {"cold_start": cold[0], **vars(build_lambda_context_model(context))}
            cold[0] = False
            if correlation_id_path is not None and isinstance(event, dict):
                keys["correlation_id"] = jmespath_utils.query(data=event, envelope=correlation_id_path)
            logger.thread_safe_clear_keys()
            logger.thread_safe_append_keys(**keys)
            try:
                return traced(event, context)
            finally:
                logger.thread_safe_clear_keys()

        return invoke  # type: ignore[return-value]

    return decorate


@contextmanager
def correlated(correlation_id: str | None) -> Iterator[None]:
    """The block's log lines carry `correlation_id` (an SQS record's message id); the ones after it, the
    correlation id they had before."""
    before = logger.thread_safe_get_current_keys().get("correlation_id")
    logger.thread_safe_append_keys(correlation_id=correlation_id)
    try:
        yield
    finally:
        logger.thread_safe_append_keys(correlation_id=before)  # None: the key is left out of the line
