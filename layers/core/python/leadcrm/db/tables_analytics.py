"""Attribution touch log, campaign spend and response metrics (issue 9)."""

from __future__ import annotations
