"""An LMS for tests: a real LTI 1.3 platform on loopback with its own RSA key and JWKS. It
starts launches (to the tool's login initiation), answers the OIDC auth request with a signed
id_token in an auto-submitting form, checks the tool's JWT assertion at its token endpoint
against the tool's JWKS, and serves NRPS members and AGS line items, recording each score."""

from __future__ import annotations

import functools
import html
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import httpx
from fastapi import FastAPI, Form, Header, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey

from tests.support.live import serving

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
CLIENT_ID = "ranklab-tool"
DEPLOYMENT = "deployment-1"


@functools.cache
def _first_key() -> RSAKey:
    """The platform's key: one per test session (making an RSA key takes a while)."""
    return RSAKey.generate_key(2048, parameters={"kid": "platform-1"})


@dataclass
class Person:
    """A user of the LMS."""

    sub: str
    name: str
    email: str
    roles: list[str] = field(default_factory=lambda: [LEARNER])


@dataclass
class Link:
    """A resource link placed in a course: what the tool's link says."""

    context: str
    title: str
    custom: dict[str, str] = field(default_factory=dict)
    target_path: str = "/"


class Platform:
    """The simulated LMS; `url` once it is serving, `connect(tool_url)` before launching."""

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self.clock = clock or (lambda: datetime.now(UTC))
        self.key = _first_key()
        self.url = ""
        self.tool_url = ""
        self.people: dict[str, Person] = {}
        self.courses: dict[str, str] = {}  # context id → title
        self.enrolled: dict[str, list[str]] = {}  # context id → logins
        self.links: dict[str, Link] = {}
        self.lineitems: dict[str, dict[str, Any]] = {}  # id → line item
        self.scores: list[dict[str, Any]] = []  # every score posted, in order
        self.fail_scores = False  # answer score posts with 503 (an outage)
        self.tokens: dict[str, list[str]] = {}  # access token → scopes
        self.token_requests = 0
        self.id_token_overrides: dict[str, Any] = {}  # claims the next launches change
        self._lock = threading.Lock()
        self.app = self._build()

    def connect(self, tool_url: str) -> None:
        """Point the platform's tool configuration at a running tool."""
        self.tool_url = tool_url

    def registration(self) -> dict[str, Any]:
        """What the operator gives `ranklab lti add-platform` for this platform."""
        return {
            "issuer": self.url,
            "client_id": CLIENT_ID,
            "deployment_ids": [DEPLOYMENT],
            "auth_login_url": self.url + "/auth",
            "auth_token_url": self.url + "/token",
            "jwks_url": self.url + "/jwks",
        }

    def add_course(self, context: str, title: str) -> None:
        self.courses[context] = title
        self.enrolled.setdefault(context, [])

    def enrol(self, context: str, login: str, person: Person) -> None:
        self.people[login] = person
        self.enrolled[context].append(login)

    def launch_url(self, login: str, link: str) -> str:
        """The URL a person's click on a course link opens (it starts the launch)."""
        return f"{self.url}/launch/{login}/{link}"

    def id_token(self, login: str, link_name: str, nonce: str, **changes: Any) -> str:
        """A signed id_token for a person's launch of a link (changes: claims to alter, None to
        drop one; `key=` another key to sign with)."""
        person, link = self.people[login], self.links[link_name]
        now = int(self.clock().timestamp())
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": CLIENT_ID,
            "sub": person.sub,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "name": person.name,
            "email": person.email,
            CLAIM + "message_type": "LtiResourceLinkRequest",
            CLAIM + "version": "1.3.0",
            CLAIM + "deployment_id": DEPLOYMENT,
            CLAIM + "target_link_uri": self.tool_url + link.target_path,
            CLAIM + "roles": person.roles,
            CLAIM + "resource_link": {"id": link_name, "title": link.title},
            CLAIM + "context": {"id": link.context, "title": self.courses[link.context]},
            CLAIM + "custom": link.custom,
            "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
                "scope": [
                    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                ],
                "lineitems": f"{self.url}/courses/{link.context}/lineitems",
            },
            "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                "context_memberships_url": f"{self.url}/courses/{link.context}/memberships",
                "service_versions": ["2.0"],
            },
        }
        key = changes.pop("key", self.key)
        for name, value in {**self.id_token_overrides, **changes}.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        return jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)

    def scores_for(self, sub: str) -> list[dict[str, Any]]:
        return [score for score in self.scores if score["userId"] == sub]

    def _bearer(self, authorization: str | None, scope: str) -> None:
        token = (authorization or "").removeprefix("Bearer ")
        if scope not in self.tokens.get(token, []):
            raise HTTPException(401, f"a token with scope {scope} is needed")

    def _check_assertion(self, assertion: str) -> None:
        """The tool's client assertion, checked against the keys the tool publishes."""
        jwks = httpx.get(self.tool_url + "/lti/jwks.json", timeout=10).json()
        try:
            claims = jwt.decode(assertion, KeySet.import_key_set(jwks), algorithms=["RS256"]).claims
        except JoseError as error:
            raise HTTPException(401, f"bad client assertion: {error}") from error
        now = self.clock().timestamp()
        if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID:
            raise HTTPException(401, "the assertion is not from our client")
        if claims.get("aud") != self.url + "/token" or claims.get("exp", 0) < now - 60:
            raise HTTPException(401, "the assertion is for another audience, or expired")

    def _build(self) -> FastAPI:
        app = FastAPI()
        platform = self

        @app.get("/launch/{login}/{link}")
        def start(login: str, link: str) -> RedirectResponse:
            query = {
                "iss": platform.url,
                "login_hint": login,
                "target_link_uri": platform.tool_url + platform.links[link].target_path,
                "lti_message_hint": link,
                "client_id": CLIENT_ID,
                "lti_deployment_id": DEPLOYMENT,
            }
            return RedirectResponse(f"{platform.tool_url}/lti/login?{urlencode(query)}", 302)

        @app.get("/auth")
        def auth(request: Request) -> HTMLResponse:
            asked = request.query_params
            expected = platform.tool_url + "/lti/launch"
            if asked.get("client_id") != CLIENT_ID or asked.get("redirect_uri") != expected:
                raise HTTPException(400, "unknown client or redirect_uri")
            if asked.get("scope") != "openid" or asked.get("response_mode") != "form_post":
                raise HTTPException(400, "not an LTI OIDC auth request")
            token = platform.id_token(
                asked["login_hint"], asked["lti_message_hint"], asked["nonce"]
            )
            return HTMLResponse(
                f'<form method="post" action="{html.escape(expected)}">'
                f'<input type="hidden" name="id_token" value="{token}">'
                f'<input type="hidden" name="state" value="{html.escape(asked["state"])}">'
                "</form><script>document.forms[0].submit()</script>"
            )

        @app.get("/jwks")
        def jwks() -> dict[str, Any]:
            return dict(KeySet([platform.key]).as_dict(private=False))

        @app.post("/token")
        def token(
            grant_type: str = Form(),
            client_assertion_type: str = Form(),
            client_assertion: str = Form(),
            scope: str = Form(),
        ) -> dict[str, Any]:
            if grant_type != "client_credentials" or not client_assertion_type.endswith(
                "jwt-bearer"
            ):
                raise HTTPException(400, "unsupported grant")
            platform._check_assertion(client_assertion)
            issued = secrets.token_urlsafe(16)
            with platform._lock:
                platform.tokens[issued] = scope.split()
                platform.token_requests += 1
            return {"access_token": issued, "token_type": "Bearer", "expires_in": 3600}

        @app.get("/courses/{context}/memberships")
        def memberships(context: str, authorization: str | None = Header(None)) -> JSONResponse:
            platform._bearer(authorization, "https://purl.imsglobal.org/spec/lti-nrps/scope/"
                             "contextmembership.readonly")  # fmt: skip
            members = [
                {"user_id": p.sub, "name": p.name, "email": p.email, "roles": p.roles,
                 "status": "Active"}
                for p in (platform.people[login] for login in platform.enrolled[context])
            ]  # fmt: skip
            return JSONResponse(
                {"id": "", "context": {"id": context}, "members": members},
                media_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
            )

        @app.get("/courses/{context}/lineitems")
        def lineitems(
            context: str, resource_link_id: str | None = None,
            authorization: str | None = Header(None),
        ) -> list[dict[str, Any]]:  # fmt: skip
            platform._bearer(
                authorization, "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
            )
            return [
                item for item in platform.lineitems.values()
                if item["context"] == context
                and resource_link_id in (None, item.get("resourceLinkId"))
            ]  # fmt: skip

        @app.post("/courses/{context}/lineitems")
        async def new_lineitem(
            context: str, request: Request, authorization: str | None = Header(None)
        ) -> dict[str, Any]:
            platform._bearer(
                authorization, "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
            )
            body = await request.json()
            with platform._lock:
                number = len(platform.lineitems) + 1
                item = {**body, "id": f"{platform.url}/lineitems/{number}", "context": context}
                platform.lineitems[item["id"]] = item
            return item

        @app.post("/lineitems/{number}/scores")
        async def score(
            number: int, request: Request, authorization: str | None = Header(None)
        ) -> dict[str, str]:
            platform._bearer(authorization, "https://purl.imsglobal.org/spec/lti-ags/scope/score")
            if platform.fail_scores:
                raise HTTPException(503, "the gradebook is down for maintenance")
            body = await request.json()
            with platform._lock:
                platform.scores.append({**body, "lineitem": f"{platform.url}/lineitems/{number}"})
            return {}

        return app


@contextmanager
def running_platform(clock: Callable[[], datetime] | None = None) -> Iterator[Platform]:
    """A platform serving on a loopback port until the block ends."""
    platform = Platform(clock)
    with serving(platform.app) as url:
        platform.url = url
        yield platform
