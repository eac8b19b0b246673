"""Pure LTI 1.3 rules: what a resource-link launch's claims must say, and what they ask for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
INSTRUCTOR_ROLES = (
    "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
    "http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper",
    "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
)
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
# Clocks differ between an LMS and us; a minute either way is what other tools allow.
LEEWAY = timedelta(seconds=60)
# A launch whose token was issued longer ago than this is a replay, whatever its exp says.
MAX_TOKEN_AGE = timedelta(minutes=10)
STATE_LIFETIME = timedelta(minutes=10)
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")


class LaunchRefused(Exception):
    """A launch that must not go on; its message tells the person (or the LMS admin) why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Launch:
    """What a verified resource-link launch says."""

    issuer: str
    subject: str
    deployment_id: str
    roles: tuple[str, ...]
    link_id: str
    context_id: str | None
    context_title: str | None
    name: str | None
    email: str | None
    custom: dict[str, str] = field(default_factory=dict)
    target_link_uri: str | None = None
    lineitem_url: str | None = None
    lineitems_url: str | None = None
    memberships_url: str | None = None

    @property
    def is_instructor(self) -> bool:
        """Whether the LMS says this person teaches the course."""
        return any(role in INSTRUCTOR_ROLES for role in self.roles)


def is_instructor(roles: list[str] | tuple[str, ...]) -> bool:
    """Whether a list of LIS roles (a launch's, or an NRPS member's) includes teaching."""
    return any(role in INSTRUCTOR_ROLES or role == "Instructor" for role in roles)


def _audience_ok(claims: dict[str, Any], client_id: str) -> bool:
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else audience
    if not isinstance(audiences, list) or client_id not in audiences:
        return False
    azp = claims.get("azp")
    # Several audiences: the authorised party must be us (OIDC Core 3.1.3.7).
    return azp == client_id if len(audiences) > 1 or azp is not None else True


def _time(claims: dict[str, Any], name: str) -> datetime | None:
    value = claims.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return datetime.fromtimestamp(value, tz=UTC)


def check_launch(
    claims: dict[str, Any],
    issuer: str,
    client_id: str,
    deployment_ids: list[str],
    nonce: str,
    now: datetime,
) -> Launch:
    """Check a signature-verified id_token's claims for a resource-link launch; raise
    LaunchRefused with the reason, or return what it asks for."""
    if claims.get("iss") != issuer:
        raise LaunchRefused("The launch's issuer is not the platform that began it.")
    if not _audience_ok(claims, client_id):
        raise LaunchRefused("The launch was not addressed to this tool (aud/azp).")
    expires, issued = _time(claims, "exp"), _time(claims, "iat")
    if expires is None or issued is None:
        raise LaunchRefused("The launch's token has no expiry or issue time.")
    if expires + LEEWAY < now:
        raise LaunchRefused("The launch's token has expired: launch again from the course.")
    if issued - LEEWAY > now or issued + MAX_TOKEN_AGE < now:
        raise LaunchRefused("The launch's token was not issued just now: launch again.")
    if claims.get("nonce") != nonce:
        raise LaunchRefused("The launch's nonce does not match this launch (a replay?).")
    deployment = claims.get(CLAIM + "deployment_id")
    if not isinstance(deployment, str) or deployment not in deployment_ids:
        raise LaunchRefused(
            f"The deployment {deployment!r} is not registered for this platform: the operator "
            "adds it with `ranklab lti add-platform --deployment-id`."
        )
    message_type = claims.get(CLAIM + "message_type")
    if message_type != "LtiResourceLinkRequest":
        raise LaunchRefused(f"RankLab accepts resource-link launches, not {message_type!r}.")
    if claims.get(CLAIM + "version") != "1.3.0":
        raise LaunchRefused("RankLab speaks LTI version 1.3.0 only.")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise LaunchRefused("Anonymous launches are not accepted: the LMS must send a user id.")
    roles = claims.get(CLAIM + "roles")
    if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
        raise LaunchRefused("The launch has no roles claim.")
    link = claims.get(CLAIM + "resource_link")
    if not isinstance(link, dict) or not isinstance(link.get("id"), str):
        raise LaunchRefused("The launch has no resource link.")
    context = claims.get(CLAIM + "context") or {}
    ags = claims.get(AGS_CLAIM) or {}
    nrps = claims.get(NRPS_CLAIM) or {}
    custom = claims.get(CLAIM + "custom") or {}
    return Launch(
        issuer=issuer,
        subject=subject,
        deployment_id=deployment,
        roles=tuple(roles),
        link_id=link["id"],
        context_id=_text(context.get("id")),
        context_title=_text(context.get("title")) or _text(context.get("label")),
        name=_text(claims.get("name")) or _text(claims.get("given_name")),
        email=_text(claims.get("email")),
        custom={str(k): str(v) for k, v in custom.items()} if isinstance(custom, dict) else {},
        target_link_uri=_text(claims.get(CLAIM + "target_link_uri")),
        lineitem_url=_text(ags.get("lineitem")),
        lineitems_url=_text(ags.get("lineitems")),
        memberships_url=_text(nrps.get("context_memberships_url")),
    )


def _text(value: object) -> str | None:
    return value[:300] if isinstance(value, str) and value else None


def target(launch: Launch) -> str:
    """Where the launch takes the person: the set or topic a custom parameter names, else the
    target link's path on this site (only a set or topic page), else their classes."""
    for name, prefix in (("set", "/sets/"), ("topic", "/topics/")):
        wanted = launch.custom.get(name, "").strip()
        if wanted:
            if not _ID.fullmatch(wanted):
                raise LaunchRefused(f"The link's custom {name}={wanted!r} is not an id.")
            return prefix + wanted
    if launch.target_link_uri:
        path = urlsplit(launch.target_link_uri).path
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in ("sets", "topics") and _ID.fullmatch(parts[1]):
            return path
    return "/me/classes"


def set_of(path: str) -> str | None:
    """The set id a target path opens, if it opens a set."""
    return path.removeprefix("/sets/") if path.startswith("/sets/") else None


def state_expired(created_at: datetime, now: datetime) -> bool:
    """Whether a launch's state is too old to go on with."""
    return created_at + STATE_LIFETIME < now
