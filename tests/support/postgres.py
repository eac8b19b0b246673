"""A throwaway PostgreSQL for tests: a given server, or a private one from Debian's binaries.

RANKLAB_TEST_POSTGRES_URL names an existing server (a fresh database is created per test).
Otherwise a cluster is initialised in a temporary folder and started on a Unix socket; as root
it runs as the `postgres` user, because PostgreSQL refuses to run as root.
Where neither is possible the PostgreSQL tests are skipped, except under CI=true, where they fail.

Each session migrates one template database; each test's database is `CREATE DATABASE ...
TEMPLATE` of it, a copy the server makes of the template's files: a database of the test's own,
as after a fresh migration, without running Alembic per test.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

_server_url: str | None = None
_server_error: str | None = None


def _bindir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if Path(candidate, "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _as_postgres(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def _start_private_server() -> str:
    bindir = _bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL binaries (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="ranklab-pg-"))
    data, sockets = base / "data", base / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
    subprocess.run(
        _as_postgres(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"]
        ),
        check=True,
        capture_output=True,
    )
    options = f"-k {sockets} -c listen_addresses='' -c fsync=off -c max_connections=100"
    subprocess.run(
        _as_postgres(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-l",
                str(base / "log"),
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )

    def stop() -> None:
        subprocess.run(
            _as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)

    atexit.register(stop)
    return f"postgresql+psycopg://postgres@/postgres?host={sockets}"


def _server() -> str:
    global _server_url, _server_error
    if _server_url is None and _server_error is None:
        given = os.environ.get("RANKLAB_TEST_POSTGRES_URL")
        try:
            _server_url = (
                given.replace("postgresql://", "postgresql+psycopg://", 1)
                if given
                else _start_private_server()
            )
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", b"") or b""
            _server_error = f"{error} {detail.decode(errors='replace')}".strip()
    if _server_url is None:
        raise RuntimeError(_server_error or "no PostgreSQL")
    return _server_url


def _server_or_skip() -> str:
    try:
        return _server()
    except RuntimeError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI: {error}")
        pytest.skip(f"PostgreSQL unavailable: {error}")


def _admin(server: str, statement: str) -> None:
    # CREATE/DROP DATABASE cannot run in a transaction; the engine is closed at once, because a
    # database is only copyable as a template while nobody is connected to it.
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def _database_url(server: str, name: str) -> str:
    base, _, query = server.partition("?")
    database_url = base.rsplit("/", 1)[0] + "/" + name
    return database_url + (f"?{query}" if query else "")


def _fresh_name(prefix: str) -> str:
    # Unique per call: several sessions may share one RANKLAB_TEST_POSTGRES_URL server.
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@contextmanager
def migrated_template(migrate: Callable[[str], None]) -> Iterator[str]:
    """Create a database, migrate it once, and yield its name for copies (dropped afterwards)."""
    server = _server_or_skip()
    name = _fresh_name("ranklab_template")
    _admin(server, f'CREATE DATABASE "{name}"')
    try:
        migrate(_database_url(server, name))  # Alembic disposes its engine: no one stays connected
        yield name
    finally:
        _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_database_url(request: pytest.FixtureRequest, template: str | None = None) -> str:
    """Create a fresh database on the test server, a copy of `template` if given (dropped after)."""
    server = _server_or_skip()
    name = _fresh_name("ranklab_test")
    copy = f' TEMPLATE "{template}"' if template else ""
    _admin(server, f'CREATE DATABASE "{name}"{copy}')
    request.addfinalizer(lambda: _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    return _database_url(server, name)


def end_other_connections(url: str) -> None:
    """End every other connection to this database, as a server restart would.

    Each backend is waited for (up to 10 s): without the time-out `pg_terminate_backend` returns
    once the signal is sent, and under load a backend could still answer the next read and
    then die in the middle of the write that follows, which is another test's case."""
    from sqlalchemy.pool import NullPool

    ender = create_engine(url, poolclass=NullPool)
    with ender.connect() as connection:
        connection.execute(
            text(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    ender.dispose()


def other_connections(url: str, waiting_for_a_lock: bool = False) -> int:
    """Connections open to this database other than the one asking (or those of them that
    wait for a lock: a row another transaction holds)."""
    from sqlalchemy.pool import NullPool

    checker = create_engine(url, poolclass=NullPool)
    locked = " AND wait_event_type = 'Lock'" if waiting_for_a_lock else ""
    with checker.connect() as connection:
        count = connection.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity"
            f" WHERE datname = current_database() AND pid <> pg_backend_pid(){locked}"
        ).scalar_one()
    checker.dispose()
    return int(count)
