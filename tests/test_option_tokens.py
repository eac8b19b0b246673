"""No page tells a learner which option is which by its id (most keys are option "A"): every
learner page and the question API carry only tokens of the showing (app.kinds.order), a posted
token is stored and judged as its option's id, and a token of another showing is refused.

Four places show options: a timed question, a practice question, a quick quiz question and a
lab step's question; each is driven over HTTP as a signed-in guest.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.attempts.models import Submission
from app.challenges.loader import load_path
from app.challenges.schema import ChoiceBase
from app.config import ROOT
from app.db import make_engine
from app.modes.models import ModeAnswer, Quiz
from tests.conftest import FIXTURES, TEST_CHALLENGES
from tests.support.learner import Learner
from tests.support.options import choice_item, shown_as, shown_options

LAB = "practical-6"
LAB_STEP = f"/labs/{LAB}/steps/ranks"


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A timed set, the drill topic (practice and quiz) and a shipped lab with a choice question."""
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES / "basics", target / "basics")
    shutil.copytree(FIXTURES / "modes", target / "modes")
    shutil.copytree(ROOT / "challenges" / "labs" / LAB, target / "labs" / LAB)
    # Its topic's topic.yaml is not copied: here the lab starts a topic of its own.
    with (target / "labs" / LAB / "lab.yaml").open("a") as lab:
        lab.write("own_topic: true\n")
    return target


@pytest.fixture
def client(app_factory, sqlite_url: str, content: Path) -> Iterator[TestClient]:
    with TestClient(app_factory(sqlite_url, challenges_dir=content)) as test_client:
        yield test_client


def guest(client: TestClient) -> Learner:
    """A new learner in their own cookie jar on the same app."""
    person = Learner(TestClient(client.app))
    person.start_as_guest()
    return person


def lab_question() -> ChoiceBase:
    # The whole course: a lab's folder alone lacks the topic.yaml its `topic:` names.
    (loaded,) = [lab for lab in load_path(ROOT / "challenges").labs if lab.lab.id == LAB]
    question = loaded.lab.steps[0].questions[0]
    assert isinstance(question, ChoiceBase)
    return question


def stored(database_url: str, model: type) -> list[tuple[str, bool]]:
    """(answer, correct) of every stored answer of `model`, oldest first."""
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            found = session.exec(select(model).order_by(model.id)).all()  # type: ignore[attr-defined]
            return [(row.answer, row.correct) for row in found]
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Place:
    """A learner page that shows one choice item, and where its answer goes."""

    name: str
    model: type  # where answers given there are stored
    # (learner, database url) -> (page url, answer url), starting what needs starting.
    open: Callable[[Learner, str], tuple[str, str]]
    item: Callable[[], ChoiceBase]


def timed(person: Learner, database_url: str) -> tuple[str, str]:
    attempt = person.start("test-basics")
    return f"{attempt}/q/1", f"{attempt}/q/1/answer"


def practice(person: Learner, database_url: str) -> tuple[str, str]:
    url = "/topics/drill/practice/modes-drill/world-size"
    return url, f"{url}/answer"


def quiz(person: Learner, database_url: str) -> tuple[str, str]:
    before = {quiz_id for quiz_id, _ in quizzes(database_url)}
    person.get("/topics/drill/quiz")
    url = person.post("/topics/drill/quiz", follow_redirects=False).headers["location"]
    ((_, questions),) = [q for q in quizzes(database_url) if q[0] not in before]
    # Each question is [deck, id, its deck's version].
    number = [question[:2] for question in questions].index(["modes-drill", "world-size"]) + 1
    return f"{url}?show={number}", f"{url}/q/{number}/answer"


def quizzes(database_url: str) -> list[tuple[int, list[list[str]]]]:
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            return [(q.id, json.loads(q.questions)) for q in session.exec(select(Quiz))]  # type: ignore[misc]
    finally:
        engine.dispose()


def lab(person: Learner, database_url: str) -> tuple[str, str]:
    return LAB_STEP, f"{LAB_STEP}/questions/{lab_question().id}/answer"


