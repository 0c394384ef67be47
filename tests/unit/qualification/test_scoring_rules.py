"""The pure scoring function (qualification.rules.scoring): rules on fields (× confidence), source and engagement."""

from __future__ import annotations

import pytest

from leadcrm.qualification.rules.scoring import (
    FieldValue,
    LeadFacts,
    Operator,
    highest_score,
    matches,
    model_from_row,
    score_lead,
    threshold_reachable,
)


def model(*rules, version=3):
    return model_from_row(version, list(rules), qualify_threshold=50, nurture_days=30)


def test_an_empty_lead_scores_zero_with_the_models_version():
    result = score_lead(model({"kind": "field", "field": "email", "weight": 10}), LeadFacts(source="manual"))
    assert (result.score, result.version, result.points) == (0, 3, (0.0,))


def test_a_field_rule_counts_its_weight_times_the_confidence():
    facts = LeadFacts(source="manual", fields={"companySize": FieldValue(200, 0.5)})
    rule = {"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 40}
    assert score_lead(model(rule), facts).score == 20


def test_a_source_rule_counts_when_the_source_is_listed():
    rule = {"kind": "source", "sources": ["referral", "walk_in"], "weight": 25}
    assert score_lead(model(rule), LeadFacts(source="walk_in")).score == 25
    assert score_lead(model(rule), LeadFacts(source="facebook")).score == 0


def test_an_engagement_rule_counts_per_unit_up_to_its_maximum():
    rule = {"kind": "engagement", "signal": "touches", "weight": 10, "max": 25}
    assert score_lead(model(rule), LeadFacts(source="x", engagement={"touches": 2})).score == 20
    assert score_lead(model(rule), LeadFacts(source="x", engagement={"touches": 9})).score == 25
    assert score_lead(model(rule), LeadFacts(source="x")).score == 0


def test_a_negative_engagement_rule_is_capped_too():
    rule = {"kind": "engagement", "signal": "bounces", "weight": -10, "max": 15}
    facts = LeadFacts(source="x", fields={"email": FieldValue("a@b.c")}, engagement={"bounces": 5})
    assert score_lead(model({"kind": "field", "field": "email", "weight": 30}, rule), facts).score == 15


def test_the_score_stays_within_0_and_100():
    big = {"kind": "source", "sources": ["x"], "weight": 100}
    assert score_lead(model(big, big), LeadFacts(source="x")).score == 100
    assert score_lead(model({"kind": "source", "sources": ["x"], "weight": -50}), LeadFacts(source="x")).score == 0


@pytest.mark.parametrize(
    ("operator", "actual", "expected", "result"),
    [
        (Operator.PRESENT, "x", None, True),
        (Operator.PRESENT, "  ", None, False),
        (Operator.PRESENT, None, None, False),
        (Operator.EQUALS, "CTO ", "cto", True),
        (Operator.EQUALS, "CEO", "cto", False),
        (Operator.IN, "Yoga", ["yoga", "pilates"], True),
        (Operator.IN, "Yoga", "yoga", False),  # in needs a list
        (Operator.GTE, "250", 50, True),  # a number typed in a form
        (Operator.GTE, 49, 50, False),
        (Operator.LTE, 18.5, 20, True),
        (Operator.GTE, "lots", 50, False),
        (Operator.GTE, "NaN", 50, False),
        (Operator.GTE, True, 0, False),  # a yes/no is not a number
        (Operator.CONTAINS, "Head of Sales", "sales", True),
    ],
)
def test_operators(operator, actual, expected, result):
    assert matches(operator, actual, expected) is result


def test_each_rule_reports_what_it_added():
    rules = (
        {"kind": "field", "field": "email", "weight": 10},
        {"kind": "source", "sources": ["referral"], "weight": 20},
    )
    facts = LeadFacts(source="referral", fields={"email": FieldValue("a@b.c")})
    assert score_lead(model(*rules), facts).points == (10.0, 20.0)


# -- whether a model can qualify anyone ------------------------------------------------------------------------


def test_the_highest_score_adds_every_rule_that_adds_points_at_its_most():
    rules = [
        {"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 40},
        {"kind": "source", "sources": ["referral"], "weight": 25},
        {"kind": "engagement", "signal": "touches", "weight": 10, "max": 20},
        {"kind": "field", "field": "email", "weight": -30},  # a lead without an email loses nothing
    ]
    assert highest_score(model(*rules).rules) == 85


def test_an_engagement_rule_without_a_maximum_makes_every_threshold_reachable():
    rule = {"kind": "engagement", "signal": "touches", "weight": 1}
    assert highest_score(model(rule).rules) == float("inf")
    assert threshold_reachable(model_from_row(1, [rule], qualify_threshold=100, nurture_days=30))


@pytest.mark.parametrize(("threshold", "reachable"), [(0, True), (40, True), (41, False), (100, False)])
def test_a_threshold_is_reachable_when_the_highest_score_meets_it(threshold, reachable):
    rule = {"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 40}
    assert threshold_reachable(model_from_row(1, [rule], qualify_threshold=threshold, nurture_days=30)) is reachable
