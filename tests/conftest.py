"""Shared fixtures: a migrated throwaway database (SQLite, or PostgreSQL too), an app, a clock,
and one warm executor for the session (tests/executor and tests/parity share it)."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fastapi.testclient import TestClient

from app import migrations
from app.config import Settings
from app.deps import get_now
from app.main import create_app
from tests.support import postgres
from tests.support.executor import CANARY
from tests.support.learner import Learner

if TYPE_CHECKING:
    from executor.runner import Executor

# Put a secret in the environment the executor is started from: no rank may ever see it.
os.environ.setdefault("RANKLAB_TEST_SECRET", CANARY)
# Settings built without a secret key (the defaults' tests, the CLI's) make one for the install:
# in a folder of this run's, not in the checkout's var/.
if "RANKLAB_STATE_DIR" not in os.environ:
    os.environ["RANKLAB_STATE_DIR"] = tempfile.mkdtemp(prefix="ranklab-test-state-")
    atexit.register(shutil.rmtree, os.environ["RANKLAB_STATE_DIR"], ignore_errors=True)

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


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated once per session; each test gets a copy of it."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    migrations.upgrade(_sqlite_url(path))
    # WAL mode: committed pages may still sit in template.db-wal. Fold them into the main file
    # (Alembic's engine is disposed, so nothing holds the file open) so one copied file is whole.
    with closing(sqlite3.connect(path)) as connection:
        busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    wal = path.with_name(path.name + "-wal")
    if busy or (wal.exists() and wal.stat().st_size):
        raise RuntimeError(f"could not checkpoint the template database {path}")
    return path


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """One PostgreSQL database migrated once per session: tests' databases are copies of it."""
    with postgres.migrated_template(migrations.upgrade) as name:
        yield name


def _sqlite_copy(template: Path, folder: Path) -> str:
    copy = folder / "test.db"
    shutil.copy(template, copy)
    return _sqlite_url(copy)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated database of this test's own: SQLite, and PostgreSQL where a server can be had.

    A copy of the session's migrated template, so Alembic runs once per session, not per test;
    tests/test_migrations.py runs the migrations themselves from an empty database.
    """
    if request.param == "sqlite":
        return _sqlite_copy(request.getfixturevalue("sqlite_template"), tmp_path)
    template = request.getfixturevalue("postgres_template")
    return postgres.postgres_database_url(request, template=template)


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest, postgres_template: str) -> str:
    """A migrated PostgreSQL database of this test's own (for tests about PostgreSQL only)."""
    return postgres.postgres_database_url(request, template=postgres_template)


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    """A migrated SQLite database only (for tests that need not run twice)."""
    return _sqlite_copy(sqlite_template, tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no tables at all, for tests that run the migrations themselves."""
    if request.param == "sqlite":
        return _sqlite_url(tmp_path / "empty.db")
    return postgres.postgres_database_url(request)


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
        "content_gate": "valid",  # the fixtures have no proofs; gate tests ask for "proven"
        "lti_send_interval_s": 0,  # no background LTI score rounds (and their queries) unasked
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


@pytest.fixture
def learner(app_factory, database_url):
    """A guest who has started, in a browser-like client (SQLite and PostgreSQL); modules that
    need another kind of learner define their own."""
    with TestClient(app_factory(database_url)) as client:
        person = Learner(client)
        person.start_as_guest()
        yield person


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


@pytest.fixture(scope="session")
def secret_dir() -> Iterator[Path]:
    """A world-readable directory holding the canary: only the sandbox's mounts can hide it."""
    directory = Path(tempfile.mkdtemp(prefix="ranklab-secrets-", dir="/var/tmp"))
    directory.chmod(0o755)
    (directory / "secret.txt").write_text(CANARY)
    (directory / "secret.txt").chmod(0o644)
    yield directory
    shutil.rmtree(directory)


@pytest.fixture(scope="session")
def executor(secret_dir: Path) -> Iterator[Executor]:
    """Start the sandboxed warm pool once per session."""
    pytest.importorskip("torch")
    from executor.runner import Executor
    from executor.settings import ExecutorSettings

    # The secret directory is world-readable and not on the sandbox's allow-list: ranks must
    # not see it.
    settings = ExecutorSettings(max_concurrent_runs=2, queue_limit=8)
    runner = Executor(settings)
    runner.pool.start()
    problem = runner.info.get("sandbox_error")
    if problem:
        # Where this machine cannot sandbox (not root, no cgroup v1), the product refuses
        # untrusted code (tested in test_sandbox); run semantics are still tested, trusted.
        runner.close()
        runner = Executor(settings.model_copy(update={"trusted": True}))
        runner.pool.start()
        runner.pool.info = {**(runner.pool.info or {}), "sandbox_error": problem}
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def sandboxed(executor: Executor) -> Executor:
    """The warm executor, or a skip where this machine cannot sandbox (not root, no cgroups)."""
    problem = executor.info.get("sandbox_error")
    if problem:
        pytest.skip(f"sandbox unavailable here: {problem}")
    return executor


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the browser tests last: Playwright's sync API keeps an event loop running in the
    main thread for the session, and asyncio.run() (the executor, TestClient) refuses to start
    inside it."""
    items.sort(key=_uses_the_browser)


def _uses_the_browser(item: pytest.Item) -> bool:
    # The marker, or the folder: a browser test whose module forgot `pytestmark` would otherwise
    # start Playwright mid-suite and fail every asyncio.run() after it.
    return item.get_closest_marker("browser") is not None or item.path.parent.name == "browser"
