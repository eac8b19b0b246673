"""The learner's time zone, so that the activity calendar counts days as the learner lives them.

The browser names its zone (Intl's IANA name, e.g. "Europe/Paris"), which static/js/zone.js
keeps in a cookie; zoneinfo checks the name against the time zone database. A missing, malformed
or unknown name counts as UTC: a wrong day is better than a broken page.
"""

from __future__ import annotations

import re
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from starlette.requests import Request

COOKIE = "tz"
# IANA names are ASCII words joined by "/" (at most three parts: America/Argentina/Salta).
# Checked before zoneinfo sees the name, which is then only ever a database key, never a path.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,30}(/[A-Za-z0-9_+-]{1,30}){0,2}")


def parse(name: str | None) -> tzinfo:
    """The zone a browser named, or UTC when the name is missing or unknown."""
    if not name or not _NAME.fullmatch(name):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder, e.g. "America"
        return UTC


def of(request: Request) -> tzinfo:
    """The requesting learner's zone (its cookie), UTC when unknown."""
    return parse(request.cookies.get(COOKIE))


def name(zone: tzinfo) -> str:
    """How the page names a zone: its IANA key, or UTC."""
    return zone.key if isinstance(zone, ZoneInfo) else "UTC"
