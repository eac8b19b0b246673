"""The LTI Advantage services, as the tool calls them: an access token (a client-credentials
grant with a JWT assertion signed by the tool's key), the roster (NRPS), line items and
scores (AGS)."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

import httpx

from app.lti import keys
from app.lti.models import LtiPlatform

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MEMBERSHIPS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
MAX_PAGES = 50  # a roster's pages followed (Link: rel="next"): 50 pages of a big course


class PlatformError(Exception):
    """The platform refused or could not be reached; the message says which call and why."""


def _checked(response: httpx.Response, what: str) -> httpx.Response:
    if response.status_code >= 400:
        raise PlatformError(f"{what}: the platform answered {response.status_code}")
    return response


def access_token(
    client: httpx.Client,
    platform: LtiPlatform,
    signing_key: tuple[str, str],
    scopes: list[str],
    now: datetime,
) -> str:
    """A bearer token for these scopes (IMS Security Framework 4.1, client credentials)."""
    issued = int(now.timestamp())
    assertion = keys.sign(
        *signing_key,
        {
            "iss": platform.client_id,
            "sub": platform.client_id,
            "aud": platform.auth_token_url,
            "iat": issued,
            "exp": issued + 300,
            "jti": secrets.token_urlsafe(16),
        },
    )
    try:
        response = client.post(
            platform.auth_token_url,
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": assertion,
                "scope": " ".join(scopes),
            },
        )
    except httpx.HTTPError as error:
        raise PlatformError(f"token: {error.__class__.__name__}") from error
    token = _checked(response, "token").json().get("access_token")
    if not isinstance(token, str):
        raise PlatformError("token: the platform's answer has no access_token")
    return token


def _get(client: httpx.Client, url: str, token: str, accept: str) -> httpx.Response:
    try:
        headers = {"Authorization": f"Bearer {token}", "Accept": accept}
        return _checked(client.get(url, headers=headers), f"GET {url}")
    except httpx.HTTPError as error:
        raise PlatformError(f"GET {url}: {error.__class__.__name__}") from error


def members(client: httpx.Client, url: str, token: str) -> list[dict[str, Any]]:
    """The course's members, every page of them."""
    found: list[dict[str, Any]] = []
    next_url: str | None = url
    for _ in range(MAX_PAGES):
        if next_url is None:
            break
        response = _get(client, next_url, token, MEMBERSHIPS)
        found += [m for m in response.json().get("members", []) if isinstance(m, dict)]
        next_url = response.links.get("next", {}).get("url")
    return found


def lineitem_for(
    client: httpx.Client, lineitems_url: str, token: str, link_id: str, label: str, tag: str
) -> str:
    """The line item for a resource link: the platform's, else one made for it (100 points)."""
    found = _get(
        client, str(httpx.URL(lineitems_url).copy_merge_params({"resource_link_id": link_id})),
        token, LINEITEMS,
    ).json()  # fmt: skip
    for item in found if isinstance(found, list) else []:
        if item.get("resourceLinkId") == link_id and isinstance(item.get("id"), str):
            return str(item["id"])
    body = {"scoreMaximum": 100, "label": label, "resourceLinkId": link_id, "tag": tag}
    try:
        response = client.post(
            lineitems_url,
            json=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": LINEITEM},
        )
    except httpx.HTTPError as error:
        raise PlatformError(f"POST {lineitems_url}: {error.__class__.__name__}") from error
    made = _checked(response, f"POST {lineitems_url}").json().get("id")
    if not isinstance(made, str):
        raise PlatformError("the platform's new line item has no id")
    return made


def post_score(
    client: httpx.Client, lineitem_url: str, token: str, user_id: str, score: float, at: datetime
) -> None:
    """Send one learner's score (of 100) to a line item (AGS Score publish service)."""
    url = httpx.URL(lineitem_url)
    scores = url.copy_with(path=url.path.rstrip("/") + "/scores")
    body = {
        "userId": user_id,
        "scoreGiven": round(score, 2),
        "scoreMaximum": 100,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": at.isoformat(timespec="milliseconds"),
    }
    try:
        response = client.post(
            str(scores),
            json=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": SCORE},
        )
    except httpx.HTTPError as error:
        raise PlatformError(f"POST {scores}: {error.__class__.__name__}") from error
    _checked(response, f"POST {scores}")
