"""A learner driving the app over HTTP like a browser: cookies, CSRF tokens, redirects."""

from __future__ import annotations

import re

import httpx
from fastapi.testclient import TestClient

CSRF_META = re.compile(r'<meta name="csrf-token" content="([0-9a-f]+)">')


class Learner:
    """Wraps a TestClient with the steps a learner takes."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.csrf = ""

    def get(self, url: str, **kwargs: object) -> httpx.Response:
        """GET a page and remember its CSRF token."""
        response = self.client.get(url, **kwargs)  # type: ignore[arg-type]
        match = CSRF_META.search(response.text)
        if match:
            self.csrf = match[1]
        return response

    def post(
        self, url: str, data: dict[str, object] | None = None, **kwargs: object
    ) -> httpx.Response:
        """POST a form with the CSRF token; remember the token of the page it lands on."""
        if not self.csrf:
            self.get("/")
        form = {"csrf_token": self.csrf, **(data or {})}
        response = self.client.post(url, data=form, **kwargs)  # type: ignore[arg-type]
        # Like a browser, the next form comes from the page shown now: logging in, signing up
        # and logging out replace the CSRF seed, so the old page's token is stale.
        match = CSRF_META.search(response.text)
        if match:
            self.csrf = match[1]
        return response

    def start_as_guest(self) -> None:
        """Click "Start as guest"."""
        self.get("/")
        assert self.post("/guest", {"next": "/"}).status_code == 200

    def start(self, set_id: str) -> str:
        """Start (or resume) a set; return the attempt's URL."""
        response = self.post(f"/sets/{set_id}/start", follow_redirects=False)
        assert response.status_code == 303, response.text
        return response.headers["location"]

    def answer(self, attempt_url: str, number: int, *choices: str) -> httpx.Response:
        """Submit an answer (no redirect followed)."""
        return self.post(
            f"{attempt_url}/q/{number}/answer", {"choice": list(choices)}, follow_redirects=False
        )

    def next(self, attempt_url: str) -> httpx.Response:
        """Click "Next question"."""
        return self.post(f"{attempt_url}/next", follow_redirects=False)
