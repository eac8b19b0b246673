"""Challenge items for tests: required fields filled in, the ones a test cares about given."""

from __future__ import annotations

from app.challenges.schema import DebugItem, PredictOutputItem

BASE: dict[str, object] = {
    "id": "p",
    "category": "Predict Output",
    "difficulty": "beginner",
    "title": "T",
    "prompt": "P",
    "explanation": "E",
    "code": "print(1)",
    "launch": {"nproc": 2},
    "answer": "A",
}
TWO_OUTCOMES = [
    {"id": "A", "text": "1", "outcome": {"ranks": {"all": {"stdout": "1\n"}}}},
    {"id": "B", "text": "2", "outcome": {"ranks": {"all": {"stdout": "2\n"}}}},
]


def predict_item(**fields: object) -> PredictOutputItem:
    """A predict-output item; options default to two (A keyed) with exact outputs."""
    return PredictOutputItem.model_validate(
        {**BASE, "kind": "predict_output", "options": TWO_OUTCOMES, **fields}
    )


def debug_item(**fields: object) -> DebugItem:
    """A debug item with two plain options (A keyed); give at least its `failure`."""
    options = [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}]
    return DebugItem.model_validate(
        {
            **BASE,
            "id": "d",
            "kind": "debug",
            "category": "Debug",
            "code": "x",
            "difficulty": "advanced",
            "options": options,
            **fields,
        }
    )
