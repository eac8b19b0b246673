"""What the lesson page shows of each example and check question, for one learner: options in
the learner's order as opaque tokens (app.kinds.order), the recorded prediction and its verdict,
the proven output per rank and, where a rank does not end normally, how it ends, in words. Pure:
no database, no web framework."""

from __future__ import annotations

from typing import Any

from app.challenges.base import Option, RankOutcome
from app.kinds import choices, order
from app.kinds.choice import ChoiceItem
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


def check_tries(lesson: Lesson, text: str | None) -> rules.CheckTries:
    """The learner's tries at the check as stored (none without a row)."""
    questions = {question.id: question for question in lesson.check}

    def is_right(question_id: str, answer: str) -> bool:
        question = questions.get(question_id)
        return question is not None and choices.is_correct(question, answer)

    return rules.CheckTries.read(text, is_right)


def drawn(lesson: Lesson, tries: rules.CheckTries, seed: str) -> list[ChoiceItem]:
    """The questions the learner's next try asks (app.lessons.rules.draw_check)."""
    pool = [question.id for question in lesson.check]
    ids = set(rules.draw_check(pool, lesson.asks, tries.missed, seed))
    return [question for question in lesson.check if question.id in ids]


def check_form(questions: list[ChoiceItem], seed: str | None) -> list[dict[str, Any]]:
    """The questions of a try as the form shows them: options in this try's order, none picked."""
    return [
        {
            "question": question,
            "q": choices.view(question, None, False, order.item_seed(seed, question.id)),
        }
        for question in questions
    ]


def last_try(
    lesson: Lesson, tries: rules.CheckTries, passed: bool, coming: list[ChoiceItem]
) -> list[dict[str, Any]]:
    """The last try, question by question: right or not; for a wrong pick what was picked, why
    it is wrong (the option's feedback) and the section to re-read. A question's explanation
    gives its key away: it shows once the check is passed, or the question was answered right,
    or the next try (`coming`) does not ask it again."""
    asked_next = {question.id for question in coming}
    numbers = {section.id: index for index, section in enumerate(lesson.sections, start=1)}
    shown = []
    for question in lesson.check:
        answer = tries.answers.get(question.id)
        if question.id not in tries.asked or answer is None:
            continue
        picked = [option for option in question.options if option.id in answer.split(",")]
        section = lesson.section(lesson.reread.get(question.id))
        shown.append(
            {
                "question": question,
                "right": choices.is_correct(question, answer),
                "picked": picked,
                "section": section,
                "section_number": numbers.get(section.id) if section is not None else None,
                "explanation": question.explanation
                if passed or choices.is_correct(question, answer) or question.id not in asked_next
                else None,
            }
        )
    return shown


def check_results(
    questions: list[ChoiceItem], form: dict[str, list[str]], seed: str | None
) -> dict[str, str] | None:
    """A try's answers as option ids by question; None unless every question is answered."""
    answers: dict[str, str] = {}
    for question in questions:
        answer = choices.parse_answer(
            question, form.get(question.id, []), order.item_seed(seed, question.id)
        )
        if answer is None:
            return None
        answers[question.id] = answer
    return answers


def wrong(questions: list[ChoiceItem], answers: dict[str, str]) -> list[str]:
    """The questions of a try answered wrong."""
    return [q.id for q in questions if not choices.is_correct(q, answers.get(q.id, ""))]


def passed(questions: list[ChoiceItem], answers: dict[str, str]) -> bool:
    """Whether every question of the try is answered right."""
    results = {q.id: not wrong([q], answers) for q in questions}
    return rules.check_passed(results, [q.id for q in questions])
