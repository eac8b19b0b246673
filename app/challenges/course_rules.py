"""Check the rules a course must meet to ship, beyond loading: no guesser earns a badge one time
in a hundred, every entry a quiz draws from names its fact, every cheat-sheet line says what it
rests on, no lesson example gives away a set item of its topic, "pick the longest option"
beats no set, and no lesson check is passed by trying the other options. `ranklab validate`
reports them at the file; the suite's tests call the same functions.

They are not load errors: a draft that breaks one still previews and serves (the fixtures of the
tests break them freely); `ranklab validate` and the shipped-content tests hold the course to them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

from app.attempts import rules as attempt_rules
from app.challenges.loader import LoadedSet, LoadedTopic, LoadError, LoadReport
from app.challenges.schema import ChallengeSet, ChoiceBase, ItemBase
from app.lessons.schema import Example

BADGE_CHANCE_LIMIT = 0.01  # DESIGN.md, "Guess-proof": no guessing strategy above 1%
# "Pick the longest option" (issue 35): how far above or below chance a set's share of items
# whose key is the longest option may be, and how much longer than the mean distractor a key
# may be before the item is flagged.
KEY_LONGEST_MARGIN = 0.15
KEY_LENGTH_RATIO = 1.3


def item_odds(item: ItemBase) -> tuple[float, float]:
    """The best guesser's chance at an item: right at the first try, and right at a later one.

    Unpinned options are shuffled for each learner, so a guesser who knows nothing does best by
    taking the pinned keys (their place never changes) and picking among the shuffled options
    one combination it has not tried yet at each try. A numeric item counts as known: the worst
    case. (tests/attempts/test_guessing.py plays real pickers against the same bound.)"""
    if not isinstance(item, ChoiceBase):
        return 1.0, 0.0
    shuffled = [option for option in item.options if option.pin is None]
    hidden_keys = sum(option.id in item.answer_ids for option in shuffled)
    combinations = comb(len(shuffled), hidden_keys)
    return 1 / combinations, (min(item.attempts, combinations) - 1) / combinations


def badge_chance(challenge_set: ChallengeSet) -> float:
    """The chance that the best guesser earns this set's badge in one attempt (exact)."""
    total = len(challenge_set.items)
    # chances[f]: every item so far right, f of them at the first try.
    chances = [1.0]
    for item in challenge_set.items:
        first, later = item_odds(item)
        following = [0.0] * (len(chances) + 1)
        for first_tries, chance in enumerate(chances):
            following[first_tries + 1] += chance * first
            following[first_tries] += chance * later
        chances = following
    return sum(
        chance
        for first_tries, chance in enumerate(chances)
        if attempt_rules.Score(correct=total, total=total, first_try=first_tries).perfect
    )


def guessing_problems(loaded: LoadedSet) -> list[LoadError]:
    """A set whose badge guessing earns one time in a hundred or more, at its `id:`."""
    chance = badge_chance(loaded.challenge_set)
    if chance < BADGE_CHANCE_LIMIT:
        return []
    return [
        LoadError(
            loaded.path,
            *loaded.id_at,
            f"guessing earns this set's badge {chance:.2%} of the time (the limit is "
            f"{BADGE_CHANCE_LIMIT:.0%}): add items, options or keys to pick (several right "
            "options), or unpin a pinned key",
        )
    ]


def _quizzed(item: ItemBase) -> bool:
    # Explain-it items are asked in their own mode, never drawn by a quiz, review or day.
    return getattr(item, "kind", None) != "explain"


def _no_fact(path: str, where: tuple[int, int], what: str, entry_id: str) -> LoadError:
    return LoadError(
        path,
        *where,
        f"{what} {entry_id!r} names no fact: add `fact: a-slug` for the one fact it asks, so "
        "no quiz, review or flashcard day asks it twice",
    )


def fact_problems(report: LoadReport) -> list[LoadError]:
    """Every card and quiz-drawn item (all but explain-it) without a `fact:`, at its `id:`."""
    problems = [
        _no_fact(loaded.path, loaded.entry_at.get(item.id, (1, 1)), "item", item.id)
        for loaded in report.sets
        for item in loaded.challenge_set.items
        if item.fact is None and _quizzed(item)
    ]
    for loaded_topic in report.topics:
        topic = loaded_topic.topic
        entries: list[tuple[str, ItemBase]] = [("card", card) for card in topic.cards]
        entries += [("item", item) for item in topic.items if _quizzed(item)]
        problems += [
            _no_fact(loaded_topic.path, loaded_topic.entry_at.get(entry.id, (1, 1)), what, entry.id)
            for what, entry in entries
            if entry.fact is None
        ]
    return problems


def claim_problems(loaded: LoadedTopic) -> list[LoadError]:
    """Every cheat-sheet line with no proof, source or nofact marker, at the line."""
    path, first_line = loaded.claims_in
    return [
        LoadError(
            path,
            first_line + claim.line,
            claim.column,
            "this cheat-sheet line says nothing of what it rests on: end it with "
            "<!-- proof: ID -->, <!-- source: URL-or-torch-path torch=VERSION --> or, for a "
            "line that states no torch behaviour, <!-- nofact -->",
        )
        for claim in loaded.claims
        if claim.marker is None
    ]


