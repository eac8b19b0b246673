"""attack: wrong passwords for someone else's account sent from many addresses, each within its
own (account, address) window, until the account's ceiling of failures is full: the owner was
then refused everywhere for up to an hour, even with the right password. A device cookie edited
to name the account, or signed with the public placeholder secret, to get past the ceiling. An
IPv6 /64 (one subscriber's allocation) used as 2^64 addresses, each with limits of its own.
expect: a fresh browser meets the full ceiling (429), the owner's browser, which signed in to
the account before and carries its signed device cookie, signs in (303); a forged or edited
device cookie is no cookie (429); a device that fails too often loses its exemption (429); every
address of one IPv6 /64 shares one address's limits, for log-ins and new guests. Real uvicorn
servers on loopback; the client address is set as a trusted proxy sets it (X-Forwarded-For).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

import httpx
import pytest

from app.config import PLACEHOLDER_SECRET
from app.serving import proxy_options
from tests.support.learner import Learner
from tests.support.live import serving

TRUSTED = "127.0.0.1"  # the proxy in front of the app, here the test itself
HOME, CAFE, FRESH = "198.51.100.1", "198.51.100.2", "198.51.100.3"
ATTACKERS = [f"203.0.113.{number}" for number in range(1, 5)]
# Small windows, the defaults' shape: 3 a minute per (account, address), 12 failures per account.
LIMITS = {
    "trusted_proxies": TRUSTED,
    "login_limit_per_account_address": "3/minute",
    "login_limit_per_account": "12/hour",
    "login_limit_per_device": "3/minute",
}
RIGHT = {"username": "ada", "password": "correct horse"}
WRONG = {"username": "ada", "password": "not-the-one"}
DEVICE_COOKIE = "ranklab_device"


OPEN: list[httpx.Client] = []


@pytest.fixture(autouse=True)
def _close_browsers() -> Iterator[None]:
    """Close every browser a test opened, also when it fails half-way."""
    yield
    while OPEN:
        OPEN.pop().close()


def browser(url: str, address: str) -> Learner:
    """A browser on the live server, behind the proxy that names it `address`."""
    client = httpx.Client(base_url=url, headers={"X-Forwarded-For": address})
    OPEN.append(client)
    return Learner(client)  # type: ignore[arg-type]


def move(visitor: Learner, address: str) -> None:
    """The same browser (its cookies) from another address."""
    visitor.client.headers["X-Forwarded-For"] = address


def flood(url: str) -> None:
    """Fill ada's ceiling of failures from four addresses, none over its own window."""
    for address in ATTACKERS:
        attacker = browser(url, address)
        attacker.get("/login")
        for _ in range(3):
            assert attacker.post("/login", WRONG).status_code == 400


def owner_with_a_device_cookie(url: str) -> Learner:
    """Ada signs up at home (her browser now knows her account) and logs out."""
    owner = browser(url, HOME)
    owner.get("/")
    owner.post("/register", RIGHT)
    owner.post("/logout")
    return owner


def test_a_flood_from_many_addresses_leaves_the_owners_browser_able_to_sign_in(
    app_factory, sqlite_url
):
    app = app_factory(sqlite_url, **LIMITS)
    with serving(app, **proxy_options(TRUSTED)) as url:
        owner = owner_with_a_device_cookie(url)
        flood(url)
        stranger = browser(url, FRESH)  # no device cookie: the account-wide ceiling is full
        stranger.get("/login")
        refused = stranger.post("/login", RIGHT)
        assert refused.status_code == 429 and "Too many attempts" in refused.text
        move(owner, CAFE)  # her own browser, wherever she is
        signed_in = owner.post("/login", RIGHT, follow_redirects=False)
        assert signed_in.status_code == 303


def _signed(secret: str, account: str, nonce: str) -> str:
    message = f"device\n{account}\n{nonce}".encode()
    return f"{account}:{nonce}:{hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()}"


def test_a_device_cookie_cannot_be_forged_or_moved_to_another_account(app_factory, sqlite_url):
    app = app_factory(sqlite_url, **LIMITS)
    with serving(app, **proxy_options(TRUSTED)) as url:
        owner_with_a_device_cookie(url)
        attacker = browser(url, FRESH)  # a device cookie of the attacker's own account
        attacker.get("/")
        attacker.post("/register", {"username": "mallory", "password": "mallory's own"})
        attacker.post("/logout")
        own = attacker.client.cookies[DEVICE_COOKIE]
        assert own.startswith("mallory:")
        flood(url)
        forgeries = [
            own.replace("mallory", "ada", 1),  # another account's name on one's own cookie
            _signed(PLACEHOLDER_SECRET, "ada", "A" * 22),  # the public placeholder's signature
            _signed("test-secret" + "x", "ada", "A" * 22),
            "ada",
            "ada::",
        ]
        for number, forged in enumerate(forgeries):
            move(attacker, f"192.0.2.{number + 1}")  # each below its own (account, address) window
            attacker.client.cookies.set(DEVICE_COOKIE, forged, path="/login")
            assert attacker.post("/login", WRONG).status_code == 429, forged


def test_a_device_that_fails_too_often_loses_its_exemption(app_factory, sqlite_url):
    app = app_factory(sqlite_url, **LIMITS)
    with serving(app, **proxy_options(TRUSTED)) as url:
        owner = owner_with_a_device_cookie(url)  # or whoever took her cookie
        flood(url)
        for address in (CAFE, FRESH, HOME):  # one failure from each address: below their windows
            move(owner, address)
            assert owner.post("/login", WRONG).status_code == 400
        move(owner, "198.51.100.9")
        assert owner.post("/login", RIGHT).status_code == 429  # the device's 3 a minute are full


V6_HOME = "2001:db8:1:2"  # one /64


def test_every_address_of_an_ipv6_64_shares_one_addresss_limits(app_factory, sqlite_url):
    limits = {"login_failures_per_address": "3/minute", "guest_limit_per_address": "2/minute"}
    app = app_factory(sqlite_url, trusted_proxies=TRUSTED, **limits)
    with serving(app, **proxy_options(TRUSTED)) as url:
        guesser = browser(url, f"{V6_HOME}::1")
        guesser.get("/login")
        for number in range(3):
            move(guesser, f"{V6_HOME}::{number + 1:x}")
            wrong = {"username": f"user{number}", "password": "not-the-one"}
            assert guesser.post("/login", wrong).status_code == 400
        move(guesser, f"{V6_HOME}:ffff:ffff:ffff:fffe")
        assert guesser.post("/login", {**WRONG, "username": "user9"}).status_code == 429
        move(guesser, "2001:db8:1:3::1")  # the next /64 is another subscriber
        assert guesser.post("/login", {**WRONG, "username": "user9"}).status_code == 400
        for number in range(2):
            guest = browser(url, f"{V6_HOME}:{number}::7")
            assert guest.post("/guest", {"next": "/"}).status_code == 303
        third = browser(url, f"{V6_HOME}:abcd::7")
        assert third.post("/guest", {"next": "/"}).status_code == 429
