"""A learner reads a lesson in a real browser: predicts, watches the real ranks' output stream
into each rank's pane, answers the check, and the completion is recorded; the page passes axe
at a desktop and at a phone's width.

The lesson is tests/fixtures/lessons (topic `lesson-drill`); its snippets run on the session's
real executor."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from sqlmodel import Session, select

from app.db import make_engine
from app.lessons.models import LessonProgress
from tests.browser.conftest import watch_csp
from tests.browser.test_axe import NARROW, blocking_violations

pytestmark = pytest.mark.browser
LESSON = "/topics/lesson-drill/lesson"
RUN_TIMEOUT_MS = 60_000  # real ranks on a shared machine


def example(page: Page, example_id: str):
    return page.locator(f'[data-testid="example"][data-example="{example_id}"]')


def predict_typed(page: Page) -> None:
    """Open the lesson from its topic, type rank 1's output and lock it in."""
    page.goto("/topics/lesson-drill")
    page.get_by_test_id("lesson-link").click()
    page.wait_for_url(re.compile(r"/topics/lesson-drill/lesson$"))
    typed = example(page, "typed-sum")
    expect(typed.get_by_test_id("run-button")).to_have_count(0)  # no run before a prediction
    typed.get_by_test_id("prediction-text").fill("rank 1: 3.0")
    typed.get_by_test_id("predict-button").click()


def typed_run_shown(page: Page) -> None:
    """After the typed prediction: its verdict, then each real rank's output in its own pane."""
    predict_typed(page)
    typed = example(page, "typed-sum")
    expect(typed.get_by_test_id("prediction-verdict")).to_contain_text("Your prediction was right")
    expect(typed.get_by_test_id("run-summary")).to_contain_text("ok ·", timeout=RUN_TIMEOUT_MS)
    expect(typed.get_by_test_id("rank-0").locator("pre.out")).to_have_text("rank 0: 3.0\n")
    expect(typed.get_by_test_id("rank-1").locator("pre.out")).to_have_text("rank 1: 3.0\n")


def test_predict_then_run_then_check_completes_the_lesson(page: Page, live_database_url):
    typed_run_shown(page)
    typed = example(page, "typed-sum")
    expect(typed.get_by_test_id("prediction-verdict")).to_be_focused()  # focus follows the swap

    chosen = example(page, "chosen-sum")
    chosen.get_by_test_id("prediction-option").filter(has_text="max 1.0").click()
    chosen.get_by_test_id("predict-button").click()
    expect(chosen.get_by_test_id("prediction-verdict")).to_contain_text("Not what the run shows")
    expect(chosen.get_by_test_id("prediction-verdict")).to_be_focused()  # after htmx's swap
    expect(chosen.get_by_test_id("run-summary")).to_contain_text("ok ·", timeout=RUN_TIMEOUT_MS)
    for rank in (0, 1):
        expect(chosen.get_by_test_id(f"rank-{rank}").locator("pre.out")).to_have_text("max 2.0\n")

    check = page.get_by_test_id("lesson-check")
    where, who = (check.get_by_test_id("check-question").nth(i) for i in (0, 1))
    where.get_by_test_id("check-option").filter(has_text="In the tensor passed").click()
    who.get_by_test_id("check-option").filter(has_text="Every rank").click()
    check.get_by_test_id("check-submit").click()
    expect(page.get_by_test_id("check-passed")).to_be_visible()
    expect(page.get_by_test_id("lesson-completed")).to_be_visible()

    # A reload keeps it all: the predictions and the completion are the server's.
    page.reload()
    expect(example(page, "typed-sum").get_by_test_id("predict-form")).to_have_count(0)
    expect(page.get_by_test_id("lesson-completed")).to_be_visible()
    with Session(make_engine(live_database_url)) as session:
        check_row = session.exec(
            select(LessonProgress)
            .where(LessonProgress.topic_id == "lesson-drill", LessonProgress.step == "check")
            .order_by(LessonProgress.id.desc())  # type: ignore[union-attr]
        ).first()
        assert check_row is not None and check_row.completed_at is not None
        mine = session.exec(
            select(LessonProgress).where(LessonProgress.user_id == check_row.user_id)
        ).all()
    assert {(row.step, row.correct) for row in mine} == {
        ("example:typed-sum", True),
        ("example:chosen-sum", False),
        ("check", True),
    }


