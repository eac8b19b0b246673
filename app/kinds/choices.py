"""Reading, judging and showing answers of the kinds answered by picking options (choice,
predict_output, debug): shared here so each of those kinds stays a few lines."""

from __future__ import annotations

from collections.abc import Sequence

from app.challenges.base import ChoiceBase
from app.kinds import order
from app.kinds.spec import Kind


def parse_answer(item: ChoiceBase, values: Sequence[str]) -> str | None:
    """The picked letters, sorted and comma-joined; None for unknown letters or a wrong count."""
    known = {option.id for option in item.options}
    chosen = sorted(set(values))
    if not chosen or not set(chosen) <= known:
        return None
    if not item.multiple and len(chosen) != 1:
        return None
    return ",".join(chosen)


def is_correct(item: ChoiceBase, answer: str) -> bool:
    """Exactly the keyed letters."""
    return frozenset(answer.split(",")) == item.answer_ids


def view(
    item: ChoiceBase, last_answer: str | None, closed: bool, seed: str | None = None
) -> dict[str, object]:
    """Options always, in the learner's order (app.kinds.order) with the letters they see; feedback
    on the learner's own pick once made; the key once closed. Ids stay the options' own."""
    ordered = order.arrange(item.options, seed)
    letter = order.letters(ordered)
    chosen = set(last_answer.split(",")) if last_answer else set()
    shown: dict[str, object] = {
        "multiple": item.multiple,
        "options": [
            {"id": option.id, "letter": letter[option.id], "text": option.text}
            for option in ordered
        ],
        "letters": letter,
    }
    if last_answer is not None:
        # Feedback on the learner's own pick is fair once they have made it.
        shown["chosen_feedback"] = [
            {"id": option.id, "letter": letter[option.id], "feedback": option.feedback}
            for option in ordered
            if option.id in chosen and option.feedback
        ]
    if closed:
        shown["answer"] = sorted(item.answer_ids)
        shown["answer_letters"] = sorted(letter[option_id] for option_id in item.answer_ids)
        shown["all_feedback"] = [
            {"id": option.id, "letter": letter[option.id], "feedback": option.feedback}
            for option in ordered
            if option.feedback
        ]
    return shown


def answer_labels(item: ChoiceBase) -> tuple[str, ...]:
    """Answers are counted per option id (the author's letter, never a shown one)."""
    return tuple(option.id for option in item.options)


def kind(name: str, title: str, model: type[ChoiceBase], executable: bool = False) -> Kind:
    """The spec of a kind answered by picking options: these rules, its own model."""
    return Kind(
        name=name,
        title=title,
        model=model,
        parse_answer=parse_answer,
        is_correct=is_correct,
        view=view,
        answer_labels=answer_labels,
        executable=executable,
    )
