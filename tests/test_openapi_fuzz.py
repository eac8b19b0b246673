"""Every operation in the OpenAPI schema, fuzzed by schemathesis: no input makes the app answer 5xx.

It runs as a visitor with no cookies, and as a signed-in admin who owns attempts (on SQLite and on
PostgreSQL) with a valid CSRF token on every request, so that POST routes are reached past the CSRF
check and staff and admin pages past the role checks. For the admin, each operation with path
parameters is also fuzzed with the path on real rows (a real attempt, set, item, user), so forms
reach real work rather than only 404s. Any 5xx it finds is a bug in the app, not in this test.

Schemathesis's own pytest integration (`from_fixture`) does not run on pytest 9, so the loop over
operations is here: one Hypothesis run per operation and kind of data, each derandomized.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, Case
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from sqlmodel import Session

from app.accounts import service as accounts
from app.accounts.models import Role, User
from app.db import make_engine
from app.deps import CSRF_COOKIE, SESSION_COOKIE
from app.reads import Reader
from tests.conftest import FakeClock
from tests.support.accounts import sign_up, user_id
from tests.support.learner import Learner

EXAMPLES_PER_OPERATION = 20
SECRET_KEY = "test-secret"  # tests.conftest.make_settings

Credentials = Callable[[], tuple[dict[str, str], dict[str, str]]]  # (cookies, headers) per call


def no_cookies() -> tuple[dict[str, str], dict[str, str]]:
    return {}, {}


def seed_an_admin_with_attempts(app, database_url: str) -> dict[str, Any]:
    """Sign up an admin over HTTP who starts two sets and answers a question; return a real id
    for every path parameter in the API."""
    with TestClient(app) as client:
        admin = Learner(client)
        sign_up(admin, "fuzz-admin", database_url, Role.ADMIN)
        admin.start("test-runs")
        attempt = admin.start("test-basics")
        admin.answer(attempt, 1, "B")
        quiz = admin.post("/topics/collectives/quiz", follow_redirects=False)
        assert quiz.status_code == 303, quiz.text
        made = admin.post("/staff/classes", {"title": "Fuzz"}, follow_redirects=False)
        class_url = made.headers["location"]
        dates = {"open_at": "2026-11-22T08:00", "due_at": "2026-11-29T08:00"}
        given = admin.post(f"{class_url}/assignments", {"set_id": "test-basics", **dates})
        assert given.status_code == 200, given.text  # the class page, redirected to
        grouped = admin.post(f"{class_url}/groups", {"name": "Fuzz group"})
        assert grouped.status_code == 200, grouped.text
    return {
        "user_id": user_id(database_url, "fuzz-admin"),
        "set_id": "test-basics",
        "item_id": "world-size",
        "attempt_id": int(attempt.rsplit("/", 1)[1]),
        "number": 1,
        "topic_id": "collectives",  # the sets' topic (no topic.yaml: a topic of their own)
        "deck": "test-basics",
        "card_id": "world-size",  # not a flashcard: a 404 to reach
        "quiz_id": int(quiz.headers["location"].rsplit("/", 1)[1]),
        "lab_id": "no-such-lab",  # the test sets have no lab: 404s to reach
        "step_id": "no-such-step",
        "question_id": "no-such-question",
        "example_id": "no-such-example",  # the test topic has no lesson: 404s to reach
        "run_id": 1,
        "class_id": int(class_url.rsplit("/", 1)[1]),
        "assignment_id": 1,  # the class's one assignment, the database's first
        "group_id": 1,  # the class's one group (no members: the admin is its instructor)
    }


@contextmanager
def signed_in_as(database_url: str, user: int, clock: FakeClock) -> Iterator[Credentials]:
    """The user's session cookie and a valid CSRF cookie and header, for every request.

    Fuzzed requests end sessions (log out; log in, sign up or start as guest replace the
    session), so a new one is opened whenever the last one no longer signs anybody in.
    """
    engine = make_engine(database_url)
    seed = accounts.new_csrf_seed()
    headers = {"X-CSRF-Token": accounts.csrf_token(SECRET_KEY, seed)}
    token: str | None = None

    def credentials() -> tuple[dict[str, str], dict[str, str]]:
        nonlocal token
        with Reader(engine) as reader:
            signed_in = accounts.user_for_token(reader, token, clock())
        if signed_in is None:
            with Session(engine) as session:
                person = session.get(User, user)
                assert person is not None
                token = accounts.open_session(session, person, clock(), days=1)
        return {SESSION_COOKIE: token, CSRF_COOKIE: seed}, headers

    try:
        yield credentials
    finally:
        engine.dispose()


def can_be_invalid(operation: APIOperation) -> bool:
    """Whether any input of the operation can be invalid: a body, a query parameter, a typed or
    constrained path parameter (any text is a valid set id: negative data cannot exist)."""
    free_text = {"type": "string", "title": None}
    return bool(operation.body) or any(
        parameter.location != "path"
        or {**parameter.definition.get("schema", {}), "title": None} != free_text
        for parameter in operation.iter_parameters()
    )


def fuzz(
    operation: APIOperation, mode: GenerationMode, credentials: Credentials, **fixed: Any
) -> None:
    """Send the operation generated requests of one mode; raise on the first 5xx (shrunk)."""

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,  # the same examples every run: a failure here is never a fluke
        database=None,  # nothing written to .hypothesis/ in the checkout
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(mode, path_parameters=fixed or None))
    def each(case: Case) -> None:
        cookies, headers = credentials()
        case.call_and_validate(cookies=cookies, headers=headers, checks=[not_a_server_error])

    each()


def fuzz_every_operation(app, credentials: Credentials, real_ids: dict[str, Any]) -> None:
    """Fuzz each operation in the app's schema; fail listing every one that answered 5xx."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30  # the whole API, not an empty or half-loaded schema
    problems = []
    for operation in operations:
        passes: list[tuple[GenerationMode, dict[str, Any]]] = [(GenerationMode.POSITIVE, {})]
        if can_be_invalid(operation):
            passes.append((GenerationMode.NEGATIVE, {}))
        names = [parameter.name for parameter in operation.path_parameters]
        if names and real_ids:
            passes.append((GenerationMode.POSITIVE, {name: real_ids[name] for name in names}))
        for mode, fixed in passes:
            try:
                fuzz(operation, mode, credentials, **fixed)
            except Unsatisfiable:
                continue  # schemathesis found no invalid value to send after all
            except Exception as error:  # a 5xx, or an exception the app let escape
                problems.append(f"{operation.label} ({mode.value}, path {fixed}): {error}")
    assert not problems, "\n\n".join(problems)


