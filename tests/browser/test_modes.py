"""A learner in a real browser uses each untimed mode of a topic: practice, flashcards, review,
the quick quiz, explain-it and the cheat sheet, and sees the topic's mode picker follow along.

Each test is a new visitor (a fresh browser context); their first answer signs them in as a
guest. The `drill` topic and its `modes-drill` set are tests/fixtures/modes; `ddp` is shipped.
"""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from app.challenges.catalog import Catalog
from tests.conftest import FIXTURES
from tests.support.options import check, choice_item, shown_as

pytestmark = pytest.mark.browser
TOPIC = "drill"
SET_ID = "modes-drill"
PRACTICE = f"/topics/{TOPIC}/practice/{SET_ID}"
WORLD_SIZE = choice_item(FIXTURES / "modes", SET_ID, "world-size")  # keyed B
# Every mode the drill topic offers, in the picker's order, with a new visitor's state in each.
FRESH_PICKER = {
    "timed": "1 set",
    "practice": "0/3 answered right",
    "flashcards": "3 cards",
    "review": "Nothing due",
    "quiz": "Not taken yet",
    "explain": "1 to explain",
    "cheatsheet": "One page, printable",
}
A4_PRINTABLE_PX = round((210 - 2 * 12) / 25.4 * 96)  # A4 width less the 12 mm @page margins


def mode_state(page: Page, mode: str):
    """The state line of one mode in the topic page's picker."""
    return page.locator(f'[data-testid="mode"][data-mode="{mode}"]').get_by_test_id("mode-state")


def picker_states(page: Page) -> dict[str, str]:
    """Mode name -> its state line, as the picker on the current topic page shows them."""
    modes = page.get_by_test_id("mode")
    states = {}
    for i in range(modes.count()):
        mode = modes.nth(i)
        states[mode.get_attribute("data-mode")] = mode.get_by_test_id("mode-state").inner_text()
    return states


def answer_choice(page: Page, option_id: str) -> None:
    """Pick the world-size question's option `option_id` by the letter it is shown under."""
    check(page, WORLD_SIZE, option_id)
    page.get_by_test_id("submit").click()