# Launchers and APIs an explain-it answer may not earn credit for naming: torch deprecates them.
DEPRECATED_PHRASINGS = {
    # torch/distributed/launch.py, torch 2.13: main() warns "The module torch.distributed.launch
    # is deprecated" (FutureWarning) and names torchrun.
    "torch.distributed.launch": "torchrun",
}


def deprecated_phrasing_problems(report: LoadReport) -> list[LoadError]:
    """Every explain-it phrasing that credits a deprecated API, at the item's `id:`."""
    places: list[tuple[str, dict[str, tuple[int, int]], ItemBase]] = [
        (loaded.path, loaded.entry_at, item)
        for loaded in report.sets
        for item in loaded.challenge_set.items
    ]
    places += [
        (topic.path, topic.entry_at, item) for topic in report.topics for item in topic.topic.items
    ]
    found = []
    for path, entry_at, item in places:
        for concept in getattr(item, "concepts", []):
            for phrasing in concept.phrasings:
                for old, new in DEPRECATED_PHRASINGS.items():
                    if old in phrasing.lower():
                        found.append(
                            LoadError(
                                path,
                                *entry_at.get(item.id, (1, 1)),
                                f"explain item {item.id!r} credits {phrasing!r}, but {old} is "
                                f"deprecated (use {new}): drop the phrasing",
                            )
                        )
    return found


def _code_lines(code: str) -> tuple[str, ...]:
    # Comments and blank lines aside: a copy with a reworded comment is still the same snippet.
    lines = (line.rstrip() for line in code.splitlines())
    return tuple(line for line in lines if line.strip() and not line.lstrip().startswith("#"))


def _same_stdout(shown: str, claimed: str) -> bool:
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.rstrip().splitlines()]

    return bool(shown.strip()) and lines(shown) == lines(claimed)


def _keyed_stdout(item: ItemBase) -> list[tuple[str, str]]:
    """(rank or "all", stdout) of every keyed option's outcome claim."""
    if not isinstance(item, ChoiceBase):
        return []
    claims = []
    for option in item.options:
        outcome = getattr(option, "outcome", None)
        if option.id in item.answer_ids and outcome is not None:
            claims += [
                (rank, claim.stdout) for rank, claim in outcome.ranks.items() if claim.stdout
            ]
    return claims


def gives_away(example: Example, example_code: str, item: ItemBase, item_code: str | None) -> str:
    """How a lesson example gives away a set item ("" when it does not): the same snippet,
    or a rank printing the item's keyed output or its printed number."""
    if item_code is not None and _code_lines(item_code) == _code_lines(example_code):
        return "runs the same snippet as"
    ranks = range(example.launch.nproc)
    for rank, stdout in _keyed_stdout(item):
        shown = [example.shown(n) for n in ranks if rank in ("all", str(n))]
        if any(_same_stdout(text, stdout) for text in shown):
            return "prints the keyed output of"
    printed = getattr(item, "printed", None)
    if printed is not None and printed.rank < example.launch.nproc:
        match = re.search(printed.regex, example.shown(printed.rank))
        try:
            value = float(match.group(1)) if match else None
        except ValueError:
            value = None
        answer = float(getattr(item, "answer", math.nan))
        if value is not None and abs(value - answer) <= getattr(item, "tolerance", 0):
            return "prints the number that answers"
    return ""


def _topics_by_name(report: LoadReport) -> dict[str, LoadedTopic]:
    named = {loaded.topic.title: loaded for loaded in report.topics}
    return {**named, **{loaded.topic.id: loaded for loaded in report.topics}}


def lesson_problems(report: LoadReport) -> list[LoadError]:
    """Every lesson example that shows a set item of its topic (same snippet or same printed
    answer), at the example's `id:`: the badge would measure recall of the lesson."""
    topics = _topics_by_name(report)
    found = []
    for loaded in report.sets:
        topic = topics.get(loaded.challenge_set.topic)
        if topic is None or topic.topic.lesson is None:
            continue
        for _section, example in topic.topic.lesson.examples():
            code = topic.lesson_code.get(example.id, "")
            for item in loaded.challenge_set.items:
                how = gives_away(example, code, item, loaded.code.get(item.id))
                if how:
                    found.append(
                        LoadError(
                            topic.path,
                            *topic.lesson_at.get(example.id, topic.id_at),
                            f"lesson example {example.id!r} {how} set item {item.id!r} "
                            f"({loaded.path}): give the lesson its own snippet and numbers",
                        )
                    )
    return found


def _length(text: str) -> int:
    return len(text.strip())


def key_longest(item: ChoiceBase) -> bool:
    """Whether a key is longer than every distractor (a tie leaves the guesser to chance)."""
    distractors = [_length(o.text) for o in item.options if o.id not in item.answer_ids]
    longest_key = max(_length(o.text) for o in item.options if o.id in item.answer_ids)
    return longest_key > max(distractors, default=0)


