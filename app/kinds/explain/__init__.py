"""explain: the learner explains in their own words; the answer is scored against key concepts.

Each concept has author-given phrasings, matched clause by clause after lemmatising, with
negation handling (see matching.py). Each concept gets a verdict: credited, opposite, unsure or
missing; only credited concepts count. The learner is shown the sentence behind each verdict,
then the model answer to compare. Explain items live in a topic's `items:` (free text does not
fit a timed set).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from app.challenges.base import Category, ItemBase, Strict
from app.kinds.explain.matching import Concept, ConceptMatch, Verdict, score
from app.kinds.spec import Kind

MAX_ANSWER_CHARS = 4000


class ConceptSpec(Strict):
    """One key concept an explanation should state, with the ways a learner may say it."""

    name: str = Field(min_length=1, max_length=120, description="Shown to the learner.")
    phrasings: list[str] = Field(
        min_length=1,
        max_length=30,
        description="Phrasings that state the concept; matched word by word after lemmatising, "
        "in any order, within one clause, with negation respected (write a negative phrasing "
        "to require one). A phrasing of one or two content words credits only beside another "
        "word of its concept in the same clause.",
    )


class ExplainItem(ItemBase):
    """A free-text explanation scored against key concepts."""

    kind: Literal["explain"] = Field(description="explain")
    category: Category = Field(default=Category.CONCEPTUAL, description="What the item exercises.")
    concepts: list[ConceptSpec] = Field(
        min_length=1, max_length=10, description="The key concepts a good answer states."
    )
    model_answer: str = Field(min_length=1, description="Shown after answering (Markdown).")
    pass_concepts: int | None = Field(
        default=None,
        ge=1,
        description="Concepts needed to count as right (for review scheduling); "
        "default: three quarters of them, rounded up.",
    )

    @model_validator(mode="after")
    def _pass_within_concepts(self) -> ExplainItem:
        if self.pass_concepts is not None and self.pass_concepts > len(self.concepts):
            raise ValueError(
                f"pass_concepts {self.pass_concepts} exceeds the {len(self.concepts)} concepts"
            )
        # The model answer is the proof that the phrasings work: it must cover every concept.
        missed = [match.concept for match in self.score(self.model_answer) if not match.covered]
        if missed:
            raise ValueError(
                f"the model answer does not cover concept(s) {missed}: add a phrasing it uses, "
                "or say it in the model answer"
            )
        return self

    @property
    def needed(self) -> int:
        """How many concepts count as a right answer."""
        return self.pass_concepts or math.ceil(len(self.concepts) * 3 / 4)

    def score(self, answer: str) -> list[ConceptMatch]:
        """The verdict on each concept, with the sentence behind it."""
        concepts = [Concept(c.name, tuple(c.phrasings)) for c in self.concepts]
        return score(answer, concepts)


def parse_answer(item: ExplainItem, values: Sequence[str], seed: str | None = None) -> str | None:
    """One non-empty text of at most MAX_ANSWER_CHARS characters."""
    if len(values) != 1:
        return None
    text = values[0].strip()
    return text if 0 < len(text) <= MAX_ANSWER_CHARS else None


def is_correct(item: ExplainItem, answer: str) -> bool:
    """Enough concepts credited (an unsure one does not count)."""
    return sum(match.covered for match in item.score(answer)) >= item.needed


def view(
    item: ExplainItem, last_answer: str | None, closed: bool, seed: str | None = None
) -> dict[str, object]:
    """How many concepts there are; once answered, the verdict on each, the sentence behind it,
    and the model answer."""
    shown: dict[str, object] = {"concept_count": len(item.concepts), "needed": item.needed}
    if last_answer is not None and closed:
        matches = item.score(last_answer)
        shown["matches"] = [
            {
                "concept": match.concept,
                "covered": match.covered,
                "verdict": str(match.verdict),
                "sentence": match.sentence,
            }
            for match in matches
        ]
        shown["covered"] = sum(match.covered for match in matches)
        shown["unsure"] = sum(match.verdict is Verdict.UNSURE for match in matches)
    if closed:
        shown["model_answer"] = item.model_answer
    return shown


KIND = Kind(
    name="explain",
    title="Explain it",
    model=ExplainItem,
    parse_answer=parse_answer,
    is_correct=is_correct,
    view=view,
    in_sets=False,
)
