"""Check the rules a course must meet to ship, beyond loading: no guesser earns a badge one time
in a hundred, every entry a quiz draws from names its fact, every cheat-sheet line says what it
rests on. `ranklab validate` reports them at the file; the suite's tests call the same functions.

They are not load errors: a draft that breaks one still previews and serves (the fixtures of the
tests break them freely); `ranklab validate` and the shipped-content tests hold the course to them.
"""

from __future__ import annotations

from math import comb

from app.attempts import rules as attempt_rules
from app.challenges.loader import LoadedSet, LoadedTopic, LoadError, LoadReport
from app.challenges.schema import ChallengeSet, ChoiceBase, ItemBase

BADGE_CHANCE_LIMIT = 0.01  # DESIGN.md, "Guess-proof": no guessing strategy above 1%


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


def problems(report: LoadReport) -> list[LoadError]:
    """Every course rule the loaded content breaks, sorted by place."""
    found = [error for loaded in report.sets for error in guessing_problems(loaded)]
    found += fact_problems(report)
    found += [error for loaded in report.topics for error in claim_problems(loaded)]
    return sorted(found)
