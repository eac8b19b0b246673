"""Prometheus metrics at /metrics: request latency per route template, runs by status, verify
verdicts, and whatever the job bus registers (queue depth and age, slots in use).

Labels are bounded on purpose: a route's template (`/labs/{lab_id}`), never the raw path, so a
crawler cannot grow the series without limit; methods outside the standard few read OTHER.

Several worker processes (uvicorn --workers N): set PROMETHEUS_MULTIPROC_DIR to an empty folder
every worker can write, emptied before they start. prometheus_client then keeps each worker's
values in files there, and a scrape answered by any worker sums them all.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Request, Response
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, multiprocess
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from starlette.routing import Mount
from starlette.types import Scope

from app.config import Settings
from app.errors import Forbidden, NotFound

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "<unmatched>"  # no route answered (a 404 for an unknown path, a slash redirect)

REQUEST_SECONDS = Histogram(
    "ranklab_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response (a stream: to its end).",
    ["method", "route", "status_class"],
)
RUNS = Counter(
    "ranklab_runs_total",
    "RunResults the app received from the executor, by where they were asked for and status.",
    ["source", "status"],
)
VERIFY_VERDICTS = Counter(
    "ranklab_verify_verdicts_total",
    "Verification verdicts recorded (staff verify and `ranklab verify`), by verdict.",
    ["verdict"],
)

# The write queue (app.writes): how long writes wait for their turn, how many wait now (summed
# over the live worker processes), and how many were refused with a 503 for want of time.
WRITE_WAIT_SECONDS = Histogram(
    "ranklab_write_wait_seconds",
    "Time a request's writes waited in the write queue before they began.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
WRITES_WAITING = Gauge(
    "ranklab_writes_waiting",
    "Writes queued and not yet begun, all worker processes together.",
    multiprocess_mode="livesum",
)
ADMISSION_WAIT_SECONDS = Histogram(
    "ranklab_admission_wait_seconds",
    "Time a hot page or form waited for its turn to be worked on (app.admission), of those "
    "that waited at all.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
WRITES_REFUSED = Counter(
    "ranklab_writes_refused_total",
    "Writes refused with 503 Busy because their turn would not come in time (nothing stored).",
)

_scraped: list[Collector] = []  # read at each scrape: see register_collector
# Bounded like the labels: methods × route templates × status classes.
_request_series: dict[tuple[str, str, str], Histogram] = {}


def register_collector(collector: Collector) -> None:
    """Show a collector's metrics at /metrics, read afresh at each scrape (the job bus's queue
    depth, oldest wait and slots in use). Registering the same object again does nothing."""
    if any(known is collector for known in _scraped):
        return
    _scraped.append(collector)
    if not multiprocess_dir():
        REGISTRY.register(collector)


def unregister_collector(collector: Collector) -> None:
    """Stop showing a collector registered with register_collector."""
    if any(known is collector for known in _scraped):
        _scraped[:] = [known for known in _scraped if known is not collector]
        if not multiprocess_dir():
            REGISTRY.unregister(collector)


def multiprocess_dir() -> str | None:
    """The folder shared by worker processes (PROMETHEUS_MULTIPROC_DIR), if set."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Count one request in the latency histogram."""
    key = (method if method in METHODS else "OTHER", route, f"{status // 100}xx")
    series = _request_series.get(key)
    if series is None:  # labels() validates and locks: once per series, not per request
        series = _request_series[key] = REQUEST_SECONDS.labels(*key)
    series.observe(seconds)


def count_run(source: str, status: str) -> None:
    """Count one RunResult received (`source`: run_it, lab or verify)."""
    RUNS.labels(source, status).inc()


def count_verdict(verdict: str) -> None:
    """Count one recorded verification verdict."""
    VERIFY_VERDICTS.labels(verdict).inc()


def route_template(scope: Scope) -> str:
    """The label for the route that answered a request: its path template, never the raw path."""
    # The router leaves the route it chose in the scope; FastAPI's does so for its own routes
    # only, so a mount (/static) is found by its prefix.
    route = scope.get("route") or _mount_of(scope)
    template = getattr(route, "path_format", None)  # a Mount's: /static/{path}
    return template if isinstance(template, str) else UNMATCHED


def _mount_of(scope: Scope) -> Mount | None:
    app = scope.get("app")
    path = scope["path"]
    for route in getattr(app, "routes", ()):
        if isinstance(route, Mount) and path.startswith(route.path + "/"):
            return route
    return None


def exposition(accept: str | None) -> tuple[bytes, str]:
    """Every metric in the format the scraper asks for (OpenMetrics or Prometheus text)."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(_scrape_registry()), content_type


def _scrape_registry() -> CollectorRegistry:
    if not multiprocess_dir():
        return REGISTRY
    # One worker answers the scrape: it sums every worker's files, then adds what is read live.
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for collector in _scraped:
        registry.register(collector)
    return registry


def mark_process_dead(pid: int) -> None:
    """Drop a stopped worker's live gauges from the shared folder (its counters stay summed)."""
    if multiprocess_dir():
        multiprocess.mark_process_dead(pid)


TOKEN_REQUIRED = "/metrics needs the bearer token set in RANKLAB_METRICS_TOKEN."
LOOPBACK_ONLY = (
    "/metrics answers only this host's loopback address unless RANKLAB_METRICS_TOKEN is set."
)


def check_scraper(request: Request, settings: Settings, authorization: str | None) -> None:
    """Let a scrape through or raise: with RANKLAB_METRICS_TOKEN set, its bearer token from
    anywhere; without one, loopback clients only, and never in production (404: no token, no
    metrics endpoint), where a reverse proxy on the same host would make every visitor local."""
    token = settings.metrics_token
    if token:
        offered = (authorization or "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(offered.encode(), token.encode()):
            # HTTPException rather than the error tree: a 401 must name its scheme.
            raise HTTPException(401, TOKEN_REQUIRED, headers={"WWW-Authenticate": "Bearer"})
        return
    if settings.environment == "production":
        raise NotFound()
    host = request.client.host if request.client else ""
    if not _is_loopback(host):
        raise Forbidden(LOOPBACK_ONLY)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


router = APIRouter()


@router.get("/metrics", include_in_schema=False)
def metrics_page(
    request: Request, authorization: Annotated[str | None, Header()] = None
) -> Response:
    """Every metric, for Prometheus (a plain def: a multi-process scrape reads files)."""
    # Not app.deps.SettingsDep: the services that count runs import this module, and app.deps
    # imports them.
    settings: Settings = request.app.state.settings
    check_scraper(request, settings, authorization)
    body, content_type = exposition(request.headers.get("accept"))
    return Response(body, media_type=content_type, headers={"Cache-Control": "no-store"})
