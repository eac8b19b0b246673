"""Fixtures shared by the publish-gate tests: each module builds its own `app`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.accounts.models import Role
from tests.support.accounts import sign_up
from tests.support.learner import Learner


@pytest.fixture
def staff(app: FastAPI, database_url: str) -> Iterator[Learner]:
    """An instructor signed in to the module's app."""
    with TestClient(app) as client:
        person = Learner(client)
        sign_up(person, "teacher", database_url, Role.INSTRUCTOR)
        yield person
