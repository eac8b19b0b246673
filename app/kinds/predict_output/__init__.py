"""predict_output: what does this snippet print? The keyed option must match what the executor
observes across real ranks (`ranklab verify`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.challenges.base import ChoiceBase, ExecutableMixin, Parameterised
from app.kinds import choices


class PredictOutputItem(ChoiceBase, ExecutableMixin, Parameterised):
    """What does this snippet print? The keyed option must match what the executor observes."""

    kind: Literal["predict_output"] = Field(description="predict_output")


KIND = choices.kind("predict_output", "Predict the output", PredictOutputItem, executable=True)
