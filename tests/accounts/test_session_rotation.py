"""Session fixation: every privilege change gets a new session token and a new CSRF seed."""

from __future__ import annotations

import pytest
from fastapi import Request
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient

from app.accounts import service as accounts
from app.deps import renew_csrf_seed
from tests.support.learner import Learner


@pytest.fixture
def visitor(app_factory, sqlite_url):
    with TestClient(app_factory(sqlite_url)) as client:
        yield Learner(client)


@pytest.fixture
def replay(app_factory, sqlite_url):
    """Another browser on the same server, for replaying a stolen or planted cookie."""
    with TestClient(app_factory(sqlite_url)) as client:
        yield client


def signed_in_as(client: TestClient, session_token: str | None) -> str | None:
    """Return who a session cookie signs in as on the home page (None: nobody)."""
    client.cookies.clear()
    if session_token is not None:
        client.cookies.set("ranklab_session", session_token)
    page = client.get("/").text
    marker = 'data-testid="who">'
    if marker not in page:
        return None
    return page.split(marker, 1)[1].split("<", 1)[0].strip()


def cookie(visitor: Learner, name: str) -> str | None:
    return visitor.client.cookies.get(name)


def test_a_guest_who_signs_up_gets_a_new_session_token_and_the_old_one_stops_working(
    visitor, replay
):
    visitor.start_as_guest()
    attempt = visitor.start("test-basics")
    guest_token = cookie(visitor, "ranklab_session")
    assert guest_token is not None

    visitor.post("/register", {"username": "ada", "password": "correct horse"})

    account_token = cookie(visitor, "ranklab_session")
    assert account_token not in (None, guest_token)
    assert signed_in_as(replay, account_token) == "ada"
    assert signed_in_as(replay, guest_token) is None  # a planted guest cookie is worthless now
    assert visitor.start("test-basics") == attempt  # the guest's attempt stayed with the user


def test_logging_in_replaces_a_session_cookie_the_browser_already_had(visitor, replay):
    visitor.get("/")
    visitor.post("/register", {"username": "grace", "password": "hopper-1906"})
    visitor.post("/logout")
    visitor.start_as_guest()  # e.g. a cookie an attacker planted before the victim logs in
    planted = cookie(visitor, "ranklab_session")

    visitor.post("/login", {"username": "grace", "password": "hopper-1906", "next": "/"})

    fresh = cookie(visitor, "ranklab_session")
    assert fresh not in (None, planted)
    assert signed_in_as(replay, fresh) == "grace"
    assert signed_in_as(replay, planted) is None


def test_log_out_ends_the_session_on_the_server_so_a_replayed_cookie_is_refused(visitor, replay):
    visitor.get("/")
    visitor.post("/register", {"username": "linus", "password": "penguins!"})
    token = cookie(visitor, "ranklab_session")
    assert signed_in_as(replay, token) == "linus"

    visitor.post("/logout")

    assert signed_in_as(replay, token) is None


@pytest.mark.parametrize("change", ["register", "login", "logout", "guest"])
def test_the_csrf_seed_is_replaced_on_every_privilege_change_and_the_old_token_dies(
    visitor, change
):
    visitor.get("/")
    if change in ("login", "logout"):
        visitor.post("/register", {"username": "margaret", "password": "hamilton-69"})
        if change == "login":
            visitor.post("/logout")
    visitor.get("/")
    old_seed, old_token = cookie(visitor, "ranklab_csrf"), visitor.csrf

    form = {
        "register": ("/register", {"username": "katherine", "password": "johnson-18"}),
        "login": ("/login", {"username": "margaret", "password": "hamilton-69", "next": "/"}),
        "logout": ("/logout", {}),
        "guest": ("/guest", {"next": "/"}),
    }[change]
    response = visitor.post(form[0], form[1], follow_redirects=False)
    assert response.status_code == 303
    new_seed = cookie(visitor, "ranklab_csrf")
    assert new_seed not in (None, old_seed)

    # The page after the redirect carries a token for the new seed, and forms keep working.
    visitor.get("/")
    assert visitor.csrf != old_token
    assert visitor.post("/guest", {"next": "/"}, follow_redirects=False).status_code == 303
    # A token minted for the old seed (say, one an attacker read before) is refused.
    stale = visitor.client.post("/guest", data={"csrf_token": old_token, "next": "/"})
    assert stale.status_code == 403


def test_a_page_rendered_after_renewing_the_seed_carries_a_token_for_the_new_cookie(
    app_factory, sqlite_url
):
    app = app_factory(sqlite_url)

    def renew_and_render(request: Request) -> PlainTextResponse:
        renew_csrf_seed(request)
        return PlainTextResponse(request.state.csrf_token)

    app.add_api_route("/renew-probe", renew_and_render)
    with TestClient(app) as client:
        client.get("/")
        old_seed = client.cookies["ranklab_csrf"]
        response = client.get("/renew-probe")
    new_seed = response.cookies["ranklab_csrf"]
    assert new_seed != old_seed
    assert response.text == accounts.csrf_token("test-secret", new_seed)
