"""Static files with fingerprinted names, long caching and gzip, served from memory.

Pages name each file by a fingerprint of its content (`static("css/app.css")` gives
`/static/css/app.3f2a9c1b04.css`): a browser keeps such a file for a year without asking again
(`Cache-Control: immutable`), and a new release changes the name of every file it changes, so
nothing stale is ever shown. The plain name is served too (a stylesheet's relative `url(...)`, an
old page still open), with `no-cache` and an ETag: the browser asks each time and gets a 304.

Text files (CSS, JavaScript, SVG, JSON, source maps) are gzipped once, at level 9, the first time
they are asked for, and served compressed to clients that accept gzip. static/ is vendored and
changes only with a release, so the index is built once per process, from the files as they are at
start-up; nothing outside it is served (no path is ever joined with the request's).
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"
PREFIX = "/static/"
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
COMPRESSIBLE = (".css", ".js", ".mjs", ".svg", ".json", ".map", ".txt", ".md", ".html")
_GZIP_AT_LEAST = 512  # smaller files gain less than the header costs


@dataclass
class Asset:
    """One file of static/: its bytes, their fingerprint, and (lazily) their gzip."""

    path: Path
    body: bytes
    fingerprint: str
    media_type: str
    _gzipped: bytes | None = field(default=None, repr=False)

    @property
    def etag(self) -> str:
        return f'"{self.fingerprint}"'

    def gzipped(self) -> bytes | None:
        """The gzip of the body, if the file is text worth compressing."""
        if self.path.suffix not in COMPRESSIBLE or len(self.body) < _GZIP_AT_LEAST:
            return None
        if self._gzipped is None:
            self._gzipped = gzip.compress(self.body, compresslevel=9, mtime=0)
        return self._gzipped


@dataclass
class Index:
    """Every file of a static folder by its plain and its fingerprinted name (relative paths)."""

    plain: dict[str, Asset]
    fingerprinted: dict[str, Asset]
    names: dict[str, str]  # plain name → fingerprinted name

    @classmethod
    def of(cls, directory: Path) -> Index:
        plain: dict[str, Asset] = {}
        fingerprinted: dict[str, Asset] = {}
        names: dict[str, str] = {}
        for path in sorted(directory.rglob("*")):
            if not path.is_file() or path.is_symlink():
                continue
            name = path.relative_to(directory).as_posix()
            body = path.read_bytes()
            fingerprint = hashlib.sha256(body).hexdigest()[:10]
            media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
            if media_type.startswith("text/") or media_type in {"application/javascript"}:
                media_type += "; charset=utf-8"
            asset = Asset(path, body, fingerprint, media_type)
            stem, dot, suffix = name.rpartition(".")
            named = f"{stem}.{fingerprint}.{suffix}" if dot and "/" not in suffix else name
            plain[name] = asset
            fingerprinted[named] = asset
            names[name] = named
        return cls(plain, fingerprinted, names)


@cache
def index() -> Index:
    """The index of the app's static/ folder (built once per process)."""
    return Index.of(STATIC_DIR)


def url(name: str) -> str:
    """The fingerprinted URL of a file of static/ (a template's `static("js/run.js")`).

    A name that is not in static/ is an error at render time, not a broken link in production.
    """
    return PREFIX + index().names[name]


class StaticAssets:
    """The ASGI app mounted at /static: GET and HEAD of the files in its index."""

    def __init__(self, directory: Path = STATIC_DIR) -> None:
        self._index = index() if directory == STATIC_DIR else Index.of(directory)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, {"allow": "GET, HEAD"}, b"Method Not Allowed")
            return
        name = scope["path"].removeprefix(scope.get("root_path", "")).lstrip("/")
        name = name.removeprefix(PREFIX.strip("/") + "/")
        asset = self._index.fingerprinted.get(name)
        immutable = asset is not None and self._index.names.get(name) != name
        if asset is None:
            asset = self._index.plain.get(name)
        if asset is None:
            await _respond(send, 404, {}, b"Not Found")
            return
        request = Headers(scope=scope)
        headers = {
            "cache-control": IMMUTABLE if immutable else REVALIDATE,
            "etag": asset.etag,
            "vary": "Accept-Encoding",
        }
        if request.get("if-none-match") == asset.etag:
            await _respond(send, 304, headers, b"")
            return
        body = asset.body
        gzipped = asset.gzipped()
        if gzipped is not None and _accepts_gzip(request.get("accept-encoding", "")):
            body = gzipped
            headers["content-encoding"] = "gzip"
        headers["content-type"] = asset.media_type
        headers["content-length"] = str(len(body))
        await _respond(send, 200, headers, b"" if scope["method"] == "HEAD" else body, sized=True)


def _accepts_gzip(accept_encoding: str) -> bool:
    for part in accept_encoding.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


async def _respond(
    send: Send, status: int, headers: dict[str, str], body: bytes, sized: bool = False
) -> None:
    if not sized:
        headers = {**headers, "content-length": str(len(body))}
        if body:
            headers["content-type"] = "text/plain; charset=utf-8"
    raw = [(key.encode("latin-1"), value.encode("latin-1")) for key, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