def key_length_ratio(item: ChoiceBase) -> float:
    """The keys' mean length over the distractors' mean length."""
    keys = [_length(o.text) for o in item.options if o.id in item.answer_ids]
    distractors = [_length(o.text) for o in item.options if o.id not in item.answer_ids]
    if not distractors:
        return 1.0
    return (sum(keys) / len(keys)) / max(sum(distractors) / len(distractors), 1)


@dataclass(frozen=True)
class KeyLengths:
    """How often a group of questions keys its longest option, against a guesser's chance."""

    items: int
    key_longest: int
    chance: float  # the mean of keys / options: how often the longest would be a key by chance
    long_keys: tuple[str, ...]  # items whose key is KEY_LENGTH_RATIO x the mean distractor

    @classmethod
    def of(cls, questions: Sequence[ItemBase]) -> KeyLengths:
        """Count the choice questions among these."""
        choices = [item for item in questions if isinstance(item, ChoiceBase)]
        return cls(
            items=len(choices),
            key_longest=sum(key_longest(item) for item in choices),
            chance=(
                sum(len(item.answer_ids) / len(item.options) for item in choices) / len(choices)
                if choices
                else 0.0
            ),
            long_keys=tuple(
                item.id for item in choices if key_length_ratio(item) >= KEY_LENGTH_RATIO
            ),
        )

    @property
    def near_chance(self) -> bool:
        """Within KEY_LONGEST_MARGIN of chance, or the count nearest to it (a set of three
        can only be 0, 33 or 67 %)."""
        if not self.items:
            return True
        expected = self.chance * self.items
        nearest = {math.floor(expected), math.ceil(expected)}
        share = self.key_longest / self.items
        return abs(share - self.chance) <= KEY_LONGEST_MARGIN or self.key_longest in nearest


def _key_length_errors(
    path: str,
    where: tuple[int, int],
    what: str,
    questions: Sequence[ItemBase],
    item_at: dict[str, tuple[int, int]],
) -> list[LoadError]:
    lengths = KeyLengths.of(questions)
    found = []
    if not lengths.near_chance:
        found.append(
            LoadError(
                path,
                *where,
                f"the key is the longest option in {lengths.key_longest} of {lengths.items} "
                f"items of {what} ({lengths.key_longest / lengths.items:.0%}, chance is "
                f"{lengths.chance:.0%}; keep within {KEY_LONGEST_MARGIN * 100:.0f} points): "
                "picking (or avoiding) the longest option beats chance; lengthen distractors "
                "with real wrong beliefs or tighten keys",
            )
        )
    found += [
        LoadError(
            path,
            *item_at.get(item_id, where),
            f"the key of {item_id!r} is at least {KEY_LENGTH_RATIO}x as long as the mean "
            "distractor: lengthen distractors with precise wrong beliefs (no padding) or "
            "tighten the key",
        )
        for item_id in lengths.long_keys
    ]
    return found


def key_length_problems(report: LoadReport) -> list[LoadError]:
    """Sets and lesson checks where picking the longest option beats chance, at their `id:`,
    and each item whose key is much longer than its distractors, at the item."""
    found = []
    for loaded in report.sets:
        items = loaded.challenge_set.items
        found += _key_length_errors(loaded.path, loaded.id_at, "this set", items, loaded.entry_at)
    for topic in report.topics:
        if topic.topic.lesson is not None:
            found += _key_length_errors(
                topic.path,
                topic.id_at,
                "this lesson's check",
                topic.topic.lesson.check,
                topic.lesson_at,
            )
    return found


def lesson_check_problems(report: LoadReport) -> list[LoadError]:
    """Lesson checks that a retry passes by picking the other options (issue 37): a pool no
    larger than a try asks, at the check's first question, and a wrong option with no
    `feedback:`, at the option."""
    found = []
    for topic in report.topics:
        lesson = topic.topic.lesson
        if lesson is None:
            continue
        first = topic.lesson_at.get(lesson.check[0].id, topic.id_at)
        if len(lesson.check) <= lesson.asks:
            found.append(
                LoadError(
                    topic.path,
                    *first,
                    f"this lesson's check has {len(lesson.check)} questions and a try asks "
                    f"{lesson.asks}: a retry would ask the same ones again, so picking the other "
                    "options passes it; give more questions than a try asks (`check_asks: 2` "
                    "or `3`)",
                )
            )
        for question in lesson.check:
            for option in question.options:
                if option.id in question.answer_ids or option.feedback:
                    continue
                found.append(
                    LoadError(
                        topic.path,
                        *topic.lesson_at.get(f"{question.id}/{option.id}", first),
                        f"wrong option {option.id} of check question {question.id!r} has no "
                        "feedback: a wrong pick shows it, so say why that belief is wrong "
                        "(without naming the key)",
                    )
                )
    return found


def problems(report: LoadReport) -> list[LoadError]:
    """Every course rule the loaded content breaks, sorted by place."""
    found = [error for loaded in report.sets for error in guessing_problems(loaded)]
    found += fact_problems(report)
    found += [error for loaded in report.topics for error in claim_problems(loaded)]
    found += lesson_problems(report)
    found += deprecated_phrasing_problems(report)
    found += key_length_problems(report)
    found += lesson_check_problems(report)
    return sorted(found)
