"""Practice, review and the quick quiz show a variant the learner has not seen, pinned for the
page (a reload shows it again); what they show counts as seen, so a timed attempt then draws
another variant, and a question without variants seen in practice does not count for a badge."""

from __future__ import annotations

import re
import shutil

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.attempts.models import ItemAttempt, ItemSighting
from app.challenges import variants
from app.challenges.loader import load_path
from app.db import make_engine
from tests.attempts.test_first_sight import take_test_basics_right
from tests.attempts.test_variants_served import SET, VARIANTS
from tests.support.learner import Learner
from tests.support.options import shown_as

BROADCAST = SET.challenge_set.items[1]  # 3 variants
PRACTICE = "/topics/variants/practice/variant-basics/broadcast-src"
KEY_FIELD = re.compile(r'name="variant" value="([0-9a-f]*)"')


@pytest.fixture
def player(app_factory, database_url):
    with TestClient(app_factory(database_url, challenges_dir=VARIANTS)) as client:
        person = Learner(client)
        person.start_as_guest()
        yield person


def sightings(database_url: str) -> list[ItemSighting]:
    engine = make_engine(database_url)
    with Session(engine) as session:
        found = list(session.exec(select(ItemSighting)))
    engine.dispose()
    return found


def test_practice_pins_a_variant_judges_by_it_and_a_timed_attempt_then_draws_another(
    player, database_url
):
    page = player.get(PRACTICE).text
    key = KEY_FIELD.search(page)[1]  # type: ignore[index]
    shown = variants.render(BROADCAST, key)
    assert shown.title in page
    assert KEY_FIELD.search(player.get(PRACTICE).text)[1] == key  # type: ignore[index]
    right = shown_as(page, shown, "A").value
    answered = player.post(f"{PRACTICE}/answer", {"choice": [right], "variant": key})
    assert "✓ Correct" in answered.text and shown.title in answered.text
    assert [(s.item_id, s.variant_key, s.mode) for s in sightings(database_url)] == [
        ("broadcast-src", key, "practice")
    ]
    attempt = player.start("variant-basics")
    engine = make_engine(database_url)
    with Session(engine) as session:
        rows = session.exec(select(ItemAttempt).where(ItemAttempt.item_id == "broadcast-src"))
        drawn = [row.variant_key for row in rows]
    engine.dispose()
    assert attempt and drawn and drawn[0] != key  # seen in practice: not drawn again


def test_a_variant_that_is_not_offered_is_refused(player):
    assert player.get(f"{PRACTICE}?k=0123456789ab").status_code == 400
    refused = player.post(f"{PRACTICE}/answer", {"choice": ["x"], "variant": "0123456789ab"})
    assert refused.status_code == 400 and "not offered" in refused.text


def test_a_quiz_question_keeps_its_variant_on_reload(player):
    quiz = player.post("/topics/variants/quiz", follow_redirects=False).headers["location"]
    first, again = player.get(quiz).text, player.get(quiz).text
    titles = {
        variants.render(item, variant.key).title
        for item in SET.challenge_set.items
        for variant in variants.variants_of(item)
    }
    shown = [title for title in titles if f">{title}<" in first]
    assert len(shown) == 1 and f">{shown[0]}<" in again


def test_practising_a_question_without_variants_keeps_the_timed_set_from_the_badge(learner, clock):
    learner.get("/topics/collectives/practice/test-basics/world-size")
    results = learner.get(f"{take_test_basics_right(learner, clock)}/results").text
    assert "2 / 2 correct" in results and "Badge earned" not in results
    assert results.count('data-testid="seen-before"') == 1


OWN_ITEM = """\
id: own-variants
title: A topic's own variants
summary: A topic whose own numeric item has parameters.
items:
  - id: mean-of-two
    fact: mean-of-two-ranks
    kind: numeric
    category: Metrics
    difficulty: beginner
    title: The mean of {A} and {B}
    prompt: "Two ranks hold `A = {A}` and `B = {B}`. What is their mean?"
    explanation: "({A} + {B}) / 2 = {mean}"
    code: |
      A = 1.0
      B = 3.0
      print((A + B) / 2)
    params:
      A: [1.0, 5.0]
      B: [3.0]
    derive:
      mean: "(A + B) / 2"
    answer: 2.0
    answer_from: "(A + B) / 2"
"""


@pytest.fixture
def own_topic(tmp_path):
    """The variant fixtures and a topic whose own (never run) item has two variants."""
    content = tmp_path / "challenges"
    shutil.copytree(VARIANTS, content)
    (content / "own").mkdir()
    (content / "own" / "topic.yaml").write_text(OWN_ITEM)
    return content


def test_a_topics_own_item_shows_each_variant_once_and_records_what_it_showed(
    app_factory, database_url, own_topic, clock
):
    # A topic's items run nothing, so no proof holds a variant back even under the gate that
    # asks for proofs: every variant that validates is offered, one not yet shown first.
    app = app_factory(database_url, challenges_dir=own_topic, content_gate="proven")
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        url = "/topics/own-variants/practice/own-variants/mean-of-two"
        first = KEY_FIELD.search(person.get(url).text)[1]  # type: ignore[index]
        clock.advance(5)
        person.post(f"{url}/answer", {"choice": ["0"], "variant": first})
        clock.advance(5)  # the next practice showing: the variant not yet shown
        second_page = person.get(url).text
        second = KEY_FIELD.search(second_page)[1]  # type: ignore[index]
    item = load_path(own_topic).topics[0].topic.items[0]
    assert {first, second} == {v.key for v in variants.variants_of(item)}
    assert variants.render(item, second).title in second_page
    assert sorted((s.set_id, s.variant_key) for s in sightings(database_url)) == sorted(
        [("own-variants", first), ("own-variants", second)]
    )
