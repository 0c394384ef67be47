"""Deploy configuration cannot be wrong silently: no placeholder in cdk.json, and a synth without a deploy
setting, or with a malformed one, fails with one error naming each and what it is for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

import infra.app
from infra.config import REQUIRED, ConfigError, LeadCrmConfig

REPO_ROOT = Path(__file__).resolve().parents[3]
DEPLOY_SETTINGS = ["jwtIssuer", "jwtAudience", "dashboardOrigin", "mailFrom", "inboundDomain"]
ALARM_SETTINGS = ["alarmEmails", "alarmHttpsEndpoints"]  # optional: who the alarms notify


def _config(context: dict[str, Any]) -> LeadCrmConfig:
    return LeadCrmConfig.from_context(cdk.App(context=context))


def _refusal(context: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as refused:
        _config(context)
    return refused.value


def test_cdk_json_holds_no_deployments_issuer_audience_origin_sender_or_domain() -> None:
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]

    assert not set(DEPLOY_SETTINGS) & set(context)
    assert context["databaseDeletionProtection"] is True  # the one default right for every deployment


def test_the_checked_in_test_context_is_a_valid_configuration(synth_context: dict[str, Any]) -> None:
    assert set(synth_context) == set(DEPLOY_SETTINGS + ALARM_SETTINGS)
    assert _config(synth_context).api.jwt_issuer == synth_context["jwtIssuer"]


def _required_only(synth_context: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in synth_context.items() if k in DEPLOY_SETTINGS}


def test_a_synth_without_any_deploy_setting_fails_naming_each_and_what_it_is_for() -> None:
    refusal = _refusal({})

    assert refusal.keys == DEPLOY_SETTINGS
    message = str(refusal)
    for setting in REQUIRED:
        assert f"  - {setting.key} is missing. It is {setting.purpose}." in message
    assert "-c key=value" in message


def test_one_missing_setting_is_the_only_one_named(synth_context: dict[str, Any]) -> None:
    context = {k: v for k, v in synth_context.items() if k != "mailFrom"}

    refusal = _refusal(context)

    assert refusal.keys == ["mailFrom"]
    assert "jwtIssuer" not in str(refusal)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_setting_counts_as_missing(synth_context: dict[str, Any], blank: str) -> None:
    refusal = _refusal({**synth_context, "jwtAudience": blank})

    assert refusal.keys == ["jwtAudience"]
    assert "jwtAudience is missing" in str(refusal)


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("jwtIssuer", "http://clerk.example.org", "is not an https:// URL"),
        ("jwtIssuer", "clerk.example.org", "is not an https:// URL"),
        ("jwtIssuer", "https://clerk.example.org?x=1", "no query"),
        ("jwtIssuer", "https://clerk.example.org#top", "no query, fragment"),
        ("jwtIssuer", "https://user:pw@clerk.example.org", "credentials"),
        ("jwtIssuer", "https://clerk_example/", "valid host"),
        ("jwtAudience", "my dashboard", "no spaces"),
        ("jwtAudience", " dash", "no spaces"),
        ("dashboardOrigin", "app.example.org", "origin"),
        ("dashboardOrigin", "https://app.example.org/", "no path or trailing slash"),
        ("dashboardOrigin", "https://app.example.org/dashboard", "no path"),
        ("dashboardOrigin", "ftp://app.example.org", "origin"),
        ("dashboardOrigin", "https://app.example.org:http", "invalid port"),
        ("mailFrom", "LeadCRM", "is not an email address"),
        ("mailFrom", "LeadCRM <no-reply@>", "is not an email address"),
        ("mailFrom", "no-reply@mail.leadcrm.local", "not a usable email address"),
        ("inboundDomain", "https://mail.example.org", "is not a domain name"),
        ("inboundDomain", "mail", "is not a domain name"),
        ("inboundDomain", "crm@mail.example.org", "is not a domain name"),
        ("inboundDomain", "-mail.example.org", "is not a domain name"),
        ("databaseDeletionProtection", "ture", "is not true or false"),
    ],
)
def test_a_malformed_setting_is_refused_saying_what_is_wrong(
    synth_context: dict[str, Any], key: str, value: str, problem: str
) -> None:
    refusal = _refusal({**synth_context, key: value})

    assert refusal.keys == [key]
    assert f"{key} {value!r} " in str(refusal)
    assert problem in str(refusal)


def test_a_non_string_setting_is_refused(synth_context: dict[str, Any]) -> None:
    refusal = _refusal({**synth_context, "jwtAudience": ["a", "b"]})

    assert refusal.keys == ["jwtAudience"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("jwtIssuer", "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123"),
        ("jwtIssuer", "https://dev-abc.us.auth0.com/"),  # Auth0's iss ends with a slash
        ("jwtAudience", "5r2h9kq3example1clientid"),
        ("dashboardOrigin", "http://localhost:3000"),
        ("dashboardOrigin", "https://app.example.org"),
        ("mailFrom", "no-reply@mail.example.org"),
        ("mailFrom", '"Studio, CRM" <crm@studio.example.org>'),
        ("inboundDomain", "in.studio.example.org"),
        ("databaseDeletionProtection", "no"),
    ],
)
def test_well_formed_values_are_accepted(synth_context: dict[str, Any], key: str, value: str) -> None:
    _config({**synth_context, key: value})


def test_running_the_app_without_context_prints_the_one_error_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An empty repository root: no cdk.json values and no operator's cdk.context.json to fall back on.
    monkeypatch.setattr(infra.app, "REPO_ROOT", tmp_path)
    monkeypatch.delenv("CDK_CONTEXT_JSON", raising=False)

    assert infra.app.main([]) == 2

    err = capsys.readouterr().err
    assert err.startswith("LeadCRM cannot be synthesized: 5 deploy setting(s) missing or invalid.")
    assert "Traceback" not in err
    for key in DEPLOY_SETTINGS:
        assert f"  - {key} is missing." in err
    assert not (tmp_path / "cdk.out" / "LeadCrmStack.template.json").exists()


def test_values_given_on_the_app_command_line_fill_the_context(tmp_path: Path, synth_context: dict[str, Any]) -> None:
    (tmp_path / "mine.json").write_text(json.dumps({k: v for k, v in synth_context.items() if k != "jwtIssuer"}))

    context = infra.app.parse_args(
        ["--context-file", str(tmp_path / "mine.json"), "-c", "jwtIssuer=https://clerk.example.org"]
    )

    assert _config(context).api.jwt_issuer == "https://clerk.example.org"


def test_without_alarm_subscribers_the_configuration_is_valid_and_notifies_no_one(
    synth_context: dict[str, Any],
) -> None:
    subscriptions = _config(_required_only(synth_context)).alarm_subscriptions

    assert subscriptions.emails == ()
    assert subscriptions.https_endpoints == ()


def test_alarm_emails_are_read_comma_separated_trimmed_and_each_once(synth_context: dict[str, Any]) -> None:
    context = {**synth_context, "alarmEmails": " oncall@example.org, ops@example.org ,,OnCall@example.org"}

    assert _config(context).alarm_subscriptions.emails == ("oncall@example.org", "ops@example.org")


def test_alarm_endpoints_may_be_a_json_list_in_a_context_file(synth_context: dict[str, Any]) -> None:
    urls = ["https://events.pagerduty.com/integration/abc/enqueue", "https://hooks.example.org/a?channel=ops,oncall"]
    context = {**synth_context, "alarmHttpsEndpoints": urls}

    assert _config(context).alarm_subscriptions.https_endpoints == tuple(urls)


@pytest.mark.parametrize(
    ("key", "value", "item", "problem"),
    [
        ("alarmEmails", "oncall@example.org,not-an-address", "not-an-address", "not a usable email address"),
        ("alarmEmails", "Ops <ops@example.org>", "Ops <ops@example.org>", "not a bare email address"),
        ("alarmHttpsEndpoints", "http://hooks.example.org/alarm", "http://hooks.example.org/alarm", "https://"),
        ("alarmHttpsEndpoints", "https://u:secret@hooks.example.org/", "https://u:secret@hooks.example.org/", "clear"),
        ("alarmHttpsEndpoints", "https://hooks.example.org/#frag", "https://hooks.example.org/#frag", "fragment"),
        ("alarmHttpsEndpoints", "https://hooks/alarm", "https://hooks/alarm", "valid host"),
    ],
)
def test_a_malformed_alarm_subscriber_is_refused_naming_it_and_why(
    synth_context: dict[str, Any], key: str, value: str, item: str, problem: str
) -> None:
    refusal = _refusal({**synth_context, key: value})

    assert refusal.keys == [key]
    assert f"{key} {item!r} " in str(refusal)
    assert problem in str(refusal)


@pytest.mark.parametrize("value", [42, {"email": "ops@example.org"}, ["ops@example.org", 7]])
def test_alarm_subscribers_of_another_type_are_refused(synth_context: dict[str, Any], value: Any) -> None:
    refusal = _refusal({**synth_context, "alarmEmails": value})

    assert refusal.keys == ["alarmEmails"]
    assert "comma-separated string or a list of strings" in str(refusal)
