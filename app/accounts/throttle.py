"""Log-in, sign-up and guest throttling per account and per client address (`limits`).

Moving windows count every log-in attempt, right or wrong, before the password is checked, per
(account, address): guessing one password costs a place. Counted per account alone, ten wrong
passwords from anywhere locked the owner out; per (account, address), a stranger fills only
their own. Across addresses an account has a larger ceiling of failed attempts, so guessing one
account's password from many addresses stays slow.

A lecture hall signs up and logs in from one NAT address, so an address is limited by what
brute force needs and honest people rarely make: failed log-ins (guessing across many accounts,
probing which usernames exist). Every attempt from an address still counts towards a far larger
ceiling that bounds the argon2 work it can make the server do, and so do sign-ups. The counts live
in `rate_limit_storage`: memory:// is per process, so several workers or hosts need a shared
store (redis://, memcached://).

The account's ceiling can be filled by strangers: failures from 20 addresses in a minute locked
the owner out everywhere. So a browser that signed in to the account before, and carries its
signed device cookie (app.accounts.rules), is exempt from it: its failures count against its
own device's window instead, and a device past that window is treated as any other browser
(OWASP's device cookies). Addresses are keyed as one subscriber holds them: an IPv6 address by
its /64, which one home or phone is given whole.
"""

from __future__ import annotations

import ipaddress
import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse_many
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.accounts.rules import account_key
from app.config import Settings

# An IPv6 subscriber is given a /64 (RFC 6177) and may use any address in it: limits per
# address would give one person 2^64 of them.
_IPV6_SUBSCRIBER_PREFIX = 64
_MAX_KEY_LENGTH = 64


@dataclass(frozen=True)
class Refusal:
    """An attempt over a limit, and how long until the next one may be made."""

    retry_after_s: int

    @property
    def message(self) -> str:
        """The sentence shown to people."""
        wait = self.retry_after_s
        when = f"{wait} seconds" if wait < 120 else f"{math.ceil(wait / 60)} minutes"
        return f"Too many attempts. Please wait {when} and try again."


class Throttle:
    """Counts log-in attempts per (account, address) and per address, failed log-ins per
    account (from browsers without its device cookie), per device and per address, sign-ups and
    new guests per address, lab runs per learner."""

    def __init__(self, settings: Settings) -> None:
        self._limiter = MovingWindowRateLimiter(storage_from_string(settings.rate_limit_storage))
        self._login_per_pair = parse_many(settings.login_limit_per_account_address)
        self._failures_per_account = parse_many(settings.login_limit_per_account)
        self._failures_per_device = parse_many(settings.login_limit_per_device)
        self._login_per_address = parse_many(settings.login_limit_per_address)
        self._failures_per_address = parse_many(settings.login_failures_per_address)
        self._register_per_address = parse_many(settings.register_limit_per_address)
        self._guests_per_address = parse_many(settings.guest_limit_per_address)
        self._lab_runs_per_learner = parse_many(settings.lab_runs_per_learner)

    def login(self, username: str, address: str, device: str | None = None) -> Refusal | None:
        """Count one log-in attempt; return a refusal if this account from this address, or the
        address's attempts or failures, are over their limits, or the failures that hold this
        attempt are: its device's if it carries the account's device cookie (`device`, its
        nonce) and that device is not over them, else the account's from every browser."""
        account, address = account_key(username), address_key(address)
        over = self._over(*self._failures_holding(account, device)) or self._over(
            self._failures_per_address, ("login-failed-address", address)
        )
        return over or self._count(
            *[(limit, ("login-pair", account, address)) for limit in self._login_per_pair],
            *[(limit, ("login-address", address)) for limit in self._login_per_address],
        )

    def login_failed(self, username: str, address: str, device: str | None = None) -> None:
        """Count a wrong password (or an unknown name) towards the address's ceiling, and the
        device's (with a device cookie not over its limit) or else the account's."""
        limits, keys = self._failures_holding(account_key(username), device)
        for limit in limits:
            self._limiter.hit(limit, *keys)
        for limit in self._failures_per_address:
            self._limiter.hit(limit, "login-failed-address", address_key(address))

    def _failures_holding(
        self, account: str, device: str | None
    ) -> tuple[list[RateLimitItem], tuple[str, ...]]:
        """The failure windows an attempt at `account` counts in: its device's while that
        device is within them, else the account's, shared by every browser without a cookie."""
        if device is not None:
            keys = ("login-failed-device", account, device[:_MAX_KEY_LENGTH])
            if all(self._limiter.test(limit, *keys) for limit in self._failures_per_device):
                return self._failures_per_device, keys
        return self._failures_per_account, ("login-failed", account)

    def register(self, address: str) -> Refusal | None:
        """Count one sign-up attempt; return a refusal if the address is over its limit."""
        key = ("register-address", address_key(address))
        return self._count(*[(lim, key) for lim in self._register_per_address])

    def guest(self, address: str) -> Refusal | None:
        """Count one new guest; return a refusal if the address is over its limit."""
        key = ("guest-address", address_key(address))
        return self._count(*[(lim, key) for lim in self._guests_per_address])

    def lab_run(self, user_id: int) -> Refusal | None:
        """Count one lab run of a learner; return a refusal if they are over their limit."""
        return self._count(
            *[(lim, ("lab-runs", str(user_id))) for lim in self._lab_runs_per_learner]
        )

    def _over(self, limits: list[RateLimitItem], keys: tuple[str, ...]) -> Refusal | None:
        """A refusal if any of these windows is full now (nothing counted)."""
        full = [(limit, keys) for limit in limits if not self._limiter.test(limit, *keys)]
        return self._refusal(full) if full else None

    def _count(self, *buckets: tuple[RateLimitItem, tuple[str, ...]]) -> Refusal | None:
        # Test every bucket first so a refused attempt does not use up places in the others;
        # then count it (each hit is atomic, so a racing attempt may still find a bucket full).
        full = [(limit, keys) for limit, keys in buckets if not self._limiter.test(limit, *keys)]
        if not full:
            full = [(limit, keys) for limit, keys in buckets if not self._limiter.hit(limit, *keys)]
        return self._refusal(full) if full else None

    def _refusal(self, full: list[tuple[RateLimitItem, tuple[str, ...]]]) -> Refusal:
        reset_at = max(
            self._limiter.get_window_stats(limit, *keys).reset_time for limit, keys in full
        )
        return Refusal(retry_after_s=max(1, math.ceil(reset_at - time.time())))


def address_key(address: str) -> str:
    """The client address as limits count it: an IPv6 address by its /64, an IPv4-mapped one as
    IPv4, another by itself."""
    try:
        parsed = ipaddress.ip_address(address.partition("%")[0])  # no zone (fe80::1%eth0)
    except ValueError:
        return address[:_MAX_KEY_LENGTH]  # "unknown": no peer address at all
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, _IPV6_SUBSCRIBER_PREFIX), strict=False))
    return str(parsed)
