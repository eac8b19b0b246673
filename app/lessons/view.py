"""What the lesson page shows of each example and check question, for one learner: options in
the learner's order as opaque tokens (app.kinds.order), the recorded prediction and its verdict,
the proven output per rank and, where a rank does not end normally, how it ends, in words. Pure:
no database, no web framework."""

from __future__ import annotations

import json
from typing import Any

from app.challenges.base import Option, RankOutcome
from app.kinds import choices, order
from app.labs import readable
from app.lessons import rules
from app.lessons.models import LessonProgress
from app.lessons.schema import Example, Lesson


def prediction_options(options: list[Option], seed: str | None) -> list[dict[str, str]]:
    """A choice prediction's options in the learner's order, each with its token and letter."""
    ordered = order.arrange(options, seed)
    letter = order.letters(ordered)
    return [
        {
            "value": order.token(seed, option.id),
            "letter": letter[option.id],
            "text": option.text,
            "id": option.id,
        }
        for option in ordered
    ]


def read_prediction(
    example: Example, values: list[str], text: str | None, seed: str | None
) -> str | None:
    """The prediction as stored (an option id, or the text typed); None when it is empty or
    names no option."""
    predict = example.predict
    if predict.rank is not None:
        return text if text is not None and text.strip() else None
    ids = order.decode(values, predict.options, seed)
    known = {option.id for option in predict.options}
    return ids[0] if len(ids) == 1 and ids[0] in known else None


def ending(example: Example, rank: int) -> str | None:
    """How a rank ends, in words for the learner, where it does not end normally (else None)."""
    end = example.end(rank)
    if end is None:
        return None
    if end.status is RankOutcome.HANGS:
        return (
            f"Rank {rank} hangs: it is still waiting for the other ranks when the time limit "
            "stops the run."
        )
    # The message is said as the text it asks for, never as the regex itself.
    asked = readable.read(end.message_regex) if end.message_regex else None
    said = f", saying something like “{asked.lines[0].text}”" if asked is not None else ""
    return f"Rank {rank} raises `{end.exception}`{said}."


def example_view(
    example: Example, code: str, row: LessonProgress | None, seed: str | None
) -> dict[str, Any]:
    """One example as the page shows it: before the prediction, the form; after, the
    prediction, its verdict, the run and the proven output of every rank."""
    predict = example.predict
    options = prediction_options(predict.options, seed)
    shown: dict[str, Any] = {
        "example": example,
        "code": code,
        "question": predict.question(),
        "options": options,
        "predicted": row is not None,
        "nproc": example.launch.nproc,
        "output": [
            (rank, example.shown(rank), ending(example, rank))
            for rank in range(example.launch.nproc)
        ],
        "ends": bool(example.ends),
    }
    if row is not None:
        shown["right"] = row.correct
        if predict.rank is not None:
            shown["your_prediction"] = row.answer
            shown["truth"] = example.shown(predict.rank)
            verdict = rules.typed_verdict(example, row.answer)
            # The hint goes with a right verdict only: a row judged wrong stays as recorded.
            shown["form_hint"] = verdict.hint if verdict is not None and row.correct else None
        else:
            text = {option["id"]: option["text"] for option in options}
            shown["your_prediction"] = text.get(row.answer, row.answer)
            shown["truth"] = text.get(predict.answer or "", "")
    return shown


def stored_answers(text: str) -> dict[str, str]:
    """The check's answers as stored (JSON by question id); nothing for an unreadable value."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def check_view(lesson: Lesson, answers: dict[str, str], seed: str | None) -> list[dict[str, Any]]:
    """The check's questions, each with the learner's last answer and, once answered, the key."""
    answered = bool(answers)
    views = []
    for question in lesson.check:
        last = answers.get(question.id)
        view = choices.view(question, last, answered, order.item_seed(seed, question.id))
        views.append(
            {
                "question": question,
                "q": view,
                "right": last is not None and choices.is_correct(question, last),
                "answered": answered,
            }
        )
    return views


def check_results(
    lesson: Lesson, form: dict[str, list[str]], seed: str | None
) -> dict[str, str] | None:
    """The check's answers as option ids by question; None unless every question is answered."""
    answers: dict[str, str] = {}
    for question in lesson.check:
        answer = choices.parse_answer(
            question, form.get(question.id, []), order.item_seed(seed, question.id)
        )
        if answer is None:
            return None
        answers[question.id] = answer
    return answers


def passed(lesson: Lesson, answers: dict[str, str]) -> bool:
    """Whether every check question is answered right."""
    results = {q.id: q.id in answers and choices.is_correct(q, answers[q.id]) for q in lesson.check}
    return rules.check_passed(results, [q.id for q in lesson.check])
