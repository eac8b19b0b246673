"""Due dates on the learner's own pages: home's path, the set and topic pages and progress
show "due Friday 17:00" in the learner's zone, then overdue, then closed."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.classes.test_classes import assign, create_class, join
from tests.support.accounts import sign_up
from tests.support.learner import Learner

PAGES = ("/", "/sets/test-basics", "/topics/collectives", "/me/progress")


@pytest.fixture
def pair(app_factory, database_url):
    app = app_factory(database_url)
    with TestClient(app) as one, TestClient(app) as two:
        teacher, ana = Learner(one), Learner(two)
        sign_up(teacher, "teach", database_url, Role.INSTRUCTOR)
        sign_up(ana, "ana", database_url)
        yield teacher, ana


def due_badges(person: Learner, path: str) -> list[tuple[str, str]]:
    """The (state, words) of each due date the page shows."""
    page = person.get(path).text
    found = re.findall(r'data-testid="due-date" data-state="(\w+)">.*?</svg> ([^<]+)</span>', page)
    return [(state, words.strip()) for state, words in found]


def test_a_learners_pages_show_the_due_date_then_overdue_then_closed(pair, clock):
    teacher, ana = pair
    for path in PAGES:
        assert due_badges(ana, path) == []  # in no class: nothing due
    url, code = create_class(teacher)
    assign(teacher, url, close_at="2026-11-29T17:00")  # due Friday 17:00 UTC
    join(ana, code)
    for path in PAGES:
        assert due_badges(ana, path) == [("due", "due Friday 17:00")], path
    ana.client.cookies.set("tz", "Asia/Tokyo")  # the one clock: the learner's zone
    assert due_badges(ana, "/sets/test-basics") == [("due", "due Saturday 02:00")]
    ana.client.cookies.delete("tz")
    clock.advance(5 * 86400 + 9 * 3600)  # Friday 18:00
    assert due_badges(ana, "/") == [("overdue", "overdue, was due Fri 27 Nov 17:00")]
    clock.advance(2 * 86400)  # Sunday 18:00: closed
    assert due_badges(ana, "/me/progress") == [("closed", "closed, was due Fri 27 Nov 17:00")]


def test_a_topic_assignment_shows_on_the_topic_and_a_sets_own_on_the_set(pair, clock):
    teacher, ana = pair
    url, code = create_class(teacher)
    assign(teacher, url, set_id="topic:collectives", due_at="2026-11-24T12:00")
    assign(teacher, url, set_id="test-runs", due_at="2026-11-26T12:00")
    join(ana, code)
    assert due_badges(ana, "/topics/collectives") == [("due", "due Tuesday 12:00")]
    assert due_badges(ana, "/") == [("due", "due Tuesday 12:00")]  # the topic's own date
    assert due_badges(ana, "/sets/test-runs") == [("due", "due Thursday 12:00")]
    assert due_badges(ana, "/sets/test-basics") == []  # assigned only as part of the topic
