"""The course's rules (guessing, facts, cheat-sheet markers): exact odds for a guesser, and
`ranklab validate` saying each broken rule at its file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import cli
from app.challenges import course_rules
from app.challenges.loader import load_path
from app.challenges.schema import ChallengeSet
from app.config import ROOT
from tests.support.content import edit, line_of


def choice(item_id: str, options: int, answer: str | list[str] = "A", **extra: object) -> dict:
    return {
        "id": item_id,
        "kind": "choice",
        "category": "Conceptual",
        "difficulty": "beginner",
        "title": "A question",
        "prompt": "Which?",
        "explanation": "Because.",
        "options": [{"id": chr(65 + n), "text": f"option {n}"} for n in range(options)],
        "answer": answer,
        **extra,
    }


def numeric(item_id: str) -> dict:
    return {
        "id": item_id,
        "kind": "numeric",
        "category": "Metrics",
        "difficulty": "beginner",
        "title": "A number",
        "prompt": "How many?",
        "explanation": "Because.",
        "answer": 4,
    }


def a_set(*items: dict) -> ChallengeSet:
    return ChallengeSet.model_validate(
        {
            "id": "odds",
            "title": "Odds",
            "topic": "odds",
            "own_topic": True,
            "description": "A set.",
            "badge": {"name": "Odds", "icon": "award"},
            "items": list(items),
        }
    )


def test_five_four_option_items_fall_to_guessing_once_in_1024_attempts():
    chance = course_rules.badge_chance(a_set(*(choice(f"q{n}", 4) for n in range(5))))
    assert chance == pytest.approx(1 / 4**5)


def test_four_three_option_items_and_a_numeric_one_fall_to_guessing_too_often():
    # The old scaffold's set: a numeric item counts as known, each 3-option one is 1 in 3.
    items = [*(choice(f"q{n}", 3) for n in range(4)), numeric("n")]
    assert course_rules.badge_chance(a_set(*items)) == pytest.approx(1 / 3**4)
    assert course_rules.badge_chance(a_set(*items)) > course_rules.BADGE_CHANCE_LIMIT


def test_a_pinned_key_is_known_to_a_guesser_and_a_multi_key_item_is_one_combination():
    pinned = choice("pinned", 4)
    pinned["options"][0]["pin"] = "last"
    assert course_rules.item_odds(a_set(pinned).items[0]) == (1.0, 0.0)
    two_keys = a_set(choice("two", 5, ["A", "B"], attempts=3)).items[0]
    assert course_rules.item_odds(two_keys) == pytest.approx((1 / 10, 2 / 10))


def test_ten_items_allow_one_second_try_for_the_badge():
    # 90% of 10 at the first try: one item may be right at the second (2 tries, 4 options).
    chance = course_rules.badge_chance(a_set(*(choice(f"q{n}", 4) for n in range(10))))
    assert chance == pytest.approx((1 / 4) ** 10 + 10 * (1 / 4) ** 9 * (1 / 4))


@pytest.fixture
def course(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A topic and a set written by `ranklab new`: they meet every rule as written."""
    assert cli.main(["new", "topic", "demo", "--dir", str(tmp_path)]) == 0
    assert cli.main(["new", "set", "demo-basics", "--topic", "demo", "--dir", str(tmp_path)]) == 0
    assert cli.main(["validate", str(tmp_path)]) == 0
    capsys.readouterr()
    return tmp_path