@pytest.fixture
def fuzzed_app(app_factory):
    """Build the app under fuzzing; close its database connections afterwards (schemathesis
    starts the app's lifespan but never ends it)."""
    built = []

    def build(database_url: str):
        built.append(app_factory(database_url))
        return built[-1]

    yield build
    for app in built:
        app.state.engine.dispose()


def test_a_visitor_without_cookies_never_gets_a_server_error(fuzzed_app, sqlite_url):
    fuzz_every_operation(fuzzed_app(sqlite_url), no_cookies, real_ids={})


def test_a_signed_in_admin_never_gets_a_server_error(fuzzed_app, database_url, clock):
    app = fuzzed_app(database_url)
    real_ids = seed_an_admin_with_attempts(app, database_url)
    with signed_in_as(database_url, real_ids["user_id"], clock) as credentials:
        cookies, headers = credentials()
        with TestClient(app, cookies=cookies) as client:  # past the CSRF and role checks
            reload = client.post("/staff/content/reload", headers=headers)
            assert reload.status_code == 200, reload.text
        fuzz_every_operation(app, credentials, real_ids)


def test_text_holding_nul_names_nothing(fuzzed_app, database_url, clock):
    """PostgreSQL text cannot hold NUL: a NUL in a log-in name (found by the fuzzing above) or in
    a set id reached a query and answered 500. They name nothing: a wrong log-in, a 404."""
    app = fuzzed_app(database_url)
    real_ids = seed_an_admin_with_attempts(app, database_url)
    with signed_in_as(database_url, real_ids["user_id"], clock) as credentials:
        cookies, headers = credentials()
        with TestClient(app, cookies=cookies) as client:
            assert client.get("/admin/sets/a%00b").status_code == 404
            login = {"username": "fuzz-admin\x00", "password": "password-123"}
            assert client.post("/login", data=login, headers=headers).status_code == 400