def typed_in_another_form(page: Page) -> None:
    """Type rank 1's line with two spaces and an int for the printed float."""
    page.goto(LESSON)
    typed = example(page, "typed-sum")
    typed.get_by_test_id("prediction-text").fill("rank 1:  3\n")
    typed.get_by_test_id("predict-button").click()
    typed = example(page, "typed-sum")
    expect(typed.get_by_test_id("prediction-verdict")).to_contain_text("Your prediction was right")
    expect(typed.get_by_test_id("form-hint")).to_have_text(
        "Right value; Python prints floats as 3.0"
    )


def test_a_typed_prediction_is_compared_as_a_person_would(page: Page):
    """The right value in another form is right, said so, with how Python prints it (issue 37,
    item 4)."""
    typed_in_another_form(page)


POOL = "/topics/lesson-pool/lesson"
# The pool lesson's questions: the key's text and the wrong option's, with why it is wrong.
POOL_QUESTIONS = {
    "sum-where": ("In the tensor passed", "In its return value", "It returns None"),
    "sum-max": ("across the ranks, on every rank", "on rank 0 only", "That is reduce with"),
    "who-calls-it": ("Every rank of the group", "Rank 0 only", "Rank 0 alone would wait"),
    "broadcast-src": ("into t on every rank", "Sends every rank", "That is what gather"),
}
POOL_SECTIONS = {"sum-where": "1.", "sum-max": "1.", "who-calls-it": "2.", "broadcast-src": "2."}


def asked(page: Page) -> list[str]:
    questions = page.get_by_test_id("check-question")
    return [questions.nth(i).get_attribute("data-question") for i in range(questions.count())]


def pick(page: Page, question: str, text: str) -> None:
    shown = page.locator(f'[data-testid="check-question"][data-question="{question}"]')
    shown.get_by_test_id("check-option").filter(has_text=text).click()


def wrong_try_shown(page: Page) -> list[str]:
    """Answer the pool lesson's first try wrong; its page explains each pick."""
    page.goto(POOL)
    first = asked(page)
    for question in first:
        pick(page, question, POOL_QUESTIONS[question][1])
    page.get_by_test_id("check-submit").click()
    expect(page.get_by_test_id("check-not-yet")).to_contain_text("0 of 2 right")
    return first


def test_a_wrong_check_explains_each_pick_and_the_retry_asks_other_questions(page: Page):
    """Issue 37, item 5: each wrong pick says why and links the section to re-read; the retry
    asks other questions, so picking the other option of a missed one cannot pass it."""
    first = wrong_try_shown(page)
    feedback = page.get_by_test_id("check-review").get_by_test_id("check-feedback")
    expect(feedback).to_have_count(2)
    for i, question in enumerate(first):
        _key, wrong, why = POOL_QUESTIONS[question]
        expect(feedback.nth(i).get_by_test_id("wrong-pick")).to_contain_text(wrong)
        expect(feedback.nth(i).get_by_test_id("pick-why")).to_contain_text(why)
        expect(feedback.nth(i).get_by_test_id("reread")).to_contain_text(POOL_SECTIONS[question])
    feedback.nth(0).get_by_test_id("reread").get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"#section-(in-place|every-rank)$"))
    retry = asked(page)
    assert len(retry) == 2 and not set(retry) & set(first)
    for question in retry:
        pick(page, question, POOL_QUESTIONS[question][0])
    page.get_by_test_id("check-submit").click()
    expect(page.get_by_test_id("check-passed")).to_be_visible()
    expect(page.get_by_test_id("check-form")).to_have_count(0)


