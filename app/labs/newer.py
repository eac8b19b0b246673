"""What a newer version of a lab changes for a learner part-way through the version they began.

A step is unchanged when its definition, the code it opens with and its solution are all the
same: moving keeps what the learner did in it. A changed step starts over; a new step is simply
there; a removed step is gone. Pure: the standard library and the loader's types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.challenges.loader import LoadedLab
from app.labs.schema import LabStep


@dataclass(frozen=True)
class Changes:
    """The steps a newer version changed, added and removed, and whether its introduction
    (title or summary) changed."""

    changed: tuple[LabStep, ...]  # as the newer version has them
    added: tuple[LabStep, ...]
    removed: tuple[LabStep, ...]  # as the learner's version has them
    introduction: bool

    @property
    def restarted(self) -> set[str]:
        """Ids of the steps a move starts over."""
        return {step.id for step in self.changed}


def _content(loaded: LoadedLab, step: LabStep) -> tuple[Any, ...]:
    return (step.model_dump(mode="json"), loaded.starters.get(step.id),
            loaded.solutions.get(step.id))  # fmt: skip


def changes(kept: LoadedLab, newer: LoadedLab) -> Changes:
    """Compare the learner's version of a lab with a newer one, step by step (by step id)."""
    old_steps = {step.id: step for step in kept.lab.steps}
    new_ids = {step.id for step in newer.lab.steps}
    changed = tuple(
        step
        for step in newer.lab.steps
        if step.id in old_steps and _content(kept, old_steps[step.id]) != _content(newer, step)
    )
    added = tuple(step for step in newer.lab.steps if step.id not in old_steps)
    removed = tuple(step for step in kept.lab.steps if step.id not in new_ids)
    introduction = (kept.lab.title, kept.lab.summary) != (newer.lab.title, newer.lab.summary)
    return Changes(changed, added, removed, introduction)
