"""Reading ahead: the next item of an iterator made in a background thread while the caller works on this one.

For work that alternates Python and waiting on the database (a CSV import parses and checks its next chunk
while PostgreSQL writes this one): the socket waits release the GIL, so the two overlap. The items come in
order; an exception the iterator raises reaches the caller at that item's place; at most `depth` items are
made ahead. Closing the prefetcher (or leaving the `with` block) stops the thread at its next item.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

_END = object()


# While the read-ahead thread computes, the caller's every return from a socket wait queues for the GIL until
# the thread is made to drop it: the switch interval, 5 ms by default, several times per database statement.
SWITCH_INTERVAL_SECONDS = 0.0005


class Prefetched(Generic[T]):
    def __init__(self, source: Iterator[T], *, depth: int = 1) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, SWITCH_INTERVAL_SECONDS))
        self._items: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._stopping = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._produce, args=(source,), name="prefetch", daemon=True)
        self._thread.start()

    def _produce(self, source: Iterator[T]) -> None:
        try:
            for item in source:
                if not self._put(item):
                    return
        except BaseException as error:  # handed to the caller, in order
            self._put(_Raised(error))
            return
        self._put(_END)

    def _put(self, item: object) -> bool:
        while not self._stopping.is_set():
            try:
                self._items.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        item = self._items.get()
        if item is _END or isinstance(item, _Raised):
            self._finished = True
            if isinstance(item, _Raised):
                raise item.error
            raise StopIteration
        return item  # type: ignore[return-value]

    def close(self) -> None:
        self._stopping.set()
        self._thread.join()
        sys.setswitchinterval(self._switch_interval)

    def __enter__(self) -> Prefetched[T]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _Raised:
    def __init__(self, error: BaseException) -> None:
        self.error = error
