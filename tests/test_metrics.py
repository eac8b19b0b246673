"""Prometheus metrics at /metrics: requests by route template, runs by status, verify verdicts;
who may scrape; several worker processes summed into one answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from sqlmodel import Session

from app import metrics
from app.challenges.loader import load_path
from app.db import make_engine, write_lock
from app.verification import records, service
from app.verification.rules import ItemReport, Observation, Verdict
from executor.contract import RunResult
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.fake_executor import FakeExecutor, canned_result
from tests.support.learner import Learner

LOOPBACK = ("127.0.0.1", 50000)
LATENCY = "ranklab_http_request_duration_seconds_count"
DAY = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def sample(name: str, **labels: str) -> float:
    """A sample's value in this process's registry (0 when it has no series yet)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def scraped(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Parse a /metrics answer into {(sample name, sorted labels): value}."""
    return {
        (item.name, tuple(sorted(item.labels.items()))): item.value
        for family in text_string_to_metric_families(text)
        for item in family.samples
    }


def failed(result: RunResult) -> RunResult:
    """The same run, with status `error`."""
    return RunResult.model_validate({**result.model_dump(mode="json"), "status": "error"})


class FailingExecutor(FakeExecutor):
    """Streams each rank's output, then a RunResult whose status is `error`."""

    def stream(self, request):  # type: ignore[no-untyped-def]
        for event in super().stream(request):
            yield failed(event) if isinstance(event, RunResult) else event


@pytest.fixture
def local(app_factory, sqlite_url) -> Iterator[TestClient]:
    """A client on this host's loopback address (a test app has no metrics token)."""
    with TestClient(app_factory(sqlite_url), client=LOOPBACK) as client:
        yield client


def test_a_request_is_counted_under_its_route_template_not_its_path(local):
    labels = {"method": "GET", "route": "/labs/{lab_id}", "status_class": "4xx"}
    before = sample(LATENCY, **labels)
    assert local.get("/labs/no-such-lab-4711").status_code == 404
    assert sample(LATENCY, **labels) == before + 1
    text = local.get("/metrics").text
    assert 'route="/labs/{lab_id}"' in text
    assert "no-such-lab-4711" not in text  # the raw path never becomes a label


def test_the_plain_routes_are_counted_under_their_route_templates_too(local):
    # The class flow's pages and forms are plain Starlette routes (app.deps.page_route,
    # form_route): they are labelled by their templates as FastAPI's routes are.
    learner = Learner(local)
    learner.start_as_guest()
    templates = [
        ("POST", "/sets/{set_id}/start", "3xx"),
        ("GET", "/attempts/{attempt_id}", "3xx"),
        ("GET", "/attempts/{attempt_id}/q/{number}", "2xx"),
        ("POST", "/attempts/{attempt_id}/q/{number}/answer", "3xx"),
    ]
    keys = [{"method": m, "route": r, "status_class": c} for m, r, c in templates]
    before = [sample(LATENCY, **labels) for labels in keys]
    attempt = learner.start("test-basics")
    learner.get(attempt)  # Resume's redirect, followed to the question
    assert learner.answer(attempt, 1, "B").status_code == 303
    assert [sample(LATENCY, **labels) for labels in keys] == [b + 1 for b in before]


def test_unknown_paths_and_static_files_share_one_series_each(local):
    unmatched = {"method": "GET", "route": metrics.UNMATCHED, "status_class": "4xx"}
    static = {"method": "GET", "route": "/static/{path}", "status_class": "2xx"}
    before = sample(LATENCY, **unmatched), sample(LATENCY, **static)
    for path in ("/nothing-here-1", "/nothing-here-2"):
        assert local.get(path).status_code == 404
    assert local.get("/static/js/run.js").status_code == 200
    assert (sample(LATENCY, **unmatched), sample(LATENCY, **static)) == (
        before[0] + 2,
        before[1] + 1,
    )


def test_a_method_outside_the_standard_few_is_labelled_other(local):
    labels = {"method": "OTHER", "route": metrics.UNMATCHED, "status_class": "4xx"}
    before = sample(LATENCY, **labels)
    local.request("BREW", "/no-such-pot")
    assert sample(LATENCY, **labels) == before + 1


@pytest.mark.parametrize(
    ("executor", "status"), [(FakeExecutor(), "ok"), (FailingExecutor(), "error")]
)
def test_each_run_result_the_app_receives_is_counted_by_status(
    app_factory, sqlite_url, executor, status
):
    before = sample("ranklab_runs_total", source="run_it", status=status)
    with TestClient(app_factory(sqlite_url, executor=executor), client=LOOPBACK) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        streamed = learner.get(f"{attempt}/q/1/run").text
        assert f'"status": "{status}"' in streamed
        text = client.get("/metrics").text
    assert sample("ranklab_runs_total", source="run_it", status=status) == before + 1
    key = ("ranklab_runs_total", (("source", "run_it"), ("status", status)))
    assert scraped(text)[key] == before + 1


def test_a_failed_run_is_not_counted_as_ok(app_factory, sqlite_url):
    ok_before = sample("ranklab_runs_total", source="run_it", status="ok")
    with TestClient(app_factory(sqlite_url, executor=FailingExecutor())) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-runs")
        learner.answer(attempt, 1, "A")
        learner.get(f"{attempt}/q/1/run")
    assert sample("ranklab_runs_total", source="run_it", status="ok") == ok_before


class Sandboxed(FakeExecutor):
    """A fake executor whose health says the sandbox is on, as labs require."""

    def health(self):  # type: ignore[no-untyped-def]
        return {"status": "ok", "sandbox": "on"}


def test_a_lab_run_is_counted_as_lab(app_factory, sqlite_url, tmp_path):
    content = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "labs" / "hello", content / "hello")
    before = sample("ranklab_runs_total", source="lab", status="ok")
    app = app_factory(sqlite_url, executor=Sandboxed(), challenges_dir=content)
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        step = "/labs/hello-ranks/steps/print-rank"
        learner.get(step)
        started = client.post(
            f"{step}/runs",
            data={"code": "print(1)\n", "nproc": "2", "csrf_token": learner.csrf},
            headers={"Accept": "application/json"},
        )
        assert started.status_code == 201
        assert "event: end" in client.get(started.json()["events"]).text  # the run is over
    assert sample("ranklab_runs_total", source="lab", status="ok") == before + 1


