"""Reading, judging and showing answers of the kinds answered by picking options (choice,
predict_output, debug): shared here so each of those kinds stays a few lines."""

from __future__ import annotations

from collections.abc import Sequence

from app.challenges.base import ChoiceBase
from app.kinds import order
from app.kinds.spec import Kind


def parse_answer(item: ChoiceBase, values: Sequence[str], seed: str | None = None) -> str | None:
    """The picked option ids, sorted and comma-joined; None for unknown values or a wrong count.
    A value is the token the showing with `seed` gave an option (app.kinds.order) or its id."""
    known = {option.id for option in item.options}
    chosen = sorted(set(order.decode(values, item.options, seed)))
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
    on the learner's own pick once made; the key once closed.

    No option id is shown (most keys are "A", so an id would give the key away): each option
    goes as its token, and the learner's pick and the key as tokens and letters. The stored
    answer (`last_answer`, option ids) is replaced by its tokens."""
    ordered = order.arrange(item.options, seed)
    letter = order.letters(ordered)
    value = {option.id: order.token(seed, option.id) for option in ordered}
    chosen = set(last_answer.split(",")) if last_answer else set()
    options: list[dict[str, object]] = [
        {
            "value": value[option.id],
            "letter": letter[option.id],
            "text": option.text,
            "chosen": option.id in chosen,
        }
        for option in ordered
    ]
    shown: dict[str, object] = {"multiple": item.multiple, "options": options}
    if last_answer is not None:
        picked = [option for option in ordered if option.id in chosen]
        shown["last_answer"] = ",".join(sorted(value[option.id] for option in picked))
        shown["last_letters"] = sorted(letter[option.id] for option in picked)
        # Feedback on the learner's own pick is fair once they have made it.
        shown["chosen_feedback"] = [
            {"letter": letter[option.id], "feedback": option.feedback}
            for option in picked
            if option.feedback
        ]
    if closed:
        for shown_option, option in zip(options, ordered, strict=True):
            shown_option["key"] = option.id in item.answer_ids
        shown["answer"] = sorted(value[option_id] for option_id in item.answer_ids)
        shown["answer_letters"] = sorted(letter[option_id] for option_id in item.answer_ids)
        shown["all_feedback"] = [
            {
                "letter": letter[option.id],
                "feedback": option.feedback,
                "chosen": option.id in chosen,
            }
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
