"""A topic's lesson (the `lesson:` block of topic.yaml): short Markdown sections, each with
runnable examples in "predict, then run" form, and a short check at the end.

Every example states the output each rank prints (`output:`) and, where a rank does not end
normally, how it ends (`ends:`: it raises, or it hangs): `ranklab verify` runs it as it runs a
key and fails the lesson when a run does anything else, so what a lesson shows is what the
snippet does. Pure: the standard library and pydantic only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from app.challenges.base import (
    SLUG,
    ExecutableMixin,
    InlineProof,
    Option,
    Outcome,
    RankExpectation,
    RankOutcome,
    Strict,
)
from app.kinds.choice import ChoiceItem


class Prediction(Strict):
    """What the learner commits to before the run: a short choice, or what one rank prints."""

    prompt: str | None = Field(
        default=None,
        description='The question (Markdown); with `rank:`, "What will rank N print?"',
    )
    options: list[Option] = Field(
        default_factory=list,
        max_length=6,
        description="A short choice: the options (ids A, B, …); give `answer:` too.",
    )
    answer: str | None = Field(
        default=None, pattern=r"^[A-Z]$", description="The correct option's id (with options)."
    )
    rank: int | None = Field(
        default=None,
        ge=0,
        le=7,
        description="Instead of options: the learner types what this rank prints, and is right "
        "when it matches the example's proven output for that rank.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> Prediction:
        if (self.rank is None) == (not self.options):
            raise ValueError("a prediction gives either options (with answer) or rank, not both")
        if self.options:
            ids = [option.id for option in self.options]
            if len(ids) < 2 or len(set(ids)) != len(ids):
                raise ValueError(f"a choice needs at least two options with unique ids, got {ids}")
            if self.answer is None or self.answer not in ids:
                raise ValueError(f"answer must name one of the options {ids}")
            if self.prompt is None:
                raise ValueError("a choice needs a prompt")
        elif self.answer is not None:
            raise ValueError("answer goes with options; a rank prediction is judged by output")
        return self

    def question(self) -> str:
        """The prompt as the learner reads it."""
        return self.prompt or f"What will rank {self.rank} print?"


class RankEnd(Strict):
    """How a rank ends when it does not end normally: the `status`, `exception` and
    `message_regex` of an outcome's rank claim (docs/authoring.md, "Outcomes, precisely")."""

    status: Literal[RankOutcome.RAISES, RankOutcome.HANGS] = Field(
        description="raises (an uncaught exception ends it) or hangs (still blocked in a "
        "collective when the time limit stops the run)."
    )
    exception: str | None = Field(
        default=None,
        description="With raises: the exception's class, e.g. RuntimeError (a subclass matches).",
    )
    message_regex: str | None = Field(
        default=None,
        description="With raises (optional): a regular expression searched in its message.",
    )

    @model_validator(mode="after")
    def _fits_status(self) -> RankEnd:
        if self.status is RankOutcome.RAISES and self.exception is None:
            raise ValueError("a rank that raises names its exception (exception: RuntimeError)")
        if self.status is RankOutcome.HANGS and (self.exception or self.message_regex):
            raise ValueError("a rank that hangs raises nothing: drop exception/message_regex")
        return self


class Example(ExecutableMixin):
    """A snippet the learner runs across real ranks, after predicting what it does."""

    id: str = Field(pattern=SLUG, max_length=100, description="Unique within the lesson.")
    predict: Prediction = Field(description="What the learner commits to before the run.")
    output: dict[str, str] = Field(
        description='What each rank prints (exact stdout), keyed by rank ("0", "1", …) or '
        '"all". The lesson shows it; `ranklab verify` proves it.'
    )
    ends: dict[str, RankEnd] = Field(
        default_factory=dict,
        description='How a rank ends when it does not end normally, keyed by rank ("0", "1", …) '
        'or "all": it raises, or it hangs. A rank not named ends normally.',
    )
    after: str | None = Field(
        default=None, description="Shown once the run is over: what it means (Markdown)."
    )

    @model_validator(mode="after")
    def _every_rank_shown(self) -> Example:
        keys = set(self.output)
        ranks = {str(rank) for rank in range(self.launch.nproc)}
        if keys != {"all"} and keys != ranks:
            raise ValueError(
                f'output gives each rank\'s stdout: keys {sorted(ranks)} (or just "all"), '
                f"got {sorted(keys)}"
            )
        unknown = sorted(set(self.ends) - ranks - {"all"})
        if unknown or ("all" in self.ends and len(self.ends) > 1):
            raise ValueError(
                f'ends names ranks {sorted(ranks)} (or just "all"), got {sorted(self.ends)}'
            )
        rank = self.predict.rank
        if rank is not None and rank >= self.launch.nproc:
            raise ValueError(f"predict.rank {rank} is not a rank of {self.launch.nproc}")
        return self

    def shown(self, rank: int) -> str:
        """The stdout this rank prints, as the lesson shows it."""
        return self.output.get("all", self.output.get(str(rank), ""))

    def end(self, rank: int) -> RankEnd | None:
        """How this rank ends when not normally (None: it returns)."""
        return self.ends.get("all", self.ends.get(str(rank)))

    def hangs(self) -> bool:
        """Whether the run hangs: some rank is still blocked when the time limit stops it."""
        return any(end.status is RankOutcome.HANGS for end in self.ends.values())

    def _expected(self, rank: int) -> RankExpectation:
        end = self.end(rank)
        if end is None:
            return RankExpectation(stdout=self.shown(rank), status=RankOutcome.RETURNS)
        return RankExpectation(
            stdout=self.shown(rank),
            status=end.status,
            exception=end.exception,
            message_regex=end.message_regex,
        )

    def as_proof(self) -> InlineProof:
        """The example as a proof: each rank prints exactly its output and ends as `ends:`
        says (normally when not named); the run hangs exactly when a rank does."""
        if self.ends:
            ranks = {str(rank): self._expected(rank) for rank in range(self.launch.nproc)}
        else:  # every rank ends normally: the claim as written (its proof keeps its hash)
            ranks = {key: RankExpectation(stdout=text) for key, text in self.output.items()}
        return InlineProof(
            code=self.code,
            code_file=self.code_file,
            launch=self.launch,
            outcome=Outcome(ranks=ranks, hangs=self.hangs(), order_varies=True),
        )