def test_verification_runs_are_counted_as_verify():
    loaded = load_path(TEST_CHALLENGES / "runs").sets[0]
    item = loaded.challenge_set.items[0]
    before = sample("ranklab_runs_total", source="verify", status="error")
    observation = service.observe(FailingExecutor(), loaded.code[item.id], item)
    assert observation.result.status.value == "error"
    assert sample("ranklab_runs_total", source="verify", status="error") == before + 1


def test_recorded_verdicts_are_counted_by_verdict(sqlite_url):
    before = sample("ranklab_verify_verdicts_total", verdict="fail")
    report = ItemReport("all-reduce", Verdict.FAIL, observations=[Observation(canned_result())])
    engine = make_engine(sqlite_url)
    try:
        with Session(engine) as session:
            records.save(session, "test-runs", "h1", report, 420, DAY)
    finally:
        engine.dispose()
    assert sample("ranklab_verify_verdicts_total", verdict="fail") == before + 1


def test_without_a_token_only_loopback_clients_may_scrape(app_factory, sqlite_url):
    app = app_factory(sqlite_url)
    with TestClient(app, client=("203.0.113.9", 50000)) as remote:
        refused = remote.get("/metrics", headers={"Accept": "application/json"})
    assert refused.status_code == 403 and "RANKLAB_METRICS_TOKEN" in refused.json()["detail"]
    with TestClient(app, client=("::1", 50000)) as local:
        answered = local.get("/metrics")
    assert answered.status_code == 200
    assert answered.headers["content-type"].startswith("text/plain")
    assert "ranklab_http_request_duration_seconds_bucket" in answered.text