def drill_item() -> ChoiceBase:
    return choice_item(FIXTURES / "modes", "modes-drill", "world-size")


PLACES = [
    Place("timed", Submission, timed, lambda: choice_item(TEST_CHALLENGES, "test-basics")),
    Place("practice", ModeAnswer, practice, drill_item),
    Place("quiz", ModeAnswer, quiz, drill_item),
    Place("lab", ModeAnswer, lab, lab_question),
]


def no_option_id_in(html: str, item: ChoiceBase) -> None:
    assert "data-option" not in html
    for option in item.options:
        assert f'value="{option.id}"' not in html, option.id
    values = [label.value for label in shown_options(html)]
    assert len(values) >= len(item.options) and len(set(values)) == len(values)


@pytest.mark.parametrize("place", PLACES, ids=lambda place: place.name)
def test_the_page_carries_tokens_and_a_posted_token_is_stored_as_the_option_id(
    place: Place, client: TestClient, sqlite_url: str
):
    person = guest(client)
    item = place.item()
    page_url, answer_url = place.open(person, sqlite_url)
    html = person.get(page_url).text
    no_option_id_in(html, item)
    key = sorted(item.answer_ids)[0]
    wrong = next(option.id for option in item.options if option.id not in item.answer_ids)
    if place.name != "quiz":  # a quiz question takes one answer: the key alone
        sent = person.post(answer_url, {"choice": shown_as(html, item, wrong).value})
        assert sent.status_code == 200, sent.text
        after = sent.text
        assert "data-option" not in after and f'value="{wrong}"' not in after
    sent = person.post(answer_url, {"choice": shown_as(html, item, key).value})
    assert sent.status_code == 200, sent.text
    expected = [(key, True)] if place.name == "quiz" else [(wrong, False), (key, True)]
    assert stored(sqlite_url, place.model) == expected


@pytest.mark.parametrize("place", PLACES, ids=lambda place: place.name)
def test_a_token_from_another_learners_showing_is_refused(
    place: Place, client: TestClient, sqlite_url: str
):
    item = place.item()
    other = guest(client)
    other_page, _ = place.open(other, sqlite_url)
    theirs = shown_as(other.get(other_page).text, item, sorted(item.answer_ids)[0]).value
    person = guest(client)
    page_url, answer_url = place.open(person, sqlite_url)
    mine = shown_as(person.get(page_url).text, item, sorted(item.answer_ids)[0]).value
    assert theirs != mine
    refused = person.post(answer_url, {"choice": theirs}, follow_redirects=False)
    assert refused.status_code == 400
    assert stored(sqlite_url, place.model) == []


def test_another_attempt_of_the_same_learner_has_tokens_of_its_own(client: TestClient):
    person = guest(client)
    item = choice_item(TEST_CHALLENGES, "test-basics")
    key = sorted(item.answer_ids)[0]
    first = person.start("test-basics")
    old = shown_as(person.get(f"{first}/q/1").text, item, key).value
    person.answer(first, 1, old)
    person.next(first)
    person.answer(first, 2, "3.33")
    person.next(first)
    second = person.start("test-basics")
    assert second != first
    assert person.answer(second, 1, old).status_code == 400


def test_the_question_api_shows_no_option_id_until_closed(client: TestClient):
    person = guest(client)
    item = choice_item(TEST_CHALLENGES, "test-basics")
    attempt = person.start("test-basics")
    question = person.get(f"/api{attempt}/q/1").json()["question"]
    ids = {option.id for option in item.options}
    for option in question["options"]:
        assert "id" not in option and option["value"] not in ids
    wrong = next(o.id for o in item.options if o.id not in item.answer_ids)
    person.answer(attempt, 1, wrong)  # an option's own id is still accepted (API clients)
    question = person.get(f"/api{attempt}/q/1").json()["question"]
    assert question["status"] == "open"
    assert question["last_answer"] not in ids  # the pick comes back as the token it was shown as
    shown = {option["value"]: option for option in question["options"]}
    assert shown[question["last_answer"]]["chosen"] is True
    assert "letters" not in question and "answer" not in question
