"""The in-process message bus: a capability reacts, in the same transaction, to another's write without being
imported by it (cosmicpython's message bus, on the unit of work's connection).

A lower capability publishes a message it defines (`leads.messages.LeadCreated`); a higher one subscribes a
handler to it in its `reactions.py`; `leadcrm.wiring`, the composition root, lists every subscription. The
publisher calls `handle(conn, message)` and gets each handler's answer, in subscription order: what a handler
wrote to the lead row, or a fact the publisher needs (the ids merged into a lead being erased).

Domain events for other processes are a different thing: they go through the outbox (`platform.outbox`).

The wiring is loaded on the first message, not at import: a function that never publishes (the webhook
receiver, graph_fetch) never loads the capabilities that subscribe, which keeps cold starts small.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection

WIRING_MODULE = "leadcrm.wiring"

M = TypeVar("M")
Handler = Callable[[Connection, Any], Any]

_subscriptions: dict[type, list[Handler]] = {}
_wired = False


def subscribe(message_type: type[M], handler: Callable[[Connection, M], Any]) -> None:
    """`handler(conn, message)` runs for every `message_type` handled from now on (once per registration)."""
    handlers = _subscriptions.setdefault(message_type, [])
    if handler not in handlers:
        handlers.append(handler)


def handle(conn: Connection, message: object) -> list[Any]:
    """Run every handler of the message's type on `conn`, in order; their answers, in the same order.
    A handler's exception propagates: the unit of work rolls back as for any other failure."""
    _load_wiring()
    return [handler(conn, message) for handler in _subscriptions.get(type(message), ())]


def subscriptions() -> dict[type, tuple[Handler, ...]]:
    """What reacts to what (for the wiring's tests and for a newcomer's look)."""
    _load_wiring()
    return {message_type: tuple(handlers) for message_type, handlers in _subscriptions.items()}


def _load_wiring() -> None:
    global _wired
    if not _wired:
        importlib.import_module(WIRING_MODULE).subscribe_all()
        _wired = True
