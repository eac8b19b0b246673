"""Roles on every staff route: anonymous visitors log in, learners get 403, staff get in."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from app.config import ROOT
from tests.support.accounts import sign_up, user_id
from tests.support.learner import Learner

INSTRUCTOR_PAGES = [
    "/staff/content",
    "/staff/sets/test-basics/preview",
    "/staff/sets/test-runs/verify",
    "/staff/sets/test-runs/items/all-reduce/verify",
    "/staff/topics/collectives/preview",
    "/staff/classes",
]
INSTRUCTOR_POSTS = [
    "/staff/content/reload",
    "/staff/content/publish",
    "/staff/sets/test-runs/verify",
    "/staff/sets/test-runs/items/all-reduce/verify",
    "/staff/classes",
]
ADMIN_PAGES = ["/admin/users"]


def create_user_cli(
    database_url: str, username: str, password: str, role: str = "learner"
) -> subprocess.CompletedProcess[str]:
    """Run `ranklab users create` as an admin would, the password on standard input."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "users",
            "create",
            username,
            "--role",
            role,
            "--password-stdin",
        ],
        input=f"{password}\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
    )


def staff_routes(app) -> set[str]:
    return {
        f"{method.upper()} {path}"
        for path, operations in app.openapi()["paths"].items()
        if path.startswith(("/staff", "/admin"))
        for method in operations
    }


@pytest.fixture
def app(app_factory, sqlite_url):
    return app_factory(sqlite_url)


def test_every_staff_route_is_covered_by_these_tests(app):
    known = {
        "GET /staff/content",
        "POST /staff/content/reload",
        "POST /staff/content/publish",
        "GET /staff/sets/{set_id}/preview",
        "POST /staff/sets/{set_id}/verify",
        "GET /staff/sets/{set_id}/verify",
        "POST /staff/sets/{set_id}/items/{item_id}/verify",
        "GET /staff/sets/{set_id}/items/{item_id}/verify",
        # Topics' and labs' preview and Verify: tests/staff/test_verify_topics_labs.py.
        "GET /staff/topics/{topic_id}/preview",
        "POST /staff/topics/{topic_id}/verify",
        "GET /staff/topics/{topic_id}/verify",
        "GET /staff/labs/{lab_id}/preview",
        "POST /staff/labs/{lab_id}/verify",
        "GET /staff/labs/{lab_id}/verify",
        "GET /admin/users",
        "POST /admin/users/{user_id}",
        # Classes: tests/classes/test_classes.py (a learner refused a class's pages there too).
        "GET /staff/classes",
        "POST /staff/classes",
        "GET /staff/classes/{class_id}",
        "POST /staff/classes/{class_id}/roster",
        "POST /staff/classes/{class_id}/assignments",
        "POST /staff/classes/{class_id}/assignments/{assignment_id}/extensions",
        "GET /staff/classes/{class_id}/gradebook.csv",
        # tests/analytics/test_lesson_check_misconceptions.py (a learner of the class refused).
        "GET /staff/classes/{class_id}/misconceptions",
        # Groups and the per-assignment view: tests/classes/test_groups_and_view.py (a learner
        # of the class refused every one of them there).
        "POST /staff/classes/{class_id}/groups",
        "POST /staff/classes/{class_id}/groups/{group_id}/members",
        "POST /staff/classes/{class_id}/assignments/{assignment_id}/group-extensions",
        "GET /staff/classes/{class_id}/assignments/{assignment_id}",
        "GET /staff/classes/{class_id}/assignments/{assignment_id}/view.csv",
        "GET /staff/classes/{class_id}/assignments/{assignment_id}/learners/{user_id}",
        # A class's LMS course (LTI): tests/lti/test_grades.py (a learner refused there too).
        "POST /staff/classes/{class_id}/lti/roster",
        "POST /staff/classes/{class_id}/lti/grades",
    }
    # The dashboards (/admin, /admin/sets, /admin/misconceptions, /admin/learners,
    # /admin/export) are covered by tests/analytics/test_routes.py.
    dashboards = ("/admin/sets", "/admin/misconceptions", "/admin/learners", "/admin/export")
    mine = {
        route
        for route in staff_routes(app)
        if route != "GET /admin" and not route.split(" ", 1)[1].startswith(dashboards)
    }
    assert mine == known


def test_anonymous_visitors_are_sent_to_log_in(app):
    with TestClient(app) as client:
        visitor = Learner(client)
        visitor.get("/")
        for url in INSTRUCTOR_PAGES + ADMIN_PAGES:
            response = client.get(url, follow_redirects=False)
            assert response.status_code == 303 and response.headers["location"].startswith(
                "/login"
            ), url
        for url in [*INSTRUCTOR_POSTS, "/admin/users/1"]:
            assert visitor.post(url, follow_redirects=False).status_code == 303, url


def test_learners_and_guests_are_refused_everywhere(app, sqlite_url):
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        for url in INSTRUCTOR_PAGES + ADMIN_PAGES:
            assert client.get(url).status_code == 403, url
        for url in [*INSTRUCTOR_POSTS, "/admin/users/1"]:
            assert learner.post(url).status_code == 403, url
        sign_up(learner, "plainlearner", sqlite_url)
        assert client.get("/staff/content").status_code == 403
        assert "nav-content" not in learner.get("/").text


def test_instructors_see_staff_pages_but_not_user_management(app, sqlite_url):
    with TestClient(app) as client:
        instructor = Learner(client)
        sign_up(instructor, "teacher", sqlite_url, Role.INSTRUCTOR)
        for url in INSTRUCTOR_PAGES:
            assert client.get(url).status_code == 200, url
        assert client.get("/admin/users").status_code == 403
        assert 'data-testid="nav-content"' in instructor.get("/").text


def test_the_first_admin_comes_from_the_cli_and_promotes_an_instructor(app_factory, tmp_path):
    from app import migrations

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    migrations.upgrade(url)
    created = create_user_cli(url, "root-admin", "s3cret-admin", role="admin")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "created root-admin (admin)"
    with TestClient(app_factory(url)) as client:
        future = Learner(client)
        sign_up(future, "future-teacher", url)
        future.post("/logout")
        admin = future
        admin.post("/login", {"username": "root-admin", "password": "s3cret-admin", "next": "/"})
        page = admin.get("/admin/users").text
        assert "future-teacher" in page and 'data-testid="nav-users"' in page
        target = user_id(url, "future-teacher")
        admin.post(f"/admin/users/{target}", {"role": "instructor", "accommodation": "standard"})
        assert 'value="instructor" selected' in admin.get("/admin/users").text
        admin.post("/logout")
        admin.post(
            "/login", {"username": "future-teacher", "password": "password-123", "next": "/"}
        )
        assert client.get("/staff/content").status_code == 200


def test_the_last_admin_cannot_be_demoted(app, sqlite_url):
    with TestClient(app) as client:
        admin = Learner(client)
        sign_up(admin, "only-admin", sqlite_url, Role.ADMIN)
        me = user_id(sqlite_url, "only-admin")
        response = admin.post(f"/admin/users/{me}", {"role": "learner"})
        assert response.status_code == 409 and "last admin" in response.text


def test_creating_a_user_twice_fails_clearly(tmp_path):
    from app import migrations

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    migrations.upgrade(url)
    first = create_user_cli(url, "dup", "long-enough")
    assert first.returncode == 0, first.stderr
    again = create_user_cli(url, "dup", "long-enough")
    assert again.returncode == 1 and "taken" in again.stderr
