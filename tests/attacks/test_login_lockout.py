"""attack: wrong passwords sent for someone else's account, from another address or naming
any address in X-Forwarded-For. Counted per account alone, ten of them locked the owner out;
behind a proxy every visitor shared one address, and uvicorn honoured X-Forwarded-For from any
loopback peer.
expect: a stranger fills only their own (account, address) window, the owner logs in from
theirs; X-Forwarded-For counts only from RANKLAB_TRUSTED_PROXIES, else the peer's address
is counted. Real uvicorn servers on loopback."""

from __future__ import annotations

import httpx

from app.serving import proxy_options
from tests.support.learner import Learner
from tests.support.live import serving

OWNER, STRANGER = "198.51.100.1", "203.0.113.7"  # documentation addresses, sent as headers only


def visitor(url: str, address: str | None = None) -> Learner:
    """A browser on the live server, behind the proxy at `address` (none: no header)."""
    headers = {"X-Forwarded-For": address} if address else {}
    return Learner(httpx.Client(base_url=url, headers=headers))  # type: ignore[arg-type]


def test_a_stranger_elsewhere_cannot_lock_the_owner_out(app_factory, sqlite_url):
    trusted = "127.0.0.1"  # the proxy in front of the app, here the test itself
    app = app_factory(sqlite_url, trusted_proxies=trusted)
    with serving(app, **proxy_options(trusted)) as url:
        owner, stranger = visitor(url, OWNER), visitor(url, STRANGER)
        owner.get("/")
        owner.post("/register", {"username": "ada", "password": "correct horse"})
        owner.post("/logout")
        stranger.get("/")
        wrong = {"username": "ada", "password": "not-the-one"}
        for _ in range(10):  # the (account, address) window: 10 a minute
            assert stranger.post("/login", wrong).status_code == 400
        assert stranger.post("/login", wrong).status_code == 429
        right = {"username": "ada", "password": "correct horse"}
        assert owner.post("/login", right, follow_redirects=False).status_code == 303
        owner.client.close()
        stranger.client.close()


def test_x_forwarded_for_from_a_peer_not_trusted_is_ignored(app_factory, sqlite_url):
    app = app_factory(sqlite_url)  # no trusted proxies: the default
    with serving(app, **proxy_options(app.state.settings.trusted_proxies)) as url:
        spoofer = visitor(url)
        spoofer.get("/")
        for number in range(30):  # 30 a minute per address, whatever address each one names
            forged = {"X-Forwarded-For": f"192.0.2.{number + 1}"}
            wrong = {"username": f"user{number}", "password": "not-the-one"}
            assert spoofer.post("/login", wrong, headers=forged).status_code == 400
        last = spoofer.post(
            "/login",
            {"username": "user99", "password": "x"},
            headers={"X-Forwarded-For": "192.0.2.200"},
        )
        assert last.status_code == 429
        spoofer.client.close()
