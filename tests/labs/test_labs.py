"""Labs: lab.yaml loads with its code, every mistake is a file:line:col error, and verify
proves each step on real gloo ranks (the solution passes, the starter must fail a check)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.catalog import Catalog
from app.challenges.loader import load_path
from app.executor_client import HttpExecutorClient
from app.labs import verify as lab_verify
from app.verification.batch import ExecutorFacts, executor_facts
from app.verification.rules import Verdict
from tests.conftest import FIXTURES
from tests.support.content import edit, line_of

HELLO = FIXTURES / "labs" / "hello"


@pytest.fixture
def lab_dir(tmp_path: Path) -> Path:
    target = tmp_path / "challenges" / "hello"
    shutil.copytree(HELLO, target)
    return target


def test_a_lab_loads_with_each_steps_code_and_joins_its_topic(lab_dir: Path) -> None:
    report = load_path(lab_dir.parent)
    assert report.errors == []
    (loaded,) = report.labs
    assert [step.id for step in loaded.lab.steps] == ["print-rank", "all-reduce"]
    assert loaded.starters["print-rank"] == 'import os\nprint("hello")\n'
    assert loaded.starters["all-reduce"] is None  # continues from the learner's own code
    assert "dist.all_reduce(total)" in loaded.solutions["all-reduce"]
    # Verify opens a continuing step with the previous step's solution.
    assert loaded.starter_for_verify("all-reduce") == loaded.solutions["print-rank"]
    assert loaded.lab.steps[0].launch.choices == [1, 2, 4]
    catalog = Catalog.load(lab_dir.parent)
    topic = catalog.topic("collectives")
    assert topic is not None and [lab.lab.id for lab in topic.labs] == ["hello-ranks"]
    assert catalog.lab("hello-ranks").lab == loaded.lab  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        ("    continue_previous: true\n", "", "- id: all-reduce",
         "give exactly one of starter, starter_file or continue_previous"),
        ("    solution_file: all_reduce_solution.py", "    solution_file: missing.py",
         "solution_file", "solution_file 'missing.py' not found beside lab.yaml"),
        ("{nproc: 2, nproc_choices: [1, 2, 4]", "{nproc: 3, nproc_choices: [1, 2, 4]", "launch:",
         "nproc 3 must be one of nproc_choices [1, 2, 4]"),
        ("      - says: Rank 0 prints", "      - sayz: Rank 0 prints", "sayz",
         "unknown field 'sayz'"),
    ],
)  # fmt: skip
def test_a_broken_lab_is_reported_at_its_line(
    lab_dir: Path, old: str, new: str, needle: str, message: str
) -> None:
    path = lab_dir / "lab.yaml"
    edit(path, old, new)
    report = load_path(lab_dir.parent, display_root=lab_dir.parent.parent)
    assert report.labs == []
    found = [error for error in report.errors if message in error.message]
    assert found, report.errors
    assert (found[0].path, found[0].line) == ("challenges/hello/lab.yaml", line_of(path, needle))


def test_the_first_step_cannot_continue_from_nothing(lab_dir: Path) -> None:
    edit(lab_dir / "lab.yaml", "    starter: |\n      import os\n      print(\"hello\")\n",
         "    continue_previous: true\n")  # fmt: skip
    report = load_path(lab_dir.parent)
    assert any("the first step has no previous step" in e.message for e in report.errors)


def verify(lab_dir: Path, executor_url: str, facts: ExecutorFacts | None = None):
    (loaded,) = load_path(lab_dir.parent).labs
    client = HttpExecutorClient(executor_url)
    facts = facts or executor_facts(client)
    return {r.step_id: r for r in lab_verify.verify_labs(client, [loaded], facts)}


def test_verify_proves_each_step_on_real_ranks(lab_dir: Path, executor_url: str) -> None:
    reports = verify(lab_dir, executor_url)
    assert {step: (r.verdict, r.problems) for step, r in reports.items()} == {
        "print-rank": (Verdict.PASS, []),
        "all-reduce": (Verdict.PASS, []),
    }


def test_verify_reports_a_starter_that_already_passes_and_a_failing_solution(
    lab_dir: Path, executor_url: str
) -> None:
    path = lab_dir / "lab.yaml"
    edit(path, '      print("hello")\n',
         '      rank, world = os.environ["RANK"], os.environ["WORLD_SIZE"]\n'
         '      print(f"hello from rank {rank} of {world}")\n')  # fmt: skip
    edit(lab_dir / "all_reduce_solution.py", 'print(f"sum {total.item()}")', 'print("sum 2")')
    reports = verify(lab_dir, executor_url)
    assert reports["print-rank"].verdict is Verdict.FAIL
    assert reports["print-rank"].problems == [  # at each count its picker offers
        f"the starter already passes every check on {count}: the step could be passed by "
        "pressing Run"
        for count in ("1 rank", "2 ranks", "4 ranks")
    ]
    assert reports["all-reduce"].verdict is Verdict.FAIL
    assert any(
        problem.startswith("the solution fails “Every rank prints the sum of the ranks, 1”")
        for problem in reports["all-reduce"].problems
    )


def test_a_step_that_needs_gpus_is_reported_not_run(lab_dir: Path) -> None:
    edit(lab_dir / "lab.yaml", "{nproc: 2, backend: gloo, timeout_s: 20}",
         "{nproc: 2, backend: nccl, timeout_s: 20}")  # fmt: skip
    (loaded,) = load_path(lab_dir.parent).labs
    client = HttpExecutorClient("http://127.0.0.1:9")  # nothing listens: it must not be called
    step = loaded.lab.steps[1]
    report = lab_verify.verify_step(client, loaded, step, ExecutorFacts(0, 60.0))
    assert report.verdict is Verdict.NEEDS_GPUS
    assert report.problems == ["needs 2 GPU(s); the executor has 0"]


def test_the_rank_picker_offers_every_count_a_question_asks_about() -> None:
    from app.labs.schema import LabStep, ranks_named

    assert ranks_named("You run it with 4 ranks; then Four ranks; --nproc_per_node=8") == {4, 8}
    assert ranks_named("rank 3 prints; 12 ranks; ranks") == set()  # a rank, or out of range
    step = LabStep.model_validate(
        {
            "id": "s", "title": "S", "instructions": "Run it.", "starter": "x = 1\n",
            "solution": "x = 2\n", "launch": {"nproc": 3},
            "checks": [{"says": "It ends", "expect": {"hangs": False}}],
            "questions": [{
                "id": "q", "kind": "numeric", "category": "Conceptual",
                "difficulty": "beginner", "title": "Four", "answer": 6,
                "prompt": "You run the same script with 4 ranks. What does rank 3 print?",
                "explanation": "0 + 1 + 2 + 3.",
            }],
        }
    )  # fmt: skip
    assert step.launch.choices == [3]
    assert step.rank_choices == [3, 4]


def _step(checks: list[dict], choices: list[int]) -> dict:
    return {
        "id": "s", "title": "S", "instructions": "Run it.", "starter": "x = 1\n",
        "solution": "x = 2\n", "launch": {"nproc": choices[0], "nproc_choices": choices},
        "checks": checks,
    }  # fmt: skip


def test_a_check_names_only_counts_the_picker_offers_and_every_count_is_judged() -> None:
    from pydantic import ValidationError

    from app.labs.schema import LabStep

    three = {"says": "Sum 3", "nproc": [3], "expect": {"hangs": False}}
    four = {"says": "Sum 6", "nproc": [4], "expect": {"hangs": False}}
    step = LabStep.model_validate(_step([three, four], [3, 4]))
    assert [check.says for check in step.checks_for(4)] == ["Sum 6"]
    with pytest.raises(ValidationError, match="no check judges a run on 4 ranks"):
        LabStep.model_validate(_step([three], [3, 4]))
    with pytest.raises(ValidationError, match="is for 5 ranks, which this step does not offer"):
        LabStep.model_validate(_step([three, {**four, "nproc": [4, 5]}], [3, 4]))


def test_a_check_names_only_ranks_every_count_it_is_judged_at_starts(lab_dir: Path) -> None:
    """Rank 1 does not exist on the 1 rank the picker offers: such a check says its counts."""
    path = lab_dir / "lab.yaml"
    edit(path, '            "0": {differs_across_ranks: true}',
         '            "1": {differs_across_ranks: true}')  # fmt: skip
    report = load_path(lab_dir.parent)
    assert any("rank 1 does not exist on 1 rank" in e.message for e in report.errors)
    says = "      - says: Rank 0 prints a different line from rank 1\n"
    edit(path, says, says + "        nproc: [2, 4]\n")
    assert load_path(lab_dir.parent).errors == []


def test_verify_proves_every_rank_count_a_step_offers(lab_dir: Path, executor_url: str) -> None:
    """The all-reduce step offered on 2 and 3 ranks: its check for a sum of 1 fails a correct
    solution on 3 ranks, until that check says it is for 2 and another judges 3."""
    path = lab_dir / "lab.yaml"
    launch = "    launch: {nproc: 2, backend: gloo, timeout_s: 20}\n"
    edit(path, launch, launch.replace("nproc: 2,", "nproc: 2, nproc_choices: [2, 3],"))
    (loaded,) = load_path(lab_dir.parent).labs
    client = HttpExecutorClient(executor_url)
    facts = executor_facts(client)
    step = loaded.lab.steps[1]
    report = lab_verify.verify_step(client, loaded, step, facts, repeats=1)
    assert report.verdict is Verdict.FAIL
    assert report.problems[0].startswith(
        "the solution fails “Every rank prints the sum of the ranks, 1” on 3 ranks: "
    )
    edit(path, '            all: {stdout_regex: "(?s).*sum 1"}\n',
         '            all: {stdout_regex: "(?s).*sum 1"}\n        nproc: [2]\n'
         "      - says: Every rank prints the sum of the ranks, 3\n        nproc: [3]\n"
         '        expect: {ranks: {all: {stdout_regex: "(?s).*sum 3"}}}\n')  # fmt: skip
    (loaded,) = load_path(lab_dir.parent).labs
    report = lab_verify.verify_step(client, loaded, loaded.lab.steps[1], facts, repeats=1)
    assert (report.verdict, report.problems) == (Verdict.PASS, [])


def test_a_numeric_key_reads_as_a_program_prints_it() -> None:
    from app.kinds.numeric import NumericItem, view

    item = NumericItem.model_validate({
        "id": "q", "kind": "numeric", "category": "Conceptual", "difficulty": "beginner",
        "title": "Four", "prompt": "Sum?", "answer": 6, "explanation": "0 + 1 + 2 + 3.",
    })  # fmt: skip
    shown = view(item, "6.0", closed=True)
    assert (str(shown["answer"]), shown["last_answer"], shown["tolerance"]) == ("6", "6", 0)
    half = item.model_copy(update={"answer": 1.5})
    assert str(view(half, "1.5", closed=True)["answer"]) == "1.5"
