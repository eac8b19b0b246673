"""The lab schema: a lab is ordered steps, each with instructions, a starter and a reference
solution, launch settings, checks in the outcome language of predict-output items, and
optional graded questions. Pure: the standard library and pydantic only.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from app.challenges.base import SLUG, Launch, Outcome, Strict
from app.kinds import Item
from app.kinds.numeric import runs_on_verify

MAX_STEPS = 20
MAX_RANKS = 8
_WORD_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8}  # fmt: skip
# "4 ranks", "four ranks", "--nproc_per_node=4": how a question names a rank count.
_NAMED_RANKS = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight)\s+ranks\b|nproc_per_node[= ](\d+)",
    re.IGNORECASE,
)


def ranks_named(text: str) -> set[int]:
    """The rank counts a question's text names ("with 4 ranks"), within 1 to MAX_RANKS."""
    found = set()
    for words, flag in _NAMED_RANKS.findall(text):
        count = words or flag
        number = int(count) if count.isdigit() else _WORD_COUNTS[count.casefold()]
        if 1 <= number <= MAX_RANKS:
            found.add(number)
    return found


class LabLaunch(Launch):
    """How a step's code is launched; the learner may pick nproc among `nproc_choices`."""

    nproc_choices: list[int] = Field(
        default_factory=list,
        max_length=8,
        description="Rank counts the learner may choose (default: just nproc).",
    )

    @model_validator(mode="after")
    def _nproc_among_choices(self) -> LabLaunch:
        for choice in self.nproc_choices:
            if not 1 <= choice <= 8:
                raise ValueError(f"nproc choice {choice} must be between 1 and 8")
        if self.nproc_choices and self.nproc not in self.nproc_choices:
            raise ValueError(
                f"nproc {self.nproc} must be one of nproc_choices {self.nproc_choices}"
            )
        return self

    @property
    def choices(self) -> list[int]:
        """The rank counts offered, nproc first when there is no choice."""
        return sorted(set(self.nproc_choices)) or [self.nproc]


