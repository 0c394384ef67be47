"""Lead scoring: an organization's versioned model applied to what is known about a lead. Pure.

A model is a list of rules, each adding points:

- `field`: a field of the lead (its own `email`, `phone`, `name`, `locale`, `campaignId`) or an enriched
  field (`companySize`, `jobTitle`, …) compared with `operator` (present, equals, in, gte, lte, contains);
  an enriched value counts `weight × confidence` (a guess at 0.5 confidence is worth half).
- `source`: the lead's source is one of `sources`.
- `engagement`: `weight` points per unit of an engagement signal (`touches`, `reached`, `replied`, …; the
  services decide how each is counted, see qualification.scoring.ENGAGEMENT_SIGNALS), at most `max` points.

The score is the rounded sum, kept within 0..100, stored with the model's version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

MIN_SCORE, MAX_SCORE = 0, 100


class RuleKind(StrEnum):
    FIELD = "field"
    SOURCE = "source"
    ENGAGEMENT = "engagement"


class Operator(StrEnum):
    PRESENT = "present"
    EQUALS = "equals"
    IN = "in"
    GTE = "gte"
    LTE = "lte"
    CONTAINS = "contains"


@dataclass(frozen=True)
class Rule:
    kind: RuleKind
    weight: float
    field: str | None = None
    operator: Operator | None = None
    value: Any = None
    sources: tuple[str, ...] = ()
    signal: str | None = None
    max_points: float | None = None


@dataclass(frozen=True)
class ScoringModel:
    version: int
    rules: tuple[Rule, ...]
    qualify_threshold: int
    nurture_days: int


@dataclass(frozen=True)
class FieldValue:
    value: Any
    confidence: float = 1.0


@dataclass(frozen=True)
class LeadFacts:
    """What scoring reads about one lead."""

    source: str
    fields: Mapping[str, FieldValue] = field(default_factory=dict)
    engagement: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoreResult:
    score: int
    version: int
    points: tuple[float, ...]  # what each rule added, in the model's order


def rule_from_json(raw: Mapping[str, Any]) -> Rule:
    """A rule as stored (camelCase JSON, validated at the API)."""
    kind = RuleKind(raw["kind"])
    return Rule(
        kind=kind,
        weight=float(raw["weight"]),
        field=raw.get("field"),
        operator=Operator(raw["operator"]) if raw.get("operator") else None,
        value=raw.get("value"),
        sources=tuple(raw.get("sources") or ()),
        signal=raw.get("signal"),
        max_points=float(raw["max"]) if raw.get("max") is not None else None,
    )


def model_from_row(
    version: int, rules: Sequence[Mapping[str, Any]], qualify_threshold: int, nurture_days: int
) -> ScoringModel:
    return ScoringModel(
        version=version,
        rules=tuple(rule_from_json(r) for r in rules),
        qualify_threshold=qualify_threshold,
        nurture_days=nurture_days,
    )


def score_lead(model: ScoringModel, facts: LeadFacts) -> ScoreResult:
    points = tuple(_points(rule, facts) for rule in model.rules)
    total = round(sum(points))
    return ScoreResult(score=max(MIN_SCORE, min(MAX_SCORE, total)), version=model.version, points=points)


def highest_score(rules: Sequence[Rule]) -> float:
    """The most any lead could score: every rule that adds points adding its most (a field at full
    confidence, an engagement at its max; one without a max is unbounded). An upper bound: two rules on
    different sources cannot both count, so a model whose highest score misses its threshold surely does."""
    total = 0.0
    for rule in rules:
        if rule.weight <= 0:
            continue  # a lead without the field, the source or the signal loses nothing
        if rule.kind is RuleKind.ENGAGEMENT:
            if rule.max_points is None:
                return float("inf")
            total += rule.max_points
        else:
            total += rule.weight
    return total


def threshold_reachable(model: ScoringModel) -> bool:
    """Whether some lead could meet the model's qualify threshold (qualifying needs the score to meet it)."""
    highest = highest_score(model.rules)
    return math.isinf(highest) or min(MAX_SCORE, round(highest)) >= model.qualify_threshold


def _points(rule: Rule, facts: LeadFacts) -> float:
    if rule.kind is RuleKind.SOURCE:
        return rule.weight if facts.source in rule.sources else 0.0
    if rule.kind is RuleKind.ENGAGEMENT:
        units = max(0, int(facts.engagement.get(rule.signal or "", 0)))
        earned = rule.weight * units
        if rule.max_points is not None:
            earned = min(earned, rule.max_points) if rule.weight >= 0 else max(earned, -rule.max_points)
        return earned
    known = facts.fields.get(rule.field or "")
    if known is None or not matches(rule.operator or Operator.PRESENT, known.value, rule.value):
        return 0.0
    return rule.weight * max(0.0, min(1.0, known.confidence))


def matches(operator: Operator, actual: Any, expected: Any) -> bool:
    """Whether a field's value satisfies a rule. A missing or blank value satisfies nothing; numbers compare
    as numbers (a string "250" from a form is 250); text compares case-insensitively."""
    if actual is None or (isinstance(actual, str) and not actual.strip()):
        return False
    if operator is Operator.PRESENT:
        return True
    if operator in (Operator.GTE, Operator.LTE):
        left, right = _number(actual), _number(expected)
        if left is None or right is None:
            return False
        return left >= right if operator is Operator.GTE else left <= right
    if operator is Operator.EQUALS:
        return _text(actual) == _text(expected)
    if operator is Operator.IN:
        return isinstance(expected, list) and _text(actual) in {_text(e) for e in expected}
    if operator is Operator.CONTAINS:
        return _text(expected) in _text(actual)
    return False


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip())
    except (ArithmeticError, ValueError):
        return None
    return number if number.is_finite() else None


def _text(value: Any) -> str:
    return str(value).strip().casefold()
