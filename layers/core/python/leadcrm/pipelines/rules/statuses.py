"""Lead status = the category of the lead's primary pipeline stage (DESIGN.md, "Model decisions")."""

from __future__ import annotations

from enum import StrEnum


class StageCategory(StrEnum):
    NEW = "new"
    CONTACTED = "contacted"
    CALLBACK = "callback"
    TRIAL_BOOKED = "trial_booked"
    NO_SHOW = "no_show"
    CONVERTED = "converted"
    CUSTOMER = "customer"
    LOST = "lost"
    FROZEN = "frozen"


OPEN_CATEGORIES = frozenset(
    {
        StageCategory.NEW,
        StageCategory.CONTACTED,
        StageCategory.CALLBACK,
        StageCategory.TRIAL_BOOKED,
        StageCategory.NO_SHOW,
    }
)
WON_CATEGORIES = frozenset({StageCategory.CONVERTED, StageCategory.CUSTOMER})
CLOSED_CATEGORIES = frozenset({StageCategory.LOST, StageCategory.FROZEN})

# The default pipeline has one stage per category, in this order.
DEFAULT_STAGES: tuple[tuple[StageCategory, str], ...] = (
    (StageCategory.NEW, "New"),
    (StageCategory.CONTACTED, "Contacted"),
    (StageCategory.CALLBACK, "Callback"),
    (StageCategory.TRIAL_BOOKED, "Trial booked"),
    (StageCategory.NO_SHOW, "No show"),
    (StageCategory.CONVERTED, "Converted"),
    (StageCategory.CUSTOMER, "Customer"),
    (StageCategory.LOST, "Lost"),
    (StageCategory.FROZEN, "Frozen"),
)
DEFAULT_PIPELINE_NAME = "Sales"


def is_open(category: StageCategory) -> bool:
    return category in OPEN_CATEGORIES


def is_won(category: StageCategory) -> bool:
    return category in WON_CATEGORIES


def is_closed(category: StageCategory) -> bool:
    return category in CLOSED_CATEGORIES
