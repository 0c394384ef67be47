"""One page size for every list the API answers, so a client pages every list the same way.

Every list is `{"data": [...], "nextCursor": "…"|null}`; `limit` (1 to MAX_PAGE_SIZE, default
DEFAULT_PAGE_SIZE) is the page size and `cursor` (opaque, at most MAX_CURSOR_LENGTH characters) the page
after the one that answered it. Each list's statement count stays the same whatever the page size, so one
bound fits them all; a list small and bounded by nature (pipelines, queues, routing rules …) answers all of
itself with `nextCursor: null`.
"""

from __future__ import annotations

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
# Longer than any cursor this API writes (the queue's, the longest, names a reason, a rank and an instant).
MAX_CURSOR_LENGTH = 1024
