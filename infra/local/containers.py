"""Lambda's concurrency on this machine: warm containers per function, each a process of its own.

A Lambda container runs one invocation at a time and the handlers rely on it (the HTTP resolver keeps the
current event on the app; Powertools' Logger and Metrics keep module state), so a container here is a worker
process that imported its function's handler and answers one invocation after another. A function gets a new
container when all its warm ones are busy, up to its concurrency limit (`--concurrency`, LOCAL_CONCURRENCY);
at the limit an invocation waits for the next free container instead of failing. Containers stay warm and
are reused, the most recently used first, as Lambda reuses them.

Containers are forked from a server process that imported every handler once (multiprocessing's forkserver,
started when the stack's environment is complete), so a new container costs a fork, not a second of imports,
and it starts from a process that never ran a thread. What lives in the stack's process and a container must
still see:
- the environment (DATABASE_URL, AWS_ENDPOINT_URL pointing at moto, queue URLs, META_GRAPH_BASE_URL…): the
  forkserver inherits it whole, and each container gets it again as it starts (DB_POOL_SIZE is Lambda's 1);
- the local clock (`/_local/clock`): its offset travels with every invocation;
- the armed faults (`/_local/faults`): a container's botocore handler asks the stack's registry, over the
  container's pipe, whether a call fails, so a fault's count is shared by every container;
- moto, SES's sent mail and the Graph stand-in are servers in the stack's process: containers reach them
  over HTTP, as the functions reach AWS.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import sys
import threading
import traceback
from collections.abc import Mapping
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

from infra.local import faults
from infra.local.lambdas import CODE_PATHS, HANDLERS, LocalContext

# Reserved concurrency per function: the API serves the dashboard's parallel requests; the event functions
# are fed by one poller each plus the scheduler.
DEFAULT_CONCURRENCY = {
    "api": 4,
    "webhooks": 2,
    "ingestion": 2,
    "graph_fetch": 2,
    "meta_events": 1,
    "webhook_delivery": 2,
    "task_lifecycle": 2,
}
MAX_CONCURRENCY = 64
# Lambda's own pool size (config's default): one connection per container, one invocation at a time.
CONTAINER_ENVIRONMENT = {"DB_POOL_SIZE": "1"}
STOP_SECONDS = 5


class ConcurrencyRefused(ValueError):
    """A `--concurrency` / LOCAL_CONCURRENCY value the stack cannot run with."""


class ContainerFailed(RuntimeError):
    """The container did not start, or died mid-invocation (it is discarded, as Lambda discards one)."""


class ContainerGone(ContainerFailed):
    """The container had died before the invocation reached it: another one can take the invocation."""


class HandlerFailed(RuntimeError):
    """The handler raised an exception that cannot travel between processes: its type and message."""


def parse_concurrency(text: str | None) -> dict[str, int]:
    """Each function's limit: DEFAULT_CONCURRENCY, changed by `N` (every function) and/or `function=N,…`."""
    limits = dict(DEFAULT_CONCURRENCY)
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        name, _, value = part.rpartition("=")
        names = [name] if name else list(limits)
        if name and name not in limits:
            raise ConcurrencyRefused(f"concurrency: unknown function {name!r}; functions: {', '.join(limits)}")
        if not value.isdigit() or not 1 <= int(value) <= MAX_CONCURRENCY:
            raise ConcurrencyRefused(f"concurrency: {part!r} is not a limit from 1 to {MAX_CONCURRENCY}")
        limits.update(dict.fromkeys(names, int(value)))
    return limits


# --- inside a container -------------------------------------------------------------------------------
class _StackFaults:
    """The stack's fault registry as a container sees it: each question goes over the container's pipe to
    the invocation that is waiting on it in the stack's process."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def take(self, service: str) -> str | None:
        self._connection.send(("take", service))
        mode: str | None = self._connection.recv()
        return mode


def _portable(error: BaseException) -> BaseException:
    """The handler's exception if it survives pickling, else one that says what it was."""
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return HandlerFailed(f"{type(error).__name__}: {error}")


