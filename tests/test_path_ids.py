"""Numeric ids in paths: beyond the database's range (PostgreSQL's INTEGER, 2**31 - 1) or below 1,
they are a 404 like any id that names nothing, never a 500 from the driver."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from app.deps import MAX_ROW_ID
from tests.support.accounts import sign_up
from tests.support.learner import Learner

OUT_OF_RANGE = (str(2**31), "9" * 20, str(2**63), str(2**64 + 1), "0", "-1", "-" + "9" * 20)


@pytest.fixture
def admin(app_factory, database_url):
    """A signed-in admin: every route below lets them in, so only the id can be refused."""
    with TestClient(app_factory(database_url), raise_server_exceptions=False) as client:
        person = Learner(client)
        sign_up(person, "root", database_url, Role.ADMIN)
        yield person


@pytest.mark.parametrize("number", OUT_OF_RANGE)
def test_out_of_range_ids_in_every_kind_of_route_are_404(admin, number):
    attempt = admin.start("test-basics")  # a real attempt, for routes with two numbers
    pages = [
        f"/attempts/{number}",
        f"/attempts/{number}/results",
        f"/api/attempts/{number}/q/1",
        f"{attempt}/q/{number}",
        f"/api{attempt}/q/{number}",
        f"{attempt}/q/{number}/run",
        f"/admin/learners/{number}",
    ]
    for path in pages:
        response = admin.get(path, headers={"accept": "application/json"})
        assert response.status_code == 404, (path, response.text)
        assert response.json() == {"detail": "Not found"}
    forms = [
        f"/attempts/{number}/q/1/answer",
        f"{attempt}/q/{number}/hint",
        f"/attempts/{number}/next",
        f"/admin/users/{number}",
    ]
    for path in forms:
        response = admin.post(path, {"choice": "B", "role": "learner"}, follow_redirects=False)
        assert response.status_code == 404, (path, response.text)
    assert "Not found" in admin.get(f"/attempts/{number}").text  # the HTML page says so too


@pytest.mark.parametrize("number", ["abc", "1e3", "1x", "٣", "%201", "12345678901"])
def test_a_hot_page_whose_id_is_not_a_plain_number_is_a_404(admin, number):
    attempt = admin.start("test-basics")  # the question page is a plain route (page_route)
    for path in (f"{attempt}/q/{number}", f"/attempts/{number}/q/1"):
        response = admin.get(path, headers={"accept": "application/json"})
        assert response.status_code == 404, (path, response.text)
        assert response.json() == {"detail": "Not found"}
        page = admin.get(path)  # the error page, with the admin's own header
        assert page.status_code == 404 and 'data-testid="who"' in page.text, path
    assert admin.get(f"{attempt}/q/1").status_code == 200


def test_a_hot_page_sends_a_visitor_who_is_not_signed_in_to_log_in(app_factory, sqlite_url):
    with TestClient(app_factory(sqlite_url)) as client:
        response = client.get("/attempts/1/q/1", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=/attempts/1/q/1"


def test_the_largest_id_the_database_holds_is_an_ordinary_miss(admin):
    response = admin.get(f"/attempts/{MAX_ROW_ID}", headers={"accept": "application/json"})
    assert response.status_code == 404
    assert response.json() == {"detail": "No such attempt."}


def test_a_non_numeric_id_is_still_a_422(admin):
    response = admin.get("/attempts/1e3", headers={"accept": "application/json"})
    assert response.status_code == 422 and "attempt_id" in response.json()["detail"]


def test_every_numeric_path_parameter_is_bounded_to_the_database_range(app_factory, sqlite_url):
    schema = app_factory(sqlite_url).openapi()
    numeric = [
        (path, parameter)
        for path, operations in schema["paths"].items()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "path" and parameter["schema"].get("type") == "integer"
    ]
    assert len(numeric) >= 15
    for path, parameter in numeric:
        bounds = (parameter["schema"].get("minimum"), parameter["schema"].get("maximum"))
        assert bounds == (1, MAX_ROW_ID), f"{path}: {parameter['name']} is not a RowId"


def test_set_and_item_ids_longer_than_their_columns_are_refused_with_a_4xx(admin):
    long_id = "s" * 101
    for response in (
        admin.get(f"/sets/{long_id}"),
        admin.get(f"/admin/sets/{long_id}"),
        admin.get(f"/staff/sets/{long_id}/verify"),
        admin.get(f"/staff/sets/test-basics/items/{long_id}/verify"),
        admin.post(f"/sets/{long_id}/start"),
    ):
        assert response.status_code == 422, response.request.url
        assert "at most 100 characters" in response.text
    assert admin.get(f"/sets/{'s' * 100}").status_code == 404  # as long as a column: unknown