def test_with_a_token_every_scrape_needs_it_even_from_loopback(app_factory, sqlite_url):
    app = app_factory(sqlite_url, metrics_token="scrape-secret")
    with TestClient(app, client=LOOPBACK) as client:
        missing = client.get("/metrics")
        wrong = client.get("/metrics", headers={"Authorization": "Bearer not-it"})
        right = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
    assert missing.status_code == 401 and wrong.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and "ranklab_runs_total" in right.text


def test_in_production_there_is_no_metrics_endpoint_without_a_token(app_factory, sqlite_url):
    app = app_factory(sqlite_url, environment="production")
    with TestClient(app, client=LOOPBACK) as client:
        assert client.get("/metrics").status_code == 404
    app = app_factory(sqlite_url, environment="production", metrics_token="scrape-secret")
    with TestClient(app, client=("203.0.113.9", 50000)) as client:
        headers = {"Authorization": "Bearer scrape-secret"}
        assert client.get("/metrics", headers=headers).status_code == 200


def test_the_metrics_answer_keeps_the_security_headers_and_needs_no_csrf(local):
    response = local.get("/metrics")
    assert response.status_code == 200
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" in response.headers
    assert response.headers["cache-control"] == "no-store"
    assert "/metrics" not in local.get("/openapi.json").text  # not part of the API


def test_a_scraper_asking_for_openmetrics_gets_it(local):
    response = local.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


class QueueDepth:
    """A collector read at scrape time, as the job bus's queue depth is."""

    def __init__(self) -> None:
        self.depth = 3

    def collect(self):  # type: ignore[no-untyped-def]
        family = GaugeMetricFamily("ranklab_test_queue_depth", "Runs waiting.", labels=["pool"])
        family.add_metric(["cpu"], self.depth)
        yield family


def test_a_registered_collector_is_read_at_each_scrape(local):
    depth = QueueDepth()
    metrics.register_collector(depth)
    metrics.register_collector(depth)  # again: nothing changes
    try:
        assert 'ranklab_test_queue_depth{pool="cpu"} 3.0' in local.get("/metrics").text
        depth.depth = 5
        assert 'ranklab_test_queue_depth{pool="cpu"} 5.0' in local.get("/metrics").text
    finally:
        metrics.unregister_collector(depth)
    assert "ranklab_test_queue_depth" not in local.get("/metrics").text


COUNT_ONE_LAB_RUN = "from app import metrics; metrics.count_run('lab', 'timeout')"


def test_with_a_multiprocess_folder_a_scrape_sums_every_worker(tmp_path, monkeypatch):
    """Two worker processes count a run each; a scrape in a third sees both."""
    environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _worker in range(2):
        subprocess.run(
            [sys.executable, "-c", COUNT_ONE_LAB_RUN], env=environment, check=True, timeout=60
        )
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    body, content_type = metrics.exposition(None)
    assert content_type.startswith("text/plain")
    key = ("ranklab_runs_total", (("source", "lab"), ("status", "timeout")))
    assert scraped(body.decode())[key] == 2.0


def test_the_write_queue_reports_its_waits_and_refusals(app_factory, sqlite_url):
    waited = "ranklab_write_wait_seconds_count"
    with TestClient(app_factory(sqlite_url, write_wait_s=0.2), client=LOOPBACK) as client:
        learner = Learner(client)
        before = scraped(client.get("/metrics").text)
        learner.start_as_guest()
        attempt = learner.start("test-basics")  # a write through the queue, taken at once
        lock = write_lock(client.app.state.engine)  # type: ignore[attr-defined]
        assert lock is not None and lock.acquire(timeout=5)  # another worker writes, long
        try:
            refused = learner.next(attempt)  # waits for the same lock
        finally:
            lock.release()
        assert refused.status_code == 503
        after = scraped(client.get("/metrics").text)
    refusals = ("ranklab_writes_refused_total", ())
    assert after[refusals] == before.get(refusals, 0.0) + 1
    assert after[(waited, ())] >= before.get((waited, ()), 0.0) + 1  # the start's write
    assert after[("ranklab_writes_waiting", ())] == 0  # the refused one left the queue
