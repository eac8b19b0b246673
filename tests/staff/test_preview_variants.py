"""The set preview shows a parameterised item as its variants: each one's parameters, its own
title, snippet, key and distractors, never the raw `{name}` placeholders an author wrote."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.accounts.models import Role
from app.challenges import variants
from app.challenges.loader import load_path
from tests.conftest import FIXTURES
from tests.support.accounts import sign_up
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

VARIANTS = FIXTURES / "variants"
SET = next(s for s in load_path(VARIANTS).sets if s.challenge_set.id == "variant-basics")
ITEM = next(item for item in SET.challenge_set.items if item.id == "all-reduce-op")


@pytest.fixture
def instructor(app_factory, sqlite_url):
    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=VARIANTS)
    with TestClient(app) as client:
        person = Learner(client)
        sign_up(person, "variant-teacher", sqlite_url, Role.INSTRUCTOR)
        yield person


def test_the_preview_lists_every_variant_rendered_with_its_parameters(instructor):
    page = instructor.get("/staff/sets/variant-basics/preview").text
    assert "all_reduce with {OP}" not in page and "{result}" not in page
    for variant in variants.variants_of(ITEM):
        shown = variants.render(ITEM, variant.key)
        assert variant.label in page  # "nproc=3, OP=MAX"
        assert shown.title in page  # "all_reduce with MAX"
    assert page.count('data-testid="preview-variant"') >= len(variants.variants_of(ITEM))
