"""Static files: fingerprinted names cached for a year, plain names revalidated, gzip on request."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from app import static_assets
from app.static_assets import IMMUTABLE, STATIC_DIR

ASSET = re.compile(r'(?:href|src)="(/static/[^"]+)"')


def _page_assets(client: TestClient, path: str) -> list[str]:
    return ASSET.findall(client.get(path).text)


def test_pages_name_every_static_file_by_a_fingerprint_of_its_content(client: TestClient):
    urls = _page_assets(client, "/")
    assert any(url.startswith("/static/css/app.") for url in urls)
    for url in urls:
        name = url.removeprefix("/static/")
        stem, fingerprint, suffix = name.rsplit(".", 2)
        plain = STATIC_DIR / f"{stem}.{suffix}"
        assert plain.is_file() and re.fullmatch(r"[0-9a-f]{10}", fingerprint), url
        body = client.get(url, headers={"accept-encoding": "identity"})
        assert body.status_code == 200 and body.content == plain.read_bytes()
        assert body.headers["cache-control"] == IMMUTABLE


def test_a_changed_file_gets_a_new_name(tmp_path: Path):
    (tmp_path / "css").mkdir()
    sheet = tmp_path / "css" / "app.css"
    sheet.write_text("body { color: black }")
    before = static_assets.Index.of(tmp_path).names["css/app.css"]
    sheet.write_text("body { color: navy }")
    after = static_assets.Index.of(tmp_path).names["css/app.css"]
    assert before != after and before.startswith("css/app.") and before.endswith(".css")


def test_text_is_gzipped_for_clients_that_accept_it(client: TestClient):
    (url,) = [u for u in _page_assets(client, "/") if "htmx" in u]
    plain = (STATIC_DIR / "vendor/htmx/htmx.min.js").read_bytes()
    zipped = client.get(url, headers={"accept-encoding": "gzip, br"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["vary"] == "Accept-Encoding"
    assert int(zipped.headers["content-length"]) < len(plain) / 2  # on the wire
    assert zipped.content == plain  # httpx undoes the gzip
    refused = client.get(url, headers={"accept-encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in refused.headers and refused.content == plain


def test_a_plain_name_is_served_but_revalidated_with_its_etag(client: TestClient):
    first = client.get("/static/js/run.js")
    assert first.status_code == 200 and first.headers["cache-control"] == "no-cache"
    again = client.get("/static/js/run.js", headers={"if-none-match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_head_gives_the_length_without_the_body(client: TestClient):
    head = client.head("/static/js/run.js", headers={"accept-encoding": "identity"})
    size = len((STATIC_DIR / "js/run.js").read_bytes())
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == size


def test_nothing_outside_the_static_folder_is_served(client: TestClient):
    for path in (
        "/static/../app/config.py",
        "/static/%2e%2e/app/config.py",
        "/static/js/../../pyproject.toml",
        "/static/no-such-file.js",
        "/static/js",
        "/static/",
    ):
        assert client.get(path).status_code == 404, path
