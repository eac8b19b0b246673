"""Log-in and sign-up throttling per account and per client address (the `limits` library).

A moving window counts every attempt, right or wrong, before the password is checked: guessing
passwords and probing which usernames exist both cost a place in the window, and so does the
argon2 work each guess would make the server do. The counts live in `rate_limit_storage`:
memory:// is per process, so several workers or hosts need a shared store (redis://, memcached://).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
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
    """Counts log-in attempts per account and per address, and sign-ups per address."""

    def __init__(self, settings: Settings) -> None:
        self._limiter = MovingWindowRateLimiter(storage_from_string(settings.rate_limit_storage))
        self._login_per_account = parse(settings.login_limit_per_account)
        self._login_per_address = parse(settings.login_limit_per_address)
        self._register_per_address = parse(settings.register_limit_per_address)
        self._lab_runs_per_learner = parse(settings.lab_runs_per_learner)

    def login(self, username: str, address: str) -> Refusal | None:
        """Count one log-in attempt; return a refusal if the account or the address is over."""
        account = username.strip().casefold()[:_MAX_KEY_LENGTH]
        return self._count(
            (self._login_per_account, ("login-account", account)),
            (self._login_per_address, ("login-address", address)),
        )

    def register(self, address: str) -> Refusal | None:
        """Count one sign-up attempt; return a refusal if the address is over its limit."""
        return self._count((self._register_per_address, ("register-address", address)))

    def lab_run(self, user_id: int) -> Refusal | None:
        """Count one lab run of a learner; return a refusal if they are over their limit."""
        return self._count((self._lab_runs_per_learner, ("lab-runs", str(user_id))))

    def _count(self, *buckets: tuple[RateLimitItem, tuple[str, ...]]) -> Refusal | None:
        # Test every bucket first so a refused attempt does not use up places in the others;
        # then count it (each hit is atomic, so a racing attempt may still find a bucket full).
        full = [(limit, keys) for limit, keys in buckets if not self._limiter.test(limit, *keys)]
        if not full:
            full = [(limit, keys) for limit, keys in buckets if not self._limiter.hit(limit, *keys)]
        if not full:
            return None
        reset_at = max(
            self._limiter.get_window_stats(limit, *keys).reset_time for limit, keys in full
        )
        return Refusal(retry_after_s=max(1, math.ceil(reset_at - time.time())))
