"""A learner's work in labs: drafts, runs, checks, questions and which steps are unlocked.

Services commit; every write starts a writer transaction (app.db.begin_write) first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.challenges.loader import LoadedLab
from app.db import begin_write
from app.errors import Conflict
from app.labs.models import LabRun, LabStepState
from app.labs.schema import LabStep
from app.modes.models import ModeAnswer

RUNNING = "running"
# A run still marked running after this long was cut off by a restart: it no longer blocks.
STALE_RUN = timedelta(minutes=3)


def states(session: Session, user_id: int, lab_id: str) -> dict[str, LabStepState]:
    """The learner's state in each step of a lab they have touched."""
    query = select(LabStepState).where(
        LabStepState.user_id == user_id, LabStepState.lab_id == lab_id
    )
    return {state.step_id: state for state in session.exec(query)}


def kept_version(session: Session, user_id: int, lab_id: str) -> str | None:
    """The lab's version the learner's progress started on (None: none kept yet)."""
    query = (
        select(LabStepState.content_version)
        .where(
            LabStepState.user_id == user_id,
            LabStepState.lab_id == lab_id,
            col(LabStepState.content_version).is_not(None),
        )
        .order_by(col(LabStepState.id))
        .limit(1)
    )
    return session.exec(query).first()


def unlocked(loaded: LoadedLab, passed: set[str]) -> list[bool]:
    """Per step: open when every step before it is passed."""
    result, open_so_far = [], True
    for step in loaded.lab.steps:
        result.append(open_so_far)
        open_so_far = open_so_far and step.id in passed
    return result


def opening_code(loaded: LoadedLab, step: LabStep, found: dict[str, LabStepState]) -> str:
    """What the editor opens with: the draft, else the starter, else (a continuing step) the
    learner's code from the step before, else that step's starter."""
    state = found.get(step.id)
    if state is not None and state.draft is not None:
        return state.draft
    starter = loaded.starters[step.id]
    if starter is not None:
        return starter
    index = [s.id for s in loaded.lab.steps].index(step.id)
    return opening_code(loaded, loaded.lab.steps[index - 1], found)


def starting_code(loaded: LoadedLab, step: LabStep, found: dict[str, LabStepState]) -> str:
    """The code the step opens with before the learner edits it: its starter, or (a continuing
    step) the learner's code from the step before."""
    return opening_code(loaded, step, {k: v for k, v in found.items() if k != step.id})


def as_it_is(code: str, start: str) -> bool:
    """Whether `code` is the step's starting code unchanged: line endings (a browser posts a
    textarea's lines with CRLF) and trailing blanks aside."""
    return _lines(code) == _lines(start)


def _lines(code: str) -> list[str]:
    return [line.rstrip() for line in code.rstrip().splitlines()]


def _state(
    session: Session,
    user_id: int,
    lab_id: str,
    step_id: str,
    now: datetime,
    version: str | None = None,
):
    begin_write(session)
    query = select(LabStepState).where(
        LabStepState.user_id == user_id,
        LabStepState.lab_id == lab_id,
        LabStepState.step_id == step_id,
    )
    state = session.exec(query).first()
    if state is None:
        state = LabStepState(
            user_id=user_id, lab_id=lab_id, step_id=step_id, updated_at=now,
            content_version=version,
        )  # fmt: skip
        session.add(state)
        try:
            session.flush()
        except IntegrityError:  # created at the same moment by another request: use it
            session.rollback()
            begin_write(session)
            state = session.exec(query).one()
    return state


def save_draft(
    session: Session,
    user_id: int,
    lab_id: str,
    step_id: str,
    code: str | None,
    now: datetime,
    version: str | None = None,
) -> None:
    """Keep the learner's code for the step (None: back to the starter), and commit; a new
    step's state keeps the lab's `version`."""
    state = _state(session, user_id, lab_id, step_id, now, version)
    state.draft, state.updated_at = code, now
    session.add(state)
    session.commit()


def start_run(
    session: Session,
    user_id: int,
    lab_id: str,
    step_id: str,
    nproc: int,
    code: str,
    now: datetime,
    version: str | None = None,
) -> LabRun:
    """Record a new run (and keep its code as the draft); one at a time per learner (409)."""
    state = _state(session, user_id, lab_id, step_id, now, version)
    busy = session.exec(
        select(LabRun.id).where(
            LabRun.user_id == user_id,
            LabRun.status == RUNNING,
            col(LabRun.started_at) > now - STALE_RUN,
        )
    ).first()
    if busy is not None:
        session.rollback()
        raise Conflict("You already have a run going: wait for it to end, or stop it.")
    state.draft, state.updated_at = code, now
    run = LabRun(
        user_id=user_id,
        lab_id=lab_id,
        step_id=step_id,
        nproc=nproc,
        code=code,
        status=RUNNING,
        started_at=now,
    )
    session.add(state)
    session.add(run)
    session.commit()
    return run


@dataclass(frozen=True)
class Finished:
    """How a run ended."""

    status: str
    result: dict[str, object] | None
    checks: list[dict[str, object]]
    passed: bool
    # False for a run of the code the step opened with ("press Run once as it is"): failing
    # its checks is what the step expects, not a try towards "Show solution".
    counts: bool = True