def serve(function: str, module: str, connection: Connection, environment: dict[str, str]) -> None:
    """A container's life: import the handler, then one invocation after another until the stack stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in `make dev` reaches the whole process group
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # one log line at a time, interleaved with the others'
    os.environ.update(environment)
    for path in CODE_PATHS:
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    from leadcrm.platform import clock
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    get_settings.cache_clear()  # read from this container's environment
    dispose_engine()
    faults.registry = _StackFaults(connection)  # type: ignore[assignment]
    faults.install()  # this process's botocore sessions carry the fault handler
    try:
        handler = importlib.import_module(module).lambda_handler
    except BaseException:
        connection.send(("failed", traceback.format_exc()))
        return
    connection.send(("ready", os.getpid()))
    while True:
        try:
            kind, payload = connection.recv()
        except (EOFError, OSError):  # the stack is gone
            return
        if kind == "stop":
            return
        offset, event = payload
        clock.reset()
        clock.advance(offset)
        try:
            answer: tuple[str, Any] = ("result", handler(event, LocalContext(function_name=function)))
        except Exception as error:  # the invocation failed, as Lambda reports it: logged, then raised to the caller
            traceback.print_exc()
            answer = ("error", _portable(error))
        connection.send(answer)


# --- in the stack's process -----------------------------------------------------------------------------
class Container:
    """One warm container of one function: the stack's end of the worker's pipe."""

    def __init__(self, context: Any, function: str, module: str, environment: dict[str, str]) -> None:
        self.function = function
        self._connection, child_end = multiprocessing.Pipe()
        self.process = context.Process(
            target=serve, args=(function, module, child_end, environment), name=f"container-{function}", daemon=True
        )
        self.process.start()
        child_end.close()
        kind, detail = self._receive()
        if kind != "ready":
            self.stop()
            raise ContainerFailed(f"the {function} container did not start:\n{detail}")

    def _receive(self) -> tuple[str, Any]:
        try:
            message: tuple[str, Any] = self._connection.recv()
        except (EOFError, OSError) as gone:
            raise ContainerFailed(f"the {self.function} container exited (code {self.process.exitcode})") from gone
        return message

    def invoke(self, event: dict[str, Any], offset: timedelta) -> Any:
        try:
            self._connection.send(("invoke", (offset, event)))
        except OSError as gone:
            raise ContainerGone(f"the {self.function} container had exited (code {self.process.exitcode})") from gone
        while True:
            kind, value = self._receive()
            if kind == "take":  # a botocore call in the container asks whether an armed fault fails it
                self._connection.send(faults.registry.take(value))
            elif kind == "result":
                return value
            elif kind == "error":
                raise value
            else:
                raise ContainerFailed(f"the {self.function} container answered {kind!r}")

    @property
    def alive(self) -> bool:
        return bool(self.process.is_alive())

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self._connection.send(("stop", None))
        self._connection.close()
        self.process.join(STOP_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(STOP_SECONDS)


class _Function:
    """One function's containers: the warm idle ones and how many there are in all, under its limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.idle: list[Container] = []
        self.count = 0
        self.free = threading.Condition()


