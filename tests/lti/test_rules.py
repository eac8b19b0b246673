"""The pure launch rules: audiences, times, targets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.lti import rules

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
ISSUER, CLIENT = "https://lms.example", "tool-1"


def claims(**changes: object) -> dict[str, object]:
    stamp = int(NOW.timestamp())
    base: dict[str, object] = {
        "iss": ISSUER, "aud": CLIENT, "sub": "u-1", "iat": stamp, "exp": stamp + 60,
        "nonce": "n-1",
        rules.CLAIM + "deployment_id": "d-1",
        rules.CLAIM + "message_type": "LtiResourceLinkRequest",
        rules.CLAIM + "version": "1.3.0",
        rules.CLAIM + "roles": [],
        rules.CLAIM + "resource_link": {"id": "link-1"},
    }  # fmt: skip
    base.update(changes)
    return base


def check(**changes: object) -> rules.Launch:
    return rules.check_launch(claims(**changes), ISSUER, CLIENT, ["d-1"], "n-1", NOW)


def test_a_launch_with_every_required_claim_passes():
    assert check().link_id == "link-1"


def test_several_audiences_need_us_as_the_authorised_party():
    with pytest.raises(rules.LaunchRefused, match="aud/azp"):
        check(aud=[CLIENT, "other"])
    assert check(aud=[CLIENT, "other"], azp=CLIENT).subject == "u-1"


def test_a_token_issued_long_ago_is_a_replay_even_when_it_has_not_expired():
    issued = int(NOW.timestamp()) - 3600
    with pytest.raises(rules.LaunchRefused, match="not issued just now"):
        check(iat=issued, exp=issued + 7200)


def test_an_anonymous_launch_is_refused():
    with pytest.raises(rules.LaunchRefused, match="Anonymous"):
        check(sub="")


def test_a_custom_parameter_names_the_target_and_must_be_an_id():
    custom = rules.CLAIM + "custom"
    assert rules.target(check(**{custom: {"topic": "ddp-basics"}})) == "/topics/ddp-basics"
    with pytest.raises(rules.LaunchRefused, match="is not an id"):
        rules.target(check(**{custom: {"set": "../admin"}}))


def test_a_target_link_elsewhere_opens_the_learners_classes_not_that_page():
    uri = rules.CLAIM + "target_link_uri"
    assert rules.target(check(**{uri: "https://evil.example/staff/users"})) == "/me/classes"
    assert rules.target(check(**{uri: "https://tool.example/sets/ddp-1"})) == "/sets/ddp-1"