def validate(course: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = cli.main(["validate", str(course)])
    return code, capsys.readouterr().err.splitlines()


def test_validate_refuses_a_set_guessing_wins_at_its_id(course, capsys):
    set_file = course / "demo-basics" / "set.yaml"
    for option in ("      - id: D\n        text: The tensor", '      - id: D\n        text: "0"'):
        text = set_file.read_text()
        start = text.index(option)
        end = text.index("    answer:", start)
        set_file.write_text(text[:start] + text[end:])
    code, errors = validate(course, capsys)
    assert code == 1
    assert errors == [
        f"{set_file}:{line_of(set_file, 'id: demo-basics')}:5: guessing earns this set's badge "
        "1.23% of the time (the limit is 1%): add items, options or keys to pick (several right "
        "options), or unpin a pinned key"
    ]


def test_validate_refuses_an_item_or_card_without_a_fact_at_its_id(course, capsys):
    set_file, topic_file = course / "demo-basics" / "set.yaml", course / "demo" / "topic.yaml"
    edit(set_file, "    fact: demo-basics-world-size-counts-ranks\n", "")
    edit(topic_file, "    fact: demo-gloo-cpu\n", "")
    code, errors = validate(course, capsys)
    assert code == 1
    assert errors == [
        f"{set_file}:{line_of(set_file, '- id: world-size')}:9: item 'world-size' names no "
        "fact: add `fact: a-slug` for the one fact it asks, so no quiz, review or flashcard day "
        "asks it twice",
        f"{topic_file}:{line_of(topic_file, '- id: gloo-card')}:9: card 'gloo-card' names no "
        "fact: add `fact: a-slug` for the one fact it asks, so no quiz, review or flashcard day "
        "asks it twice",
    ]


def test_validate_refuses_a_cheat_sheet_line_with_no_marker_at_the_line(course, capsys):
    sheet = course / "demo" / "cheatsheet.md"
    edit(sheet, "\n```python", "- Ranks count from 0.\n\n```python")
    code, errors = validate(course, capsys)
    assert code == 1
    assert errors == [
        f"{sheet}:{line_of(sheet, 'Ranks count from 0.')}:1: this cheat-sheet line says "
        "nothing of what it rests on: end it with <!-- proof: ID -->, <!-- source: "
        "URL-or-torch-path torch=VERSION --> or, for a line that states no torch behaviour, "
        "<!-- nofact -->"
    ]


def test_validate_refuses_a_lesson_example_that_runs_a_set_items_snippet(course, capsys):
    # The lesson shown minutes before the timed set would make the badge a test of recall.
    topic_file = course / "demo" / "topic.yaml"
    snippet = (course / "demo-basics" / "all_reduce_sum.py").read_text()
    (course / "demo" / "lesson_all_reduce.py").write_text(f"# the set's, reworded\n{snippet}")
    edit(topic_file, '"sum 8.0', '"sum 3.0')
    code, errors = validate(course, capsys)
    assert code == 1
    set_file = course / "demo-basics" / "set.yaml"
    assert errors == [
        f"{topic_file}:{line_of(topic_file, '- id: sum-two-ranks')}:15: lesson example "
        f"'sum-two-ranks' runs the same snippet as set item 'all-reduce-sum' ({set_file}): "
        "give the lesson its own snippet and numbers"
    ]


def test_validate_refuses_a_lesson_example_that_prints_a_set_items_keyed_output(course, capsys):
    topic_file = course / "demo" / "topic.yaml"
    edit(topic_file, "dist.get_rank() + 5", "dist.get_rank() * 10")
    edit(topic_file, 'all: "value 6.0', 'all: "value 10.0')
    code, errors = validate(course, capsys)
    assert code == 1
    set_file = course / "demo-basics" / "set.yaml"
    assert errors == [
        f"{topic_file}:{line_of(topic_file, '- id: broadcast-from-rank-1')}:15: lesson example "
        f"'broadcast-from-rank-1' prints the keyed output of set item 'broadcast-from-rank-1' "
        f"({set_file}): give the lesson its own snippet and numbers"
    ]


def lengths(*texts: str, answer: str | list[str] = "A") -> dict:
    item = choice("q", len(texts), answer)
    for option, text in zip(item["options"], texts, strict=True):
        option["text"] = text
    return item


def test_a_key_longer_than_every_distractor_counts_and_a_tie_does_not():
    keyed = a_set(lengths("four", "one", "two", "six")).items[0]
    tied = a_set(lengths("four", "five", "two", "six")).items[0]
    assert course_rules.key_longest(keyed)
    assert not course_rules.key_longest(tied)


def test_a_set_that_always_keys_the_longest_option_is_far_from_chance():
    items = [{**lengths("the right one", "wrong", "nope", "no"), "id": f"q{n}"} for n in range(4)]
    counted = course_rules.KeyLengths.of(a_set(*items).items)
    assert (counted.items, counted.key_longest, counted.chance) == (4, 4, 0.25)
    assert not counted.near_chance
    assert counted.long_keys == ("q0", "q1", "q2", "q3")


def test_a_set_near_chance_passes_and_so_does_the_count_nearest_chance():
    once = [lengths("longest key", "a", "b", "c"), *(lengths("k", "longer", "b", "c"),) * 3]
    once = [{**item, "id": f"q{n}"} for n, item in enumerate(once)]
    assert course_rules.KeyLengths.of(a_set(*once).items).near_chance
    # Two 3-option items: 0 % and 50 % are both more than 15 points from 33 %, and 1 is the
    # count nearest to chance (0.67), so a set that small is never impossible to balance.
    two = [lengths("long key", "a", "b"), {**lengths("k", "longer", "b"), "id": "q2"}]
    assert course_rules.KeyLengths.of(a_set(*two).items).near_chance
    both = [two[0], {**two[0], "id": "q2"}]
    assert not course_rules.KeyLengths.of(a_set(*both).items).near_chance


def test_a_multi_key_item_compares_its_keys_mean_length_with_the_distractors():
    item = a_set(lengths("a long key", "k", "abcd", "efgh", answer=["A", "B"])).items[0]
    assert course_rules.key_length_ratio(item) == pytest.approx(5.5 / 4)


def test_validate_flags_a_set_that_keys_the_longest_option_and_each_long_key(course, capsys):
    set_file = course / "demo-basics" / "set.yaml"
    edit(set_file, 'text: "4"\n', 'text: "4, one process for each of the four ranks"\n')
    edit(
        set_file,
        'on every rank"\n        feedback: "Yes: rank 1',
        'on every rank: rank 1\'s value, copied to rank 0"\n        feedback: "Yes: rank 1',
    )
    code, errors = validate(course, capsys)
    assert code == 1
    assert errors == [
        f"{set_file}:{line_of(set_file, 'id: demo-basics')}:5: the key is the longest option in "
        "3 of 4 items of this set (75%, chance is 29%; keep within 15 points): picking (or "
        "avoiding) the longest option beats chance; lengthen distractors with real wrong beliefs "
        "or tighten keys",
        f"{set_file}:{line_of(set_file, '- id: broadcast-from-rank-1')}:9: the key of "
        "'broadcast-from-rank-1' is at least 1.3x as long as the mean distractor: lengthen "
        "distractors with precise wrong beliefs (no padding) or tighten the key",
        f"{set_file}:{line_of(set_file, '- id: world-size')}:9: the key of 'world-size' is at "
        "least 1.3x as long as the mean distractor: lengthen distractors with precise wrong "
        "beliefs (no padding) or tighten the key",
    ]


def test_validate_refuses_an_explain_phrasing_that_credits_a_deprecated_launcher(course, capsys):
    topic_file = course / "demo" / "topic.yaml"
    edit(topic_file, "phrasings: [every rank,", "phrasings: [Torch.distributed.launch, every rank,")
    code, errors = validate(course, capsys)
    assert code == 1
    item = line_of(topic_file, "- id: explain-all-reduce")
    assert errors == [
        f"{topic_file}:{item}:9: explain item 'explain-all-reduce' credits "
        "'Torch.distributed.launch', but torch.distributed.launch is deprecated (use torchrun): "
        "drop the phrasing"
    ]


# A lesson check a retry passes by picking the other options (issue 37).
def test_validate_refuses_a_check_whose_retry_asks_the_same_questions(course, capsys):
    topic_file = course / "demo" / "topic.yaml"
    edit(topic_file, "  check_asks: 2\n", "")
    code, errors = validate(course, capsys)
    assert code == 1
    assert errors == [
        f"{topic_file}:{line_of(topic_file, '- id: where-the-sum-goes')}:11: this lesson's check "
        "has 3 questions and a try asks 3: a retry would ask the same ones again, so picking "
        "the other options passes it; give more questions than a try asks (`check_asks: 2` or "
        "`3`)"
    ]


def test_validate_refuses_a_wrong_check_option_without_feedback_at_the_option(course, capsys):
    topic_file = course / "demo" / "topic.yaml"
    edit(
        topic_file,
        "          feedback: The call returns `None`; nothing comes back from it to read.\n",
        "",
    )
    code, errors = validate(course, capsys)
    assert code == 1
    option = line_of(topic_file, 'text: "Into its return value, on rank 0"') - 1
    assert errors == [
        f"{topic_file}:{option}:15: wrong option B of check question 'where-the-sum-goes' has no "
        "feedback: a wrong pick shows it, so say why that belief is wrong (without naming the key)"
    ]


def test_the_shipped_course_gives_nothing_away_and_keys_the_longest_option_near_chance():
    shipped = load_path(ROOT / "challenges")
    assert course_rules.lesson_problems(shipped) == []
    assert course_rules.key_length_problems(shipped) == []
    assert course_rules.deprecated_phrasing_problems(shipped) == []
    assert course_rules.lesson_check_problems(shipped) == []