def finish_run(
    session: Session, run: LabRun, finished: Finished, step: LabStep, now: datetime
) -> None:
    """Record a run's end; passing checks may pass the step (with its questions), a failed
    run of the learner's own code counts towards hints and the solution. Commit."""
    begin_write(session)
    session.execute(
        update(LabRun)
        .where(col(LabRun.id) == run.id)
        .values(
            status=finished.status,
            result=None if finished.result is None else json.dumps(finished.result),
            checks=json.dumps(finished.checks),
            passed=finished.passed,
            finished_at=now,
        )
    )
    state = _state(session, run.user_id, run.lab_id, run.step_id, now)
    if state.restarted_at is not None and run.started_at < state.restarted_at:
        # Started before a move to a newer version restarted the step: its checks were the
        # old step's, so it is kept as a run but passes nothing and counts towards nothing.
        session.commit()
        return
    if finished.passed:
        state.checks_passed_at = state.checks_passed_at or now
    elif finished.counts and finished.status not in ("stopped", "unavailable", "rejected"):
        state.failed_runs += 1
    _maybe_pass(session, state, step, now)
    session.commit()


def cut_off(session: Session, run_id: int, status: str, now: datetime) -> bool:
    """Record a run still marked running, whose driver has gone away, as ended with `status`
    (unavailable, or stopped) and no checks; a run already recorded stays as it is. Commit.
    Return whether the run was still marked running."""
    begin_write(session)
    changed = session.execute(
        update(LabRun)
        .where(col(LabRun.id) == run_id, col(LabRun.status) == RUNNING)
        .values(status=status, checks=json.dumps([]), passed=False, finished_at=now)
    )
    session.commit()
    return bool(cast(CursorResult[Any], changed).rowcount)


def questions_right(
    session: Session, user_id: int, lab_id: str, step_id: str, since: datetime | None = None
) -> set[str]:
    """Ids of the step's questions the learner has answered right (since the step started
    over, if it did: see move_to())."""
    prefix = f"{step_id}/"
    query = select(ModeAnswer.item_id).where(
        ModeAnswer.user_id == user_id,
        ModeAnswer.mode == "lab",
        ModeAnswer.deck_id == lab_id,
        col(ModeAnswer.correct).is_(True),
        col(ModeAnswer.item_id).startswith(prefix),
    )
    if since is not None:
        query = query.where(col(ModeAnswer.answered_at) >= since)
    return {item[len(prefix) :] for item in session.exec(query)}


def answer_question(
    session: Session,
    user_id: int,
    topic: str,
    lab_id: str,
    step: LabStep,
    question_id: str,
    answer: str,
    correct: bool,
    now: datetime,
    version: str | None = None,
) -> ModeAnswer:
    """Keep an answer to a step's question; the last right answer may pass the step. Commit."""
    state = _state(session, user_id, lab_id, step.id, now, version)
    row = ModeAnswer(
        user_id=user_id,
        mode="lab",
        topic=topic,
        deck_id=lab_id,
        item_id=f"{step.id}/{question_id}"[:100],
        answer=answer,
        correct=correct,
        answered_at=now,
    )
    session.add(row)
    session.flush()
    _maybe_pass(session, state, step, now)
    session.commit()
    return row


def _maybe_pass(session: Session, state: LabStepState, step: LabStep, now: datetime) -> None:
    if state.passed_at is not None or state.checks_passed_at is None:
        return
    right = questions_right(session, state.user_id, state.lab_id, step.id, state.restarted_at)
    if all(question.id in right for question in step.questions):
        state.passed_at = now
        session.add(state)


def last_run(session: Session, user_id: int, lab_id: str, step_id: str) -> LabRun | None:
    """The learner's latest run of the step."""
    query = select(LabRun).where(
        LabRun.user_id == user_id, LabRun.lab_id == lab_id, LabRun.step_id == step_id
    )
    return session.exec(query.order_by(col(LabRun.id).desc()).limit(1)).first()


def run_for_user(session: Session, run_id: int, user_id: int) -> LabRun | None:
    """The learner's own run."""
    run = session.get(LabRun, run_id)
    return run if run is not None and run.user_id == user_id else None


def move_to(
    session: Session,
    user_id: int,
    lab_id: str,
    moves: tuple[str, str],
    restarted: set[str],
    now: datetime,
) -> int:
    """Move the learner's progress in a lab to `version`: steps in `restarted` (their content
    changed) start over, with no draft, no failed runs, not passed, and their questions to
    answer again; every other step keeps what was done. Commit; return the steps restarted.
    (Runs and answers stay recorded: nothing is deleted.) `moves` is (from, to): progress
    no longer on `from` (moved meanwhile, from another tab) is refused (409)."""
    begin_write(session)
    kept, version = moves
    found = states(session, user_id, lab_id).values()
    if any(state.content_version not in (kept, None) for state in found):
        session.rollback()
        raise Conflict("Your progress in this lab has moved already: look at the lab again.")
    count = 0
    for state in found:
        state.content_version, state.stayed_on = version, None
        if state.step_id in restarted:
            state.draft, state.failed_runs = None, 0
            state.checks_passed_at = state.passed_at = None
            state.restarted_at, state.updated_at = now, now
            count += 1
        session.add(state)
    session.commit()
    return count


def stay_on(session: Session, user_id: int, lab_id: str, offered: str) -> None:
    """Keep the learner on the version they began, declining the newer `offered` one. Commit."""
    begin_write(session)
    for state in states(session, user_id, lab_id).values():
        state.stayed_on = offered
        session.add(state)
    session.commit()


def stayed_on(session: Session, user_id: int, lab_id: str) -> str | None:
    """The newer version the learner chose to stay off, if any."""
    found = states(session, user_id, lab_id).values()
    return next((state.stayed_on for state in found if state.stayed_on is not None), None)
