"""Pure account rules: what a valid username and password look like, and device cookies."""

from __future__ import annotations

import hashlib
import hmac
import re

USERNAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{3,40}$")
MIN_PASSWORD_LENGTH = 8


def username_problem(username: str) -> str | None:
    """Return why a username is not acceptable, or None."""
    if not USERNAME_PATTERN.fullmatch(username):
        return "Usernames are 3 to 40 letters, digits, dots, dashes or underscores."
    return None


def password_problem(password: str) -> str | None:
    """Return why a password is not acceptable, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"Passwords need at least {MIN_PASSWORD_LENGTH} characters."
    if len(password) > 1000:
        return "That password is too long."
    return None


# Device cookies (OWASP's "device cookies" against lockout): a browser that signed in to an
# account carries a signed value naming it and a nonce of its own. A log-in with one is exempt
# from the account's ceiling of failures, which strangers elsewhere can fill; it counts against
# its own device's limit instead. The signature binds account and nonce, so no one without the
# secret key can make one or move one to another account.
_DEVICE_PURPOSE = "device"
# Usernames are at most 40 characters; a longer one names no account, so it need not be a key.
_MAX_ACCOUNT_KEY_LENGTH = 64


def account_key(username: str) -> str:
    """The account a log-in names, as limits and device cookies key it: case and spaces aside."""
    return username.strip().casefold()[:_MAX_ACCOUNT_KEY_LENGTH]


def _device_signature(secret_key: str, account: str, nonce: str) -> str:
    message = f"{_DEVICE_PURPOSE}\n{account}\n{nonce}"
    return hmac.new(secret_key.encode(), message.encode(), hashlib.sha256).hexdigest()


def device_cookie(secret_key: str, username: str, nonce: str) -> str:
    """The device cookie's value for a browser that signed in to this account."""
    account = account_key(username)
    return f"{account}:{nonce}:{_device_signature(secret_key, account, nonce)}"


def device_of(secret_key: str, cookie: str | None, username: str) -> str | None:
    """The device's nonce if `cookie` is a genuine device cookie for this account, else None."""
    if not cookie or cookie.count(":") != 2:
        return None
    account, nonce, signature = cookie.split(":")
    if not nonce or account != account_key(username):
        return None
    if not hmac.compare_digest(signature, _device_signature(secret_key, account, nonce)):
        return None
    return nonce
