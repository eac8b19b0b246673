"""The misconception catalogue (challenges/misconceptions.yaml): each wrong belief a distractor
can stand for, in one sentence, and the lesson section, card or cheat-sheet line that corrects it.

Pure: the standard library and pydantic only.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from pydantic import Field, model_validator

from app.challenges.base import SLUG, Strict
from app.challenges.schema import Topic

FILE_NAME = "misconceptions.yaml"


class CorrectedBy(Strict):
    """What corrects a misconception: a lesson section, a card or a cheat-sheet line of a topic."""

    topic: str = Field(pattern=SLUG, max_length=100, description="The topic's id.")
    section: str | None = Field(
        default=None,
        pattern=SLUG,
        max_length=100,
        description="The id of a section of the topic's lesson (linked by its anchor).",
    )
    card: str | None = Field(
        default=None, pattern=SLUG, max_length=100, description="The id of one of its cards."
    )
    cheat_sheet: str | None = Field(
        default=None,
        min_length=3,
        max_length=200,
        description="Words found in exactly one line of its cheat sheet (that line corrects it).",
    )

    @model_validator(mode="after")
    def _one_target(self) -> CorrectedBy:
        given = [self.section, self.card, self.cheat_sheet]
        if sum(target is not None for target in given) != 1:
            raise ValueError("corrected_by names exactly one of section, card or cheat_sheet")
        return self

    @property
    def href(self) -> str:
        """Where a learner reads the correction: the section's anchor, the deck or the sheet."""
        if self.section is not None:
            return f"/topics/{self.topic}/lesson#section-{self.section}"
        if self.card is not None:
            return f"/topics/{self.topic}/flashcards"
        return f"/topics/{self.topic}/cheatsheet"


class Misconception(Strict):
    """One wrong belief, as a learner might hold it."""

    id: str = Field(pattern=SLUG, max_length=100, description="Stable id; options name it.")
    belief: str = Field(
        min_length=10,
        max_length=300,
        description="The wrong belief in one sentence, as the learner would say it.",
    )
    corrected_by: CorrectedBy = Field(description="The section, card or line that corrects it.")


class Catalogue(Strict):
    """Every misconception of the course, named by options' `misconception:`."""

    misconceptions: list[Misconception] = Field(
        min_length=1, max_length=500, description="The entries, one per wrong belief."
    )

    @model_validator(mode="after")
    def _ids_unique(self) -> Catalogue:
        ids = [entry.id for entry in self.misconceptions]
        twice = sorted({one for one in ids if ids.count(one) > 1})
        if twice:
            raise ValueError(f"misconception id(s) {twice} used twice")
        return self

    def by_id(self) -> dict[str, Misconception]:
        """The entries by id."""
        return {entry.id: entry for entry in self.misconceptions}


def unknown_problem(name: str, known: dict[str, Misconception], has_file: bool) -> str | None:
    """Why an option's `misconception: name` names nothing, or None when the catalogue has it."""
    if name in known:
        return None
    if not has_file:
        return f"misconception {name!r}: the course has no valid {FILE_NAME} to name it in"
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"misconception {name!r} is not in {FILE_NAME}{hint}"


def target_problems(
    catalogue: Catalogue, topics: Mapping[str, Topic], sheets: Mapping[str, str | None]
) -> list[tuple[int, str, str]]:
    """Each entry whose correction does not exist, as (entry index, field, message): the topic,
    its lesson section, its card, or exactly one line of its cheat sheet holding the words."""
    problems: list[tuple[int, str, str]] = []
    for index, entry in enumerate(catalogue.misconceptions):
        target = entry.corrected_by
        topic = topics.get(target.topic)
        if topic is None:
            hint = difflib.get_close_matches(target.topic, list(topics), n=1)
            said = f"; did you mean {hint[0]!r}?" if hint else ""
            problems.append((index, "topic", f"topic {target.topic!r} is no topic's id{said}"))
            continue
        if target.section is not None:
            sections = [s.id for s in topic.lesson.sections] if topic.lesson else []
            if target.section not in sections:
                hint = difflib.get_close_matches(target.section, sections, n=1)
                said = f"; did you mean {hint[0]!r}?" if hint else ""
                problems.append(
                    (index, "section", f"topic {topic.id!r} has no lesson section "
                     f"{target.section!r}{said}")
                )  # fmt: skip
        elif target.card is not None:
            cards = [card.id for card in topic.cards]
            if target.card not in cards:
                hint = difflib.get_close_matches(target.card, cards, n=1)
                said = f"; did you mean {hint[0]!r}?" if hint else ""
                problems.append(
                    (index, "card", f"topic {topic.id!r} has no card {target.card!r}{said}")
                )
        elif target.cheat_sheet is not None:
            lines = (sheets.get(topic.id) or "").splitlines()
            found = sum(target.cheat_sheet in line for line in lines)
            if found != 1:
                problems.append(
                    (index, "cheat_sheet", f"{found} lines of topic {topic.id!r}'s cheat sheet "
                     f"hold {target.cheat_sheet!r}: name words found in exactly one")
                )  # fmt: skip
    return problems
