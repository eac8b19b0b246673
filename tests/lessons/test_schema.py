"""The lesson schema and its loading: a broken lesson is a file:line:col error, a good one loads
with its snippets, and each example is the proof `ranklab verify` runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from app.challenges.base import RankExpectation, RankOutcome
from app.challenges.loader import load_path
from app.config import ROOT
from app.lessons.schema import Example, Lesson, Prediction
from tests.conftest import FIXTURES

LESSONS = FIXTURES / "lessons"


def copy_of_the_drill(tmp_path: Path) -> Path:
    folder = tmp_path / "lessons"
    shutil.copytree(LESSONS, folder)
    return folder


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_a_prediction_is_either_a_choice_or_a_rank():
    with pytest.raises(ValidationError, match="either options"):
        Prediction(rank=1, options=[{"id": "A", "text": "a"}, {"id": "B", "text": "b"}])
    with pytest.raises(ValidationError, match="answer must name"):
        Prediction(prompt="?", options=[{"id": "A", "text": "a"}, {"id": "B", "text": "b"}])
    assert Prediction(rank=0).question() == "What will rank 0 print?"


def test_an_example_shows_every_rank_or_all_and_its_proof_claims_exactly_that():
    launch = {"nproc": 2, "backend": "gloo"}
    with pytest.raises(ValidationError, match="output gives each rank"):
        Example(id="e", code="print(1)", launch=launch, predict={"rank": 0}, output={"0": "1\n"})
    with pytest.raises(ValidationError, match="is not a rank of 2"):
        Example(id="e", code="x", launch=launch, predict={"rank": 2}, output={"all": "1\n"})
    example = Example(
        id="e", code="x", launch=launch, predict={"rank": 1}, output={"0": "a\n", "1": "b\n"}
    )
    proof = example.as_proof()
    assert proof.outcome.ranks == {
        "0": RankExpectation(stdout="a\n"),
        "1": RankExpectation(stdout="b\n"),
    }
    assert proof.outcome.hangs is False and proof.launch.nproc == 2
    assert example.shown(1) == "b\n"


def test_an_example_says_how_a_rank_ends_when_not_normally_and_its_proof_claims_it():
    launch = {"nproc": 2, "backend": "gloo", "timeout_s": 3}
    shown = {"0": "a\n", "1": "b\n"}
    choice = {"prompt": "?", "options": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}]}
    predict = {**choice, "answer": "A"}

    def example(ends: dict) -> Example:
        return Example(id="e", code="x", launch=launch, predict=predict, output=shown, ends=ends)

    hung = example({"all": {"status": "hangs"}}).as_proof().outcome
    assert hung.hangs is True
    assert hung.ranks == {
        "0": RankExpectation(stdout="a\n", status=RankOutcome.HANGS),
        "1": RankExpectation(stdout="b\n", status=RankOutcome.HANGS),
    }
    raising = (
        example({"1": {"status": "raises", "exception": "RuntimeError", "message_regex": "closed"}})
        .as_proof()
        .outcome
    )
    assert raising.hangs is False
    assert raising.ranks == {
        "0": RankExpectation(stdout="a\n", status=RankOutcome.RETURNS),
        "1": RankExpectation(
            stdout="b\n", status=RankOutcome.RAISES, exception="RuntimeError",
            message_regex="closed",
        ),
    }  # fmt: skip

    bad = [
        ({"1": {"status": "raises"}}, "names its exception"),
        ({"1": {"status": "hangs", "exception": "RuntimeError"}}, "raises nothing"),
        ({"1": {"status": "returns"}}, "status"),  # normal is what `ends:` leaves out
        ({"1": {"status": "killed"}}, "status"),
        ({"2": {"status": "hangs"}}, "ends names ranks"),
        ({"all": {"status": "hangs"}, "0": {"status": "hangs"}}, "ends names ranks"),
        ({"1": {"status": "hangs", "stdout": "b"}}, "stdout"),  # output: says what it prints
    ]
    for ends, message in bad:
        with pytest.raises(ValidationError, match=message):
            example(ends)


def test_the_drill_lesson_loads_with_its_snippets():
    report = load_path(LESSONS)
    assert report.ok, [str(error) for error in report.errors]
    (loaded,) = report.topics
    assert loaded.topic.lesson is not None
    assert set(loaded.lesson_code) == {"typed-sum", "chosen-sum", "hung-ranks", "raising-rank"}
    assert "all_reduce(t)" in loaded.lesson_code["typed-sum"]  # read from sum.py


def test_a_broken_lesson_is_reported_at_its_file_line_and_column(tmp_path):
    folder = copy_of_the_drill(tmp_path)
    topic = folder / "topic.yaml"
    replace_in(topic, '            "1": "rank 1: 3.0\\n"\n', "")  # rank 1's output left out
    report = load_path(folder)
    (error,) = report.errors
    # Placed at the example that is wrong: its first line, "- id: typed-sum".
    line = topic.read_text().splitlines().index("        - id: typed-sum") + 1
    assert (error.path, error.line, error.column) == (str(topic), line, 11), str(error)
    assert "output gives each rank's stdout" in error.message


def test_a_lesson_snippet_file_that_is_missing_is_named_where_it_is_written(tmp_path):
    folder = copy_of_the_drill(tmp_path)
    topic = folder / "topic.yaml"
    replace_in(topic, "          code_file: sum.py", "          code_file: missing.py")
    report = load_path(folder)
    (error,) = report.errors
    line = topic.read_text().splitlines().index("          code_file: missing.py") + 1
    assert (error.path, error.line, error.column) == (str(topic), line, 11), str(error)
    assert "code_file 'missing.py' not found beside topic.yaml" in error.message


def test_the_shipped_lessons_load():
    report = load_path(ROOT / "challenges")
    assert report.ok, [str(error) for error in report.errors]
    with_lessons = {t.topic.id for t in report.topics if t.topic.lesson is not None}
    assert {
        "collectives",
        "process-groups",
        "deadlocks",
        "join",
        "unused-parameters",
    } <= with_lessons


def test_a_check_pool_says_how_many_a_try_asks_and_rereads_name_real_sections():
    lesson = yaml.safe_load((FIXTURES / "lesson-pool" / "topic.yaml").read_text())["lesson"]
    assert Lesson.model_validate(lesson).asks == 2
    with pytest.raises(ValidationError, match="say how many a try asks"):
        Lesson.model_validate({**lesson, "check_asks": None})
    with pytest.raises(ValidationError, match="no section"):
        Lesson.model_validate({**lesson, "reread": {"sum-where": "nowhere"}})
    with pytest.raises(ValidationError, match="no check question"):
        Lesson.model_validate({**lesson, "reread": {"nothing": "in-place"}})