class Section(Strict):
    """One short section: a few paragraphs and the examples that show them."""

    id: str = Field(pattern=SLUG, max_length=100, description="Unique within the lesson.")
    title: str = Field(min_length=1, max_length=120, description="The section's heading.")
    body: str = Field(min_length=1, description="What the section teaches (Markdown).")
    examples: list[Example] = Field(
        default_factory=list, max_length=4, description="Runnable examples, predict then run."
    )
    after: str | None = Field(
        default=None, description="Markdown shown below the examples (optional)."
    )


class Lesson(Strict):
    """A topic's lesson: read it first, then practise. Completed by passing its check."""

    title: str = Field(min_length=1, max_length=120, description="The lesson's heading.")
    intro: str = Field(min_length=1, description="Who it is for and what it covers (Markdown).")
    sections: list[Section] = Field(min_length=1, max_length=12, description="In order.")
    check: list[ChoiceItem] = Field(
        min_length=2,
        max_length=9,
        description="The closing check's multiple-choice questions (the choice kind): a try "
        "asks `check_asks` of them; after a miss, the retry draws questions not missed yet "
        "while there are some.",
    )
    check_asks: int | None = Field(
        default=None,
        ge=2,
        le=3,
        description="How many questions a try of the check asks (2 or 3); by default all of "
        "`check`, which then has at most 3.",
    )
    reread: dict[str, str] = Field(
        default_factory=dict,
        description="A check question's id -> the id of the section that teaches it: a wrong "
        "pick links the learner there to re-read it.",
    )

    @model_validator(mode="after")
    def _ids_unique(self) -> Lesson:
        ids = [section.id for section in self.sections]
        ids += [example.id for section in self.sections for example in section.examples]
        ids += [question.id for question in self.check]
        twice = sorted({name for name in ids if ids.count(name) > 1})
        if twice:
            raise ValueError(f"id(s) {twice} used twice in this lesson")
        return self

    @model_validator(mode="after")
    def _check_draws(self) -> Lesson:
        if self.check_asks is None and len(self.check) > 3:
            raise ValueError(
                f"check has {len(self.check)} questions: say how many a try asks (check_asks: 3)"
            )
        if self.check_asks is not None and self.check_asks > len(self.check):
            raise ValueError(f"check_asks {self.check_asks} is more than check's questions")
        questions = {question.id for question in self.check}
        sections = {section.id for section in self.sections}
        for question_id, section_id in sorted(self.reread.items()):
            if question_id not in questions:
                raise ValueError(f"reread names {question_id!r}, which is no check question")
            if section_id not in sections:
                raise ValueError(f"reread sends {question_id!r} to {section_id!r}: no section")
        return self

    @property
    def asks(self) -> int:
        """How many check questions one try asks."""
        return self.check_asks or len(self.check)

    def section(self, section_id: str | None) -> Section | None:
        """The section with this id, if the lesson has one."""
        return next((section for section in self.sections if section.id == section_id), None)

    def examples(self) -> list[tuple[Section, Example]]:
        """Every example with its section, in reading order."""
        return [(section, example) for section in self.sections for example in section.examples]

    def example(self, example_id: str) -> Example | None:
        """The example with this id, if the lesson has one."""
        return next((ex for _section, ex in self.examples() if ex.id == example_id), None)