@pytest.fixture
def phone_page(browser, live_server, csp_problems):
    """Like `page`, at a phone's width (test_axe's narrow_page)."""
    context = browser.new_context(base_url=live_server, viewport={"width": NARROW, "height": 844})
    context.set_default_timeout(15_000)
    watch_csp(context, csp_problems)
    yield context.new_page()
    context.close()
    assert csp_problems == [], "the page broke its Content-Security-Policy"


def hang_and_raise_shown(page: Page) -> None:
    """Predict the example whose ranks hang and the one where rank 1 raises; each real run
    shows where the hung ranks were stuck and what was raised, and the proven panel says in
    words how each rank ends."""
    page.goto(LESSON)
    hung = example(page, "hung-ranks")
    expect(hung.get_by_test_id("proven-ending")).to_have_count(0)  # not before the prediction
    hung.get_by_test_id("prediction-option").filter(has_text="Both ranks wait forever").click()
    hung.get_by_test_id("predict-button").click()
    hung = example(page, "hung-ranks")  # the page was loaded afresh for the new guest
    expect(hung.get_by_test_id("prediction-verdict")).to_contain_text("Your prediction was right")
    expect(hung.get_by_test_id("run-summary")).to_contain_text("timeout ·", timeout=RUN_TIMEOUT_MS)
    expect(hung.get_by_test_id("rank-0").locator("p.stuck")).to_have_text(
        "Stuck at line 8, waiting in dist.barrier when the time limit stopped it."
    )
    expect(hung.get_by_test_id("rank-1").locator("p.stuck")).to_have_text(
        "Stuck at line 10, waiting in dist.all_reduce when the time limit stopped it."
    )
    expect(hung.get_by_test_id("rank-1").locator("pre.out")).to_have_text("rank 1: waiting\n")
    hung.get_by_test_id("proven-output").locator("summary").click()
    endings = hung.get_by_test_id("proven-ending")
    expect(endings.nth(0)).to_have_text(re.compile(r"^Rank 0 hangs: it is still waiting"))
    expect(endings.nth(1)).to_have_text(re.compile(r"^Rank 1 hangs: it is still waiting"))

    raising = example(page, "raising-rank")
    raising.get_by_test_id("prediction-option").filter(has_text="It raises").click()
    raising.get_by_test_id("predict-button").click()
    expect(raising.get_by_test_id("run-summary")).to_contain_text("error ·", timeout=RUN_TIMEOUT_MS)
    expect(raising.get_by_test_id("rank-1").locator("pre.err")).to_contain_text("RuntimeError: ")
    expect(raising.get_by_test_id("rank-0").locator("pre.out")).to_have_text("rank 0: here\n")
    raising.get_by_test_id("proven-output").locator("summary").click()
    endings = raising.get_by_test_id("proven-ending")
    expect(endings.nth(0)).to_have_text("Rank 0 ends normally.")
    expect(endings.nth(1)).to_have_text(
        "Rank 1 raises RuntimeError, saying something like “Connection closed by peer”."
    )


def test_a_learner_sees_ranks_hang_and_raise(page: Page):
    hang_and_raise_shown(page)


VISITS = [
    ("lesson, before predicting", LESSON),
    ("lesson, after a wrong check", wrong_try_shown),
    ("lesson, a typed prediction in another form", typed_in_another_form),
    ("lesson, after a run", typed_run_shown),
    ("lesson, after a hang and a raise", hang_and_raise_shown),
]


@pytest.mark.parametrize(("name", "visit"), VISITS, ids=[name for name, _ in VISITS])
def test_the_lesson_has_no_serious_or_critical_axe_violation(page: Page, name, visit):
    assert (found := blocking_violations(page, name, visit)) == [], "\n".join(found)


@pytest.mark.parametrize(("name", "visit"), VISITS, ids=[name for name, _ in VISITS])
def test_at_a_phone_width_the_lesson_has_no_serious_or_critical_axe_violation(
    phone_page: Page, name, visit
):
    assert (found := blocking_violations(phone_page, name, visit)) == [], "\n".join(found)