def due_of(page: Page) -> datetime:
    """The instant in the flashcard page's "next review" line (naive means UTC)."""
    when = datetime.fromisoformat(page.get_by_test_id("next-due").get_attribute("datetime"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def test_the_home_page_lists_the_topics_and_leads_to_one(page):
    page.goto("/")
    topics = page.get_by_test_id("topic")
    expect(topics.first).to_be_visible()
    shown = [topics.nth(i).get_attribute("data-topic-id") for i in range(topics.count())]
    assert {"ddp", TOPIC} <= set(shown)
    page.locator(f'[data-topic-id="{TOPIC}"]').get_by_test_id("topic-link").click()
    page.wait_for_url(re.compile(rf"/topics/{TOPIC}$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Drill topic")
    expect(page.get_by_test_id("mode-picker")).to_be_visible()


def test_practice_gives_feedback_until_right_and_never_touches_badges(page):
    page.goto(f"/topics/{TOPIC}")
    page.locator('[data-testid="mode"][data-mode="practice"] a').click()
    page.wait_for_url(re.compile(rf"{PRACTICE}/world-size$"))
    expect(page.get_by_role("heading", name="World size")).to_be_visible()
    assert page.get_by_test_id("explanation").count() == 0

    answer_choice(page, "A")  # wrong: one more try, and what was wrong with that option
    expect(page.get_by_test_id("verdict")).to_have_text("✗ Not quite — try again.")
    # Options are shuffled: option A's feedback carries the letter it was shown under.
    letter = shown_as(page.content(), WORLD_SIZE, "A").letter
    expect(page.get_by_test_id("feedback")).to_contain_text(f"Your choice, {letter}:")
    expect(page.get_by_test_id("feedback")).to_contain_text("One process would be no distribution")
    assert page.get_by_test_id("explanation").count() == 0
    assert page.get_by_test_id("key-mark").count() == 0
    expect(page.get_by_test_id("who")).to_be_visible()  # the first answer made them a guest

    answer_choice(page, "B")
    expect(page.get_by_test_id("verdict")).to_have_text(re.compile("^✓ Correct"))
    expect(page.get_by_test_id("explanation")).to_contain_text("torchrun starts")
    assert page.get_by_test_id("submit").count() == 0

    page.get_by_test_id("next").click()
    page.wait_for_url(re.compile(rf"{PRACTICE}/all-reduce-sum$"))
    expect(page.get_by_role("heading", name="Sum of ranks")).to_be_visible()
    expect(page.get_by_test_id("question")).to_have_attribute("data-status", "open")

    page.goto("/me/progress")
    expect(page.get_by_test_id("earned-badge")).to_have_count(0)
    expect(page.get_by_test_id("history")).to_contain_text("No attempts yet.")


def test_flashcards_flip_with_space_and_grade_with_the_number_keys(page):
    page.goto(f"/topics/{TOPIC}/flashcards")
    card = page.get_by_test_id("flashcard")
    first = card.get_attribute("data-card-id")
    back = page.get_by_test_id("card-back")
    expect(back).not_to_have_attribute("open", "")
    page.keyboard.press("Space")
    expect(back).to_have_attribute("open", "")
    expect(back.get_by_label("Back")).to_be_visible()
    page.keyboard.press("Space")
    expect(back).not_to_have_attribute("open", "")
    expect(back.get_by_label("Back")).to_be_hidden()

    page.keyboard.press("Space")
    before = datetime.now(UTC)
    page.keyboard.press("3")  # Good: FSRS's next learning step, ten minutes on
    expect(page.get_by_test_id("scheduled")).to_contain_text("Next:")
    due = due_of(page)
    assert before + timedelta(minutes=5) < due < before + timedelta(hours=1), due
    second = card.get_attribute("data-card-id")
    assert second != first
    expect(page.get_by_test_id("deck-counts")).to_have_text("0 due · 2 new today · 2 never seen")

    page.keyboard.press("1")  # not flipped yet: no grade
    expect(page.get_by_test_id("deck-counts")).to_have_text("0 due · 2 new today · 2 never seen")
    page.keyboard.press("Space")
    page.keyboard.press("1")  # Again: back after its one-minute step, not at once
    expect(page.get_by_test_id("deck-counts")).to_have_text("0 due · 1 new today · 1 never seen")
    assert due_of(page) < datetime.now(UTC) + timedelta(minutes=2)
    assert card.get_attribute("data-card-id") not in (first, second)
    expect(card.locator(".question-head")).to_contain_text("new")


def test_a_missed_practice_question_comes_back_in_review_until_answered_right(page):
    page.goto(f"{PRACTICE}/world-size")
    with page.expect_response(re.compile(r"/review/count$")):
        answer_choice(page, "A")
    expect(page.get_by_test_id("verdict")).to_contain_text("try again")
    expect(page.get_by_test_id("review-count")).to_have_text("1")  # the nav, via htmx

    page.get_by_test_id("nav-review").click()
    page.wait_for_url(re.compile(r"/review$"))
    expect(page.get_by_test_id("review-due")).to_have_text("1 due: Drill topic 1")
    current = page.get_by_test_id("review-current")
    expect(current.get_by_role("heading", name="World size")).to_be_visible()

    with page.expect_response(re.compile(r"/review/count$")):
        answer_choice(page, "B")
    page.wait_for_url(re.compile(r"/review\?last=\d+&v=[0-9a-f]{64}$"))  # shown by its version
    reviewed = page.get_by_test_id("reviewed")
    expect(reviewed.get_by_test_id("verdict")).to_have_text(re.compile("^✓ Correct"))
    expect(reviewed.get_by_test_id("next-due")).to_contain_text("Next review of this one:")
    expect(page.get_by_test_id("review-due")).to_have_text("0 due")
    # Once htmx has swapped the count in (its placeholder gone), nothing due shows no count.
    expect(page.locator('[hx-get="/review/count"]')).to_have_count(0)
    expect(page.get_by_test_id("review-count")).to_have_count(0)
    expect(page.get_by_test_id("review-current")).to_have_count(0)


CODE_TITLE = "rank == 0 or any rank: which one usually writes checkpoints?"  # the card's front


def title_shown_right(title) -> None:
    """A title starting with code reads as written: `rank == 0` as code, the rest as text."""
    expect(title).to_have_text(CODE_TITLE)
    expect(title.locator("code")).to_have_count(1)
    expect(title.locator("code")).to_have_text("rank == 0")


def test_a_quiz_card_is_graded_after_its_answer_shows_and_its_title_reads_once(page):
    """Issue 37, item 6: no grade before the flip; one title; inline code rendered right in
    the quiz, its score table and the flashcards' note."""
    page.goto(f"/topics/{TOPIC}/quiz")
    page.get_by_test_id("start-quiz").click()
    page.wait_for_url(re.compile(r"/quizzes/\d+$"))
    seen_code_card = False
    for _ in range(10):
        if page.get_by_test_id("quiz-score").count():
            break
        question = page.get_by_test_id("question")
        if question.get_attribute("data-kind") == "flashcard":
            expect(page.get_by_test_id("knew")).to_be_hidden()
            expect(page.get_by_test_id("missed")).to_be_hidden()
            if "writes checkpoints" in question.inner_text():
                seen_code_card = True
                expect(question.get_by_text("writes checkpoints")).to_have_count(1)  # one title
                title_shown_right(question.locator("p").filter(has_text="checkpoints"))
            page.get_by_test_id("flip").click()
            page.get_by_test_id("knew").click()
        elif question.get_attribute("data-kind") == "numeric":
            page.get_by_test_id("numeric-input").fill("1")
            page.get_by_test_id("submit").click()
        else:
            page.locator('[data-testid="option"] input').first.check()
            page.get_by_test_id("submit").click()
        page.wait_for_url(re.compile(r"\?show=\d+$"))
        page.get_by_test_id("next").click()
        page.wait_for_url(re.compile(r"/quizzes/\d+$"))
    assert seen_code_card
    row = page.get_by_test_id("quiz-review-row").filter(has_text="writes checkpoints")
    title_shown_right(row.locator("a"))

    page.goto(f"/topics/{TOPIC}/flashcards")
    for _ in range(3):
        card = page.get_by_test_id("flashcard")
        target = card.get_attribute("data-card-id") == "who-is-rank-zero"
        page.get_by_test_id("flip").click()
        page.get_by_test_id("grade-3").click()
        page.wait_for_url(re.compile(r"graded=\d+"))
        if target:
            note = page.get_by_test_id("scheduled").locator("p")
            expect(note).to_contain_text(f"“{CODE_TITLE}”: Good.")
            expect(note.locator("code")).to_have_text("rank == 0")
            break
    else:
        pytest.fail("the drill's checkpoint card was not shown in three flips")


def test_a_quick_quiz_asks_every_question_once_then_scores_it(page):
    page.goto(f"/topics/{TOPIC}/quiz")
    page.get_by_test_id("start-quiz").click()
    page.wait_for_url(re.compile(r"/quizzes/\d+$"))
    asked = 0
    while page.get_by_test_id("quiz-score").count() == 0:
        assert asked < 10, "the quiz did not end after 10 questions"
        question = page.get_by_test_id("question")
        kind = question.get_attribute("data-kind")
        if kind == "flashcard":
            page.get_by_test_id("flip").click()
            page.get_by_test_id("knew").click()
        elif kind == "numeric":
            page.get_by_test_id("numeric-input").fill("1")
            page.get_by_test_id("submit").click()
        else:
            page.locator('[data-testid="option"] input').first.check()
            page.get_by_test_id("submit").click()
        page.wait_for_url(re.compile(r"/quizzes/\d+\?show=\d+$"))
        expect(page.get_by_test_id("question")).not_to_have_attribute("data-status", "open")
        asked += 1
        page.get_by_test_id("next").click()
        page.wait_for_url(re.compile(r"/quizzes/\d+$"))

    rows = page.get_by_test_id("quiz-review-row")
    results = [rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())]
    assert len(results) == asked == 6  # the drill topic's 3 questions and 3 cards
    right = sum(result.startswith("✓") for result in results)
    score = page.get_by_test_id("quiz-score").inner_text()
    assert score == f"{right}/{asked}"

    page.goto(f"/topics/{TOPIC}")
    expect(mode_state(page, "quiz")).to_have_text(f"Best {score}")


def test_explain_it_shows_which_sentences_covered_which_concepts(page):
    page.goto(f"/topics/{TOPIC}/explain/explain-averaging")
    assert page.get_by_test_id("model-answer").count() == 0  # not before answering
    page.get_by_test_id("explain-answer").fill(
        "Every rank has its own batch. DDP does not average the gradients. The models stay in sync."
    )
    page.get_by_test_id("submit").click()
    expect(page.get_by_test_id("concept-score")).to_have_text("You covered 2/3 concepts.")
    concepts = page.get_by_test_id("concept")
    expect(concepts).to_have_count(3)

    data = concepts.filter(has_text="each rank sees different data")
    expect(data).to_have_attribute("data-covered", "yes")
    expect(data.get_by_test_id("matched-sentence")).to_have_text("Every rank has its own batch.")
    averaged = concepts.filter(has_text="gradients are averaged")
    expect(averaged).to_have_attribute("data-covered", "no")
    expect(averaged).to_contain_text("You said the opposite")
    expect(averaged).to_contain_text("DDP does not average the gradients.")
    assert averaged.get_by_test_id("matched-sentence").count() == 0
    synced = concepts.filter(has_text="replicas stay identical")
    expect(synced).to_have_attribute("data-covered", "yes")
    expect(synced.get_by_test_id("matched-sentence")).to_have_text("The models stay in sync.")

    expect(page.get_by_test_id("model-answer")).to_contain_text("the replicas stay identical")
    expect(page.get_by_test_id("try-again")).to_be_visible()


SHIPPED = Catalog.load(FIXTURES.parents[1] / "challenges")
SHIPPED_TOPICS = sorted(topic.id for topic in SHIPPED.topics() if topic.cheat_sheet)


@pytest.mark.parametrize("topic_id", SHIPPED_TOPICS)
def test_every_cheat_sheet_prints_on_one_a4_page_without_the_site_around_it(page, topic_id):
    from pypdf import PdfReader

    page.set_viewport_size({"width": A4_PRINTABLE_PX, "height": 1000})
    page.goto(f"/topics/{topic_id}/cheatsheet")
    expect(page.get_by_test_id("cheatsheet")).to_be_visible()
    page.emulate_media(media="print")
    for hidden in ("body > header", "body > footer", '[data-testid="print"]'):
        expect(page.locator(hidden)).to_be_hidden()
    # No code line is cut off at the page's edge: every <pre> wraps within its box.
    pres = page.locator(".cheatsheet pre")
    for i in range(pres.count()):
        widths = pres.nth(i).evaluate("pre => [pre.scrollWidth, pre.clientWidth]")
        assert widths[0] <= widths[1], f"<pre> {i} overflows its box in print: {widths}"

    pdf = PdfReader(io.BytesIO(page.pdf(format="A4")))
    assert len(pdf.pages) == 1, f"the {topic_id} cheat sheet prints on {len(pdf.pages)} pages"
    text = re.sub(r"\s+", "", pdf.pages[0].extract_text())
    assert "RankLab—everysnippet" not in text  # the site's footer
    assert "Printthispage" not in text
    if topic_id == "ddp":
        assert pres.count() >= 1
        assert "DistributedDataParallel—cheatsheet" in text
        assert "dist.destroy_process_group()" in text  # the end of the code block
        assert "device_ids=NoneforCPUmodules" in text  # the sheet's last line


def test_the_picker_shows_every_mode_and_follows_the_learner(page):
    page.goto(f"/topics/{TOPIC}")
    assert picker_states(page) == FRESH_PICKER
    links = page.locator('[data-testid="mode"] a')
    assert [links.nth(i).get_attribute("href") for i in range(links.count())] == [
        f"/topics/{TOPIC}#sets",
        f"/topics/{TOPIC}/practice",
        f"/topics/{TOPIC}/flashcards",
        f"/review?topic={TOPIC}",
        f"/topics/{TOPIC}/quiz",
        f"/topics/{TOPIC}/explain",
        f"/topics/{TOPIC}/cheatsheet",
    ]

    page.locator('[data-testid="mode"][data-mode="flashcards"] a').click()
    page.get_by_test_id("flip").click()
    page.get_by_test_id("grade-3").click()
    expect(page.get_by_test_id("scheduled")).to_be_visible()
    page.goto(f"{PRACTICE}/world-size")
    answer_choice(page, "B")
    expect(page.get_by_test_id("verdict")).to_have_text(re.compile("^✓ Correct"))

    page.goto(f"/topics/{TOPIC}")
    assert picker_states(page) == {
        **FRESH_PICKER,
        "practice": "1/3 answered right",
        "flashcards": "0 due · 2 new today",
    }
