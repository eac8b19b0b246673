"""predict_output: what does this snippet print? The keyed option must match what the executor
observes across real ranks (`ranklab verify`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.challenges.base import ChoiceBase, ExecutableMixin
from app.kinds import choices
from app.kinds.spec import Kind


class PredictOutputItem(ChoiceBase, ExecutableMixin):
    """What does this snippet print? The keyed option must match what the executor observes."""

    kind: Literal["predict_output"] = Field(description="predict_output")


KIND = Kind(
    name="predict_output",
    title="Predict the output",
    model=PredictOutputItem,
    parse_answer=choices.parse_answer,
    is_correct=choices.is_correct,
    view=choices.view,
    answer_labels=choices.answer_labels,
    executable=True,
)
