"""A visitor sent to log in comes back to the page they asked for, query string and all: a class's
join link (`/join?code=…`) keeps its code through **Start as guest**."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tests.support.learner import Learner


@pytest.fixture
def visitor(app_factory, sqlite_url):
    with TestClient(app_factory(sqlite_url)) as client:
        yield Learner(client)


def test_a_join_link_keeps_its_code_through_login_and_start_as_guest(visitor):
    asked = visitor.get("/join?code=AB12-CD34", follow_redirects=False)
    assert asked.status_code == 303
    login = visitor.get(asked.headers["location"]).text
    hidden = re.search(r'<input type="hidden" name="next" value="([^"]*)">', login)
    assert hidden and hidden[1] == "/join?code=AB12-CD34"
    back = visitor.post("/guest", {"next": hidden[1]}, follow_redirects=False)
    assert back.headers["location"] == "/join?code=AB12-CD34"
    assert 'value="AB12-CD34"' in visitor.get(back.headers["location"]).text


def test_a_path_without_a_query_is_sent_as_it_was(visitor):
    asked = visitor.get("/cards", follow_redirects=False)
    assert asked.headers["location"] == "/login?next=/cards"
