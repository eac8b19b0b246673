"""Security headers on every response: a nonce-based CSP, no framing, no sniffing; 405 + Allow."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def policy(response) -> dict[str, str]:
    """Split a Content-Security-Policy header into {directive: sources}."""
    parts = (
        part.strip().split(" ", 1)
        for part in response.headers["content-security-policy"].split(";")
    )
    return {part[0]: part[1] if len(part) > 1 else "" for part in parts if part[0]}


def test_pages_get_a_strict_content_security_policy(client: TestClient):
    csp = policy(client.get("/"))
    assert "'unsafe-inline'" not in csp["script-src"]
    assert "'unsafe-eval'" not in csp["script-src"]
    assert re.fullmatch(r"'nonce-[A-Za-z0-9_-]{22,}'", csp["script-src"])
    assert csp["frame-ancestors"] == "'none'"
    assert csp["img-src"] == "'self' data:"
    assert csp["object-src"] == "'none'" and csp["base-uri"] == "'none'"
    assert "'unsafe-eval'" not in csp["default-src"]


def test_every_script_tag_carries_this_responses_nonce(client: TestClient):
    response = client.get("/login")
    nonce = policy(response)["script-src"].removeprefix("'nonce-").removesuffix("'")
    scripts = re.findall(r"<script\b[^>]*>", response.text)
    assert scripts
    assert all(f'nonce="{nonce}"' in tag for tag in scripts), scripts


def test_each_response_gets_its_own_nonce(client: TestClient):
    first, second = (policy(client.get("/"))["script-src"] for _ in range(2))
    assert first != second


def test_framing_sniffing_and_referrers_are_refused(client: TestClient):
    for url in ("/", "/static/js/run.js", "/api/attempts/1/q/1", "/no-such-page"):
        headers = client.get(url).headers
        assert headers["x-frame-options"] == "DENY", url
        assert headers["x-content-type-options"] == "nosniff", url
        assert headers["referrer-policy"] == "same-origin", url
        assert "content-security-policy" in headers, url


def test_htmx_is_told_not_to_inject_styles_or_evaluate_code(client: TestClient):
    page = client.get("/").text
    assert '"includeIndicatorStyles":false' in page and '"allowEval":false' in page


def test_the_api_docs_page_is_served_from_this_site_under_a_nonce(client: TestClient):
    response = client.get("/api/docs")
    csp = policy(response)
    nonce = csp["script-src"].removeprefix("'nonce-").removesuffix("'")
    assert csp["script-src"] == f"'nonce-{nonce}'"  # no CDN, no hash, no 'unsafe-inline'
    # Swagger UI's inline styles, this page only (and no nonce there: it would void them)
    assert csp["style-src"] == "'self' 'unsafe-inline'"
    assert csp["frame-ancestors"] == "'none'"
    assert f'<script nonce="{nonce}" src="/static/vendor/swagger-ui/' in response.text
    assert "cdn" not in response.text and "http" not in response.text
    page = policy(client.get("/"))
    assert page["style-src"] == f"'self' {page['script-src']}"  # the editor's <style>, by nonce


def test_a_wrong_method_on_a_route_is_405_with_allow(client: TestClient):
    response = client.delete("/login")
    assert response.status_code == 405
    assert set(response.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST"}
    api = client.put("/api/attempts/1/q/1", headers={"accept": "application/json"})
    assert api.status_code == 405 and "GET" in api.headers["allow"]
    assert api.json() == {"detail": "Method Not Allowed"}
    static = client.post("/static/js/run.js")
    assert static.status_code == 405 and static.headers["allow"] == "GET, HEAD"


def test_a_hot_page_answers_head_and_a_wrong_method_with_405_and_allow(client: TestClient):
    head = client.head("/")  # the home page is a plain Starlette route (app.deps.page_route)
    assert head.status_code == 200 and head.content == b""
    assert "nonce-" in head.headers["content-security-policy"]
    wrong = client.put("/attempts/1/q/1", headers={"accept": "application/json"})
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET, HEAD"
    assert client.delete("/").headers["allow"] == "GET, HEAD"
