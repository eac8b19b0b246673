"""A tool (RankLab on loopback, fake clock) and a simulated LMS (tests.support.lti_platform)
registered with it by `ranklab lti add-platform`; a class its instructor linked to a course."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from app import cli
from app.accounts.models import Role
from tests.classes.test_classes import assign, create_class
from tests.support.accounts import sign_up
from tests.support.learner import Learner
from tests.support.live import serving
from tests.support.lti_platform import INSTRUCTOR, Link, Person, Platform, running_platform

FORM_FIELD = re.compile(r'name="(id_token|state)" value="([^"]*)"')


@dataclass
class World:
    """The tool, the LMS and a linked class with test-basics assigned."""

    tool: str
    platform: Platform
    database_url: str
    app: object
    class_url: str
    teacher: Learner

    def browser(self) -> httpx.Client:
        return httpx.Client(base_url=self.tool, timeout=30)

    def begin(self, client: httpx.Client, login: str, link: str) -> dict[str, str]:
        """A person clicks the link: the LMS sends them to our login initiation, which sends
        them to the LMS's auth endpoint; return that request's parameters (state, nonce...)."""
        to_login = client.get(self.platform.launch_url(login, link))
        assert to_login.status_code == 302, to_login.text
        to_auth = client.get(to_login.headers["location"])
        assert to_auth.status_code == 302, to_auth.text
        return {k: v[0] for k, v in parse_qs(urlsplit(to_auth.headers["location"]).query).items()}

    def launch(self, client: httpx.Client, login: str, link: str) -> httpx.Response:
        """The whole launch as a browser runs it (the auth page's form submits itself)."""
        to_login = client.get(self.platform.launch_url(login, link), follow_redirects=True)
        fields = dict(FORM_FIELD.findall(to_login.text))
        assert set(fields) == {"id_token", "state"}, to_login.text
        return client.post("/lti/launch", data=fields, follow_redirects=True)


@pytest.fixture
def world(app_factory, sqlite_url, clock, monkeypatch) -> Iterator[World]:
    """The world on SQLite."""
    yield from _world(app_factory, sqlite_url, clock, monkeypatch)


@pytest.fixture
def any_world(app_factory, database_url, clock, monkeypatch) -> Iterator[World]:
    """The world on SQLite, and on PostgreSQL where a server can be had."""
    yield from _world(app_factory, database_url, clock, monkeypatch)


@pytest.fixture
def sending_world(app_factory, sqlite_url, clock, monkeypatch) -> Iterator[World]:
    """The world on SQLite, its tool sending owed scores by itself every 0.1 s."""
    yield from _world(app_factory, sqlite_url, clock, monkeypatch, interval_s=0.1)


def _world(app_factory, database_url, clock, monkeypatch, interval_s=0.0) -> Iterator[World]:
    app = app_factory(database_url, lti_send_interval_s=interval_s)
    with running_platform(clock) as platform, serving(app) as tool:
        platform.connect(tool)
        monkeypatch.setenv("DATABASE_URL", database_url)
        registration = platform.registration()
        assert cli.main([
            "lti", "add-platform", "--issuer", registration["issuer"],
            "--client-id", registration["client_id"],
            "--deployment-id", registration["deployment_ids"][0],
            "--login-url", registration["auth_login_url"],
            "--token-url", registration["auth_token_url"],
            "--jwks-url", registration["jwks_url"],
        ]) == 0  # fmt: skip
        with httpx.Client(base_url=tool, timeout=30, follow_redirects=True) as staff_browser:
            teacher = Learner(staff_browser)  # type: ignore[arg-type]
            sign_up(teacher, "teach", database_url, Role.INSTRUCTOR)
            class_url, code = create_class(teacher)
            assign(teacher, class_url)
            platform.add_course("course-7", "CS 249 (LMS)")
            platform.links["basics"] = Link(
                "course-7", "Basics quiz", {"set": "test-basics", "class": code}
            )
            platform.links["by-uri"] = Link("course-7", "Basics", target_path="/sets/test-basics")
            platform.enrol("course-7", "lena", Person("sub-lena", "Lena Lms", "lena@uni.example"))
            platform.enrol(
                "course-7", "prof", Person("sub-prof", "Pat Prof", "pat@uni.example", [INSTRUCTOR])
            )
            yield World(tool, platform, database_url, app, class_url, teacher)
