"""Shared fixtures: a migrated throwaway database (SQLite, or PostgreSQL too), an app, a clock."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app import migrations
from app.config import Settings
from app.deps import get_now
from app.main import create_app
from tests.support.postgres import postgres_database_url

FIXTURES = Path(__file__).parent / "fixtures"
TEST_CHALLENGES = FIXTURES / "challenges"


class FakeClock:
    """The one fake clock: tests move time on purpose."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += timedelta(seconds=seconds)


def _sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A freshly migrated database: SQLite file, and PostgreSQL where a server can be had."""
    url = _sqlite_url(tmp_path) if request.param == "sqlite" else postgres_database_url(request)
    migrations.upgrade(url)
    yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A migrated SQLite database only (for tests that need not run twice)."""
    url = _sqlite_url(tmp_path)
    migrations.upgrade(url)
    return url


@pytest.fixture
def clock() -> FakeClock:
    """A clock the test controls."""
    return FakeClock()


def make_settings(database_url: str, **overrides: object) -> Settings:
    """Settings for a test app: test challenges, no executor."""
    values: dict[str, object] = {
        "environment": "test",
        "database_url": database_url,
        "challenges_dir": TEST_CHALLENGES,
        "executor_url": None,
        "secret_key": "test-secret",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def app_factory(clock: FakeClock):
    """Build apps on a given database with the fake clock."""

    def build(database_url: str, executor: object = None, **overrides: object):
        app = create_app(make_settings(database_url, **overrides), executor=executor)  # type: ignore[arg-type]
        app.dependency_overrides[get_now] = clock
        return app

    return build


@pytest.fixture
def client(app_factory, sqlite_url: str) -> Iterator[TestClient]:
    """A browser-like client on SQLite with the fake clock."""
    with TestClient(app_factory(sqlite_url)) as test_client:
        yield test_client


os.environ.setdefault("RANKLAB_ENVIRONMENT", "test")


@pytest.fixture(scope="session")
def executor_url() -> Iterator[str]:
    """A real executor service (warm pool, real ranks) shared by the whole test session."""
    from app.embedded import temporary_executor
    from app.executor_client import HttpExecutorClient

    with temporary_executor() as url:
        sandbox = (HttpExecutorClient(url).health() or {}).get("sandbox", "")
        if not str(sandbox).startswith("unavailable"):
            yield url
            return
    # Where the sandbox cannot be built (not root, no cgroup v1) the executor fails closed; the
    # app's tests run only our own snippets, so they may use the explicit trusted mode.
    print(f"executor sandbox {sandbox}: app tests use a trusted executor", file=sys.stderr)
    with temporary_executor(trusted=True) as url:
        yield url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests last: Playwright's sync API keeps an event loop running in the
    main thread for the session, and asyncio.run() (the executor, TestClient) refuses to start
    inside it."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
