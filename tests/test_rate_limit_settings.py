"""Every rate-limit setting is checked when the settings are read: a typo in one (say
RANKLAB_LOGIN_FAILURES_PER_ADDRESS=ten) stops the start with the setting named, instead of
failing a visitor's first request later."""

from __future__ import annotations

import limits
import pytest
from pydantic import ValidationError

from app.config import Settings


def _rate_limit_settings() -> list[str]:
    """The settings whose default is written in the `limits` notation (10/minute)."""
    names = []
    for name, field in Settings.model_fields.items():
        if not isinstance(field.default, str) or "/" not in field.default:
            continue
        try:
            limits.parse_many(field.default)
        except ValueError:
            continue
        names.append(name)
    return names


def test_the_rate_limit_settings_are_found() -> None:
    found = _rate_limit_settings()
    assert {"login_failures_per_address", "lab_runs_per_learner", "runs_per_learner"} <= set(found)


@pytest.mark.parametrize("name", _rate_limit_settings())
def test_a_rate_limit_setting_that_is_not_one_is_refused_with_its_name(name: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(**{name: "ten"})
    assert name in str(refused.value)
    assert "is not a rate limit such as 10/minute" in str(refused.value)
