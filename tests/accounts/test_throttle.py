"""Log-in and sign-up throttling per account and per client address (429 with Retry-After)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.accounts.throttle import Throttle, address_key
from app.config import Settings
from tests.conftest import make_settings
from tests.support.learner import Learner

SMALL_LIMITS = {
    "login_limit_per_account": "3/minute",
    "login_limit_per_address": "5/minute",
    "register_limit_per_address": "2/minute",
}


@pytest.fixture
def visitor(app_factory, sqlite_url):
    with TestClient(app_factory(sqlite_url, **SMALL_LIMITS)) as client:
        yield Learner(client)


def wrong_login(visitor: Learner, username: str, **kwargs: object):
    return visitor.post("/login", {"username": username, "password": "not-the-one"}, **kwargs)


def test_too_many_log_ins_to_one_account_get_429_with_retry_after_on_the_form(visitor):
    visitor.get("/")
    visitor.post("/register", {"username": "ada", "password": "correct horse"})
    visitor.post("/logout")
    # A browser that has not signed in to ada: hers would count against its own device's limit.
    visitor.client.cookies.delete("ranklab_device")
    for _ in range(3):
        assert wrong_login(visitor, "ada").status_code == 400
    refused = wrong_login(visitor, "ada")
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert 'data-testid="form-error"' in refused.text and "Too many attempts" in refused.text
    assert '<form method="post" action="/login">' in refused.text  # the form, to try later
    # Even the right password waits: the limit holds before the password is checked.
    right = visitor.post("/login", {"username": "ada", "password": "correct horse"})
    assert right.status_code == 429


def test_the_account_limit_ignores_case_and_spaces_and_leaves_other_accounts_alone(visitor):
    visitor.get("/")
    for spelling in ("ada", " ADA", "Ada "):
        assert wrong_login(visitor, spelling).status_code == 400
    assert wrong_login(visitor, "aDa").status_code == 429
    assert wrong_login(visitor, "grace").status_code == 400


def test_too_many_log_ins_from_one_address_get_429_whatever_the_account(visitor):
    visitor.get("/")
    for number in range(5):
        assert wrong_login(visitor, f"user{number}").status_code == 400
    assert wrong_login(visitor, "someone-else").status_code == 429


def test_json_clients_get_the_message_as_detail(visitor):
    visitor.get("/")
    for _ in range(3):
        wrong_login(visitor, "ada")
    refused = wrong_login(visitor, "ada", headers={"accept": "application/json"})
    assert refused.status_code == 429
    assert refused.headers["retry-after"].isdigit()
    assert refused.json()["detail"].startswith("Too many attempts")


def test_too_many_sign_ups_from_one_address_get_429(visitor):
    visitor.get("/")
    assert visitor.post("/register", {"username": "x", "password": "y"}).status_code == 400
    visitor.post("/register", {"username": "first", "password": "long enough"})
    visitor.post("/logout")
    refused = visitor.post("/register", {"username": "second", "password": "long enough"})
    assert refused.status_code == 429
    assert refused.headers["retry-after"].isdigit()
    assert "Too many attempts" in refused.text
    assert '<form method="post" action="/register">' in refused.text


def test_failures_at_one_account_from_many_addresses_meet_its_ceiling(sqlite_url):
    throttle = Throttle(
        make_settings(
            sqlite_url,
            login_limit_per_account_address="2/minute",
            login_limit_per_account="6/minute",
        )
    )
    for address in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):
        for _ in range(2):
            assert throttle.login("ada", address) is None
            throttle.login_failed("Ada ", address)  # the same account, however spelt
    assert throttle.login("ada", "192.0.2.4") is not None  # 6 failures: the ceiling is full
    assert throttle.login("grace", "192.0.2.4") is None  # another account is not


def test_a_device_of_the_account_is_exempt_from_its_ceiling_until_it_fails_too_often(
    sqlite_url,
):
    throttle = Throttle(
        make_settings(
            sqlite_url, login_limit_per_account="2/minute", login_limit_per_device="2/minute"
        )
    )
    for address in ("192.0.2.1", "192.0.2.2"):
        assert throttle.login("ada", address) is None
        throttle.login_failed("ada", address)
    assert throttle.login("ada", "192.0.2.3") is not None  # strangers filled the ceiling
    assert throttle.login("ada", "192.0.2.3", device="owners-nonce") is None
    throttle.login_failed("ada", "192.0.2.3", device="owners-nonce")
    assert throttle.login("ada", "192.0.2.4", device="owners-nonce") is None
    throttle.login_failed("ada", "192.0.2.4", device="owners-nonce")
    assert throttle.login("ada", "192.0.2.5", device="owners-nonce") is not None  # its own: full
    assert throttle.login("ada", "192.0.2.5", device="another-browser") is None


def test_an_ipv6_address_counts_as_its_64_and_a_mapped_ipv4_as_itself():
    assert (
        address_key("2001:db8:1:2:aaaa::1")
        == address_key("2001:db8:1:2::ffff")
        == ("2001:db8:1:2::/64")
    )
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:192.0.2.7") == address_key("192.0.2.7") == "192.0.2.7"
    assert address_key("fe80::1%eth0") == "fe80::/64"
    assert address_key("unknown") == "unknown"


def test_limits_are_settings_and_bad_ones_are_refused_at_start():
    settings = Settings()
    assert settings.login_limit_per_account_address == "10/minute;50/hour"
    assert settings.login_limit_per_account == "200/hour"
    assert settings.login_limit_per_device == "5/minute;20/hour"
    assert settings.guest_limit_per_address == "240/minute;1000/hour"
    assert settings.trusted_proxies == ""
    assert settings.login_limit_per_address == "300/minute"
    assert settings.login_failures_per_address == "30/minute;300/hour"
    assert settings.register_limit_per_address == "600/hour;2000/day"
    assert settings.rate_limit_storage == "memory://"
    with pytest.raises(ValueError, match="login_limit_per_account"):
        make_settings("sqlite://", login_limit_per_account="ten a minute")


HALL = "198.51.100.7"  # one NAT address for a whole lecture hall


def test_a_class_of_200_behind_one_address_signs_up_and_logs_in_on_day_one(sqlite_url):
    """The default limits: 200 sign-ups, then 200 log-ins with 20 typos among them, all from one
    address within minutes (here within a second): no one is refused."""
    throttle = Throttle(make_settings(sqlite_url))
    assert [throttle.register(HALL) for _ in range(200)] == [None] * 200
    refusals = []
    for number in range(200):
        student = f"student{number:03}"
        if number % 10 == 0:  # a typo first, then the right password
            refusals.append(throttle.login(student, HALL))
            throttle.login_failed(student, HALL)
        refusals.append(throttle.login(student, HALL))
    assert refusals == [None] * 220


def test_guessing_across_accounts_from_one_address_stays_as_slow_as_before(sqlite_url):
    """The lecture hall's allowance is not a guesser's: 30 failed log-ins a minute per address,
    whatever the accounts, and then even a right password from that address waits."""
    throttle = Throttle(make_settings(sqlite_url))
    for number in range(30):
        assert throttle.login(f"victim{number}", HALL) is None
        throttle.login_failed(f"victim{number}", HALL)
    refused = throttle.login("victim-next", HALL)
    assert refused is not None and 1 <= refused.retry_after_s <= 60
    assert throttle.login("victim-next", "203.0.113.9") is None  # another address is not


def test_failed_log_ins_count_per_address_through_the_form(app_factory, sqlite_url):
    limits = {**SMALL_LIMITS, "login_limit_per_address": "50/minute"}
    with TestClient(app_factory(sqlite_url, login_failures_per_address="3/minute", **limits)) as c:
        visitor = Learner(c)
        visitor.get("/")
        visitor.post("/register", {"username": "ada", "password": "correct horse"})
        visitor.post("/logout")
        for _ in range(5):  # right passwords are not failures
            right = visitor.post("/login", {"username": "ada", "password": "correct horse"})
            assert right.status_code == 200 and right.url.path == "/"
            visitor.post("/logout")
        for number in range(3):
            assert wrong_login(visitor, f"user{number}").status_code == 400
        assert wrong_login(visitor, "someone-else").status_code == 429
