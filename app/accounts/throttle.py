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
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse_many
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.config import Settings

# Usernames are at most 40 characters; a longer one names no account, so it need not be a key.
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
    account and per address, sign-ups and new guests per address, lab runs per learner."""

    def __init__(self, settings: Settings) -> None:
        self._limiter = MovingWindowRateLimiter(storage_from_string(settings.rate_limit_storage))
        self._login_per_pair = parse_many(settings.login_limit_per_account_address)
        self._failures_per_account = parse_many(settings.login_limit_per_account)
        self._login_per_address = parse_many(settings.login_limit_per_address)
        self._failures_per_address = parse_many(settings.login_failures_per_address)
        self._register_per_address = parse_many(settings.register_limit_per_address)
        self._guests_per_address = parse_many(settings.guest_limit_per_address)
        self._lab_runs_per_learner = parse_many(settings.lab_runs_per_learner)

    def login(self, username: str, address: str) -> Refusal | None:
        """Count one log-in attempt; return a refusal if this account from this address, the
        address's attempts or failures, or the account's failures from anywhere are over their
        limits."""
        account = _account_key(username)
        over = self._over(self._failures_per_account, ("login-failed", account)) or self._over(
            self._failures_per_address, ("login-failed-address", address)
        )
        return over or self._count(
            *[(limit, ("login-pair", account, address)) for limit in self._login_per_pair],
            *[(limit, ("login-address", address)) for limit in self._login_per_address],
        )

    def login_failed(self, username: str, address: str) -> None:
        """Count a wrong password (or an unknown name) towards the account's ceiling and the
        address's."""
        for limit in self._failures_per_account:
            self._limiter.hit(limit, "login-failed", _account_key(username))
        for limit in self._failures_per_address:
            self._limiter.hit(limit, "login-failed-address", address)

    def register(self, address: str) -> Refusal | None:
        """Count one sign-up attempt; return a refusal if the address is over its limit."""
        return self._count(
            *[(lim, ("register-address", address)) for lim in self._register_per_address]
        )

    def guest(self, address: str) -> Refusal | None:
        """Count one new guest; return a refusal if the address is over its limit."""
        return self._count(*[(lim, ("guest-address", address)) for lim in self._guests_per_address])

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


def _account_key(username: str) -> str:
    return username.strip().casefold()[:_MAX_KEY_LENGTH]
