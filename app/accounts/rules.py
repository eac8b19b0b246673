"""Pure account rules: what a valid username and password look like."""

from __future__ import annotations

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