class ContainerPool:
    """What pollers, the scheduler and the gateway invoke: `invoke(function, event)` as Lambda's Invoke."""

    def __init__(self, limits: Mapping[str, int] | None = None, handlers: Mapping[str, str] = HANDLERS) -> None:
        self.limits = dict(limits or DEFAULT_CONCURRENCY)
        self.handlers = dict(handlers)  # function name -> its handler's module
        self._functions = {name: _Function(self.limits.get(name, 1)) for name in self.handlers}
        self._context: Any = None
        self._environment: dict[str, str] = {}
        self._starting: list[threading.Thread] = []
        self._stopped = False

    def preload(self) -> None:
        """Start the forkserver, which imports every handler meanwhile (the stack starts PostgreSQL and moto).
        Nothing reads the environment at import but Powertools (POWERTOOLS_*): set those first."""
        if self._context is not None:
            return
        for path in CODE_PATHS:
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload([__name__, *self.handlers.values(), *_route_modules(self.handlers)])
        from multiprocessing import forkserver

        forkserver.ensure_running()

    def start(self) -> None:
        """Start one warm container per function, in the background (`wait_until_warm` waits for them; an
        invocation meanwhile waits for its function's). Call it once the stack's environment is complete:
        each container takes it as it is now."""
        self.preload()
        self._environment = {**os.environ, **CONTAINER_ENVIRONMENT}
        self._starting = [threading.Thread(target=self._prewarm, args=(name,)) for name in self.handlers]
        for function in self._functions.values():
            with function.free:
                function.count += 1  # taken now: an invocation waits for this container rather than fork another
        for thread in self._starting:
            thread.start()

    def wait_until_warm(self) -> None:
        """Every function has its first warm container; ContainerFailed when one could not start."""
        for thread in self._starting:
            thread.join()
        failed = [name for name, function in self._functions.items() if function.count == 0]
        if failed:
            raise ContainerFailed(f"the {', '.join(failed)} container(s) did not start (see the log above)")

    def _prewarm(self, name: str) -> None:
        function = self._functions[name]
        try:
            container = Container(self._context, name, self.handlers[name], self._environment)
        except ContainerFailed as failed:
            print(failed, file=sys.stderr, flush=True)
            with function.free:
                function.count -= 1
                function.free.notify()
            return
        with function.free:
            function.idle.append(container)
            function.free.notify()

    def invoke(self, name: str, event: dict[str, Any]) -> Any:
        from leadcrm.platform import clock

        while True:
            container = self._acquire(name)
            healthy = False
            try:
                answer = container.invoke(event, clock.offset())
                healthy = True
                return answer
            except ContainerGone:
                continue  # the invocation never reached it: a live container takes it (finally discards this one)
            except ContainerFailed:
                raise
            except Exception:
                healthy = True  # the handler raised; the container itself is fine, as in Lambda
                raise
            finally:
                self._release(name, container, healthy and container.alive)

    def _acquire(self, name: str) -> Container:
        function = self._functions[name]
        with function.free:
            while not function.idle and function.count >= function.limit:
                function.free.wait()
            if function.idle:
                return function.idle.pop()  # the warmest: the one that finished last
            function.count += 1  # a cold start, taken while the lock is let go
        try:
            return Container(self._context, name, self.handlers[name], self._environment)
        except BaseException:
            with function.free:
                function.count -= 1
                function.free.notify()
            raise

    def _release(self, name: str, container: Container, healthy: bool) -> None:
        function = self._functions[name]
        if not healthy or self._stopped:
            container.stop()
        with function.free:
            if healthy and not self._stopped:
                function.idle.append(container)
            else:
                function.count -= 1
            function.free.notify()

    def warm(self) -> dict[str, int]:
        """How many containers each function has now (busy or idle)."""
        return {name: function.count for name, function in self._functions.items()}

    def stop(self) -> None:
        self._stopped = True
        for function in self._functions.values():
            with function.free:
                idle, function.idle = function.idle, []
                function.count -= len(idle)
            for container in idle:
                container.stop()


def _route_modules(handlers: dict[str, str]) -> tuple[str, ...]:
    """The API's route modules, which a Lambda container imports on its first request to each (api.routing):
    preloaded here, so a forked container answers its first request at warm speed. The import cost itself is
    measured by `make bench` (bench/imports.py), not by the local stack."""
    if "api.handler" not in handlers.values():
        return ()
    import importlib

    return tuple(importlib.import_module("api.handler").ROUTE_MODULES)