class LabCheck(Strict):
    """One claim about the learner's run, shown to them as passed or not."""

    says: str = Field(
        min_length=1, max_length=200, description="The claim as the learner reads it."
    )
    expect: Outcome = Field(
        description="What the run must show, in the outcome language of predict-output items."
    )
    nproc: list[int] = Field(
        default_factory=list,
        max_length=8,
        description="The rank counts this check is judged at, for a claim that holds at some "
        "counts only (`sum of ranks = 3` holds on 3 ranks): a run at another count does not "
        "judge it, and the page says which counts it is for. Default: every count the step's "
        "picker offers, where the claim must hold at each (verify runs every one).",
    )

    @model_serializer(mode="wrap")
    def _omit_every_count(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A check for every count dumps as it did before `nproc` existed, so its step's content
        # hash (and verify's record of it) stays as it was (as app.kinds.numeric does).
        data = handler(self)
        if isinstance(data, dict) and not self.nproc:
            data.pop("nproc", None)
        return data

    def judged_at(self, nproc: int) -> bool:
        """Whether a run on `nproc` ranks is judged by this check."""
        return not self.nproc or nproc in self.nproc


class LabStep(Strict):
    """One step: read, edit, run, pass the checks, answer the questions."""

    id: str = Field(pattern=SLUG, max_length=100, description="Stable id; drafts refer to it.")
    title: str = Field(min_length=1, max_length=120, description="The step's heading.")
    instructions: str = Field(min_length=1, description="What to do (Markdown).")
    starter: str | None = Field(default=None, description="The code the step opens with, inline.")
    starter_file: str | None = Field(
        default=None, pattern=r"^[\w./-]+\.py$", description="A .py file beside lab.yaml."
    )
    continue_previous: bool = Field(
        default=False,
        description="Open with the code the learner ended the previous step with (verify uses "
        "the previous step's solution).",
    )
    solution: str | None = Field(default=None, description="The reference solution, inline.")
    solution_file: str | None = Field(
        default=None, pattern=r"^[\w./-]+\.py$", description="A .py file beside lab.yaml."
    )
    launch: LabLaunch = Field(default_factory=LabLaunch, description="How the code is launched.")
    checks: list[LabCheck] = Field(
        min_length=1, max_length=12, description="What a run must show to pass the step."
    )
    questions: list[Item] = Field(
        default_factory=list, max_length=5, description="Graded questions to answer (any kind)."
    )
    adapted: str | None = Field(
        default=None,
        description="Shown to the learner when a GPU idea is shown on CPU ranks (Markdown).",
    )
    # Left out of dumps (exclude), as an option's `pin` is: a hint changes no proof, so adding
    # one keeps the step's content hash, and verify's record of it, as they were.
    hints: list[str] = Field(
        default_factory=list,
        max_length=5,
        exclude=True,
        description="Hints, from gentle to nearly the answer (Markdown): one more is shown after "
        "each run that fails the checks, and the solution is offered only after the last.",
    )

    @model_validator(mode="after")
    def _sources(self) -> LabStep:
        starters = [self.starter is not None, self.starter_file is not None, self.continue_previous]
        if sum(starters) != 1:
            raise ValueError("give exactly one of starter, starter_file or continue_previous")
        if (self.solution is None) == (self.solution_file is None):
            raise ValueError("give exactly one of solution or solution_file")
        ids = [question.id for question in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError(f"question ids must be unique, got {ids}")
        self._checks_cover_every_count()
        ran = [question.id for question in self.questions if runs_on_verify(question)]
        if ran:
            # Verify runs a step's solution and starter, not its questions' snippets.
            raise ValueError(
                f"question(s) {ran} have `printed:`: a numeric item proven by a run belongs "
                "in a set"
            )
        return self

    def _checks_cover_every_count(self) -> None:
        """A check names only counts the picker offers, and every count offered is judged by
        at least one check (a run no check judges would pass by pressing Run)."""
        offered = self.rank_choices
        for check in self.checks:
            stray = sorted(set(check.nproc) - set(offered))
            if stray:
                raise ValueError(
                    f"check {check.says!r} is for {_counts(stray)}, which this step does not "
                    f"offer (it offers {_counts(offered)}: launch.nproc_choices and the counts "
                    "its questions name)"
                )
        unjudged = [count for count in offered if not self.checks_for(count)]
        if unjudged:
            raise ValueError(
                f"no check judges a run on {_counts(unjudged)}, which this step offers: give a "
                "check for that count, or leave a check's `nproc` out (every count)"
            )

    def checks_for(self, nproc: int) -> list[LabCheck]:
        """The checks a run on `nproc` ranks is judged by."""
        return [check for check in self.checks if check.judged_at(nproc)]

    @property
    def rank_choices(self) -> list[int]:
        """The rank counts the picker offers: the launch's choices, plus every count a
        question of the step names (a question about 4 ranks can be tried on 4 ranks)."""
        named = {count for question in self.questions for count in ranks_named(question.prompt)}
        return sorted(set(self.launch.choices) | named)


def _counts(counts: list[int]) -> str:
    """Rank counts in words: "3 ranks", "3 or 4 ranks"."""
    words = [str(count) for count in counts]
    joined = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    return f"{joined} rank{'s' if counts != [1] else ''}"


class Lab(Strict):
    """A guided practical (a lab.yaml): ordered steps run across real ranks."""

    id: str = Field(pattern=SLUG, max_length=100, description="Stable id; progress refers to it.")
    title: str = Field(min_length=1, max_length=120, description="Shown on the topic page.")
    topic: str = Field(
        min_length=1,
        max_length=100,
        description="The topic's id (or title); a name no topic.yaml has is an error, unless "
        "`own_topic: true`.",
    )
    own_topic: bool = Field(
        default=False,
        description="true: this lab starts a topic of its own, named by `topic:`, that no "
        "topic.yaml defines (yet).",
    )
    summary: str = Field(min_length=1, description="What the lab builds (Markdown).")
    steps: list[LabStep] = Field(min_length=1, max_length=MAX_STEPS, description="In order.")

    @field_validator("steps")
    @classmethod
    def _steps_consistent(cls, steps: list[LabStep]) -> list[LabStep]:
        ids = [step.id for step in steps]
        if len(set(ids)) != len(ids):
            raise ValueError(f"step ids must be unique, got {ids}")
        if steps and steps[0].continue_previous:
            raise ValueError("the first step has no previous step to continue from")
        return steps

    def step(self, step_id: str) -> LabStep | None:
        """The step with this id."""
        return next((step for step in self.steps if step.id == step_id), None)
