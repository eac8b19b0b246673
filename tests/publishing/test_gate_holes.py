"""The one publish gate: every kind of content change is held until proven for exactly that
content, and the browser's Verify makes it publishable (real SQLite/PostgreSQL; the executor
faked at its seam, printing what each snippet's literal `print` calls print)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from app.challenges.loader import load_path
from app.verification import proofs
from tests.conftest import TEST_CHALLENGES
from tests.publishing import test_gate as gate
from tests.publishing.test_gate import content_row, draft_of, prove
from tests.support.fake_executor import PrintingExecutor
from tests.support.learner import Learner

SET = """\
id: gate-set
title: Gate set
topic: Collectives
own_topic: true
description: One item of each kind that a run proves.
badge: {name: Gatekeeper}
items:
  - id: predicted
    kind: predict_output
    category: Predict Output
    difficulty: beginner
    title: What it prints
    prompt: What does the rank print?
    code_file: predicted.py
    launch: {nproc: 1, backend: gloo, timeout_s: 10}
    explanation: It prints hi.
    options:
      - {id: A, text: "`hi`", outcome: {ranks: {all: {stdout: "hi\\n"}}}}
      - {id: B, text: "`bye`", outcome: {ranks: {all: {stdout: "bye\\n"}}}}
    answer: A
  - id: printed-number
    kind: numeric
    category: Predict Output
    difficulty: beginner
    title: The number printed
    prompt: What number does the rank print?
    code: "print(1.0)\\n"
    launch: {nproc: 1, backend: gloo}
    printed: {}
    answer: 1
    tolerance: 0
    explanation: It prints 1.0.
  - id: chosen
    kind: choice
    category: Conceptual
    difficulty: beginner
    title: A proven choice
    prompt: What does one rank print?
    options:
      - {id: A, text: "`hi`"}
      - {id: B, text: "`bye`"}
    answer: A
    explanation: It prints hi.
    proof:
      code: "print('hi')\\n"
      launch: {nproc: 1, backend: gloo, timeout_s: 20}
      outcome: {ranks: {"0": {stdout: "hi\\n"}}}
"""

CHOICE_CHECK = """\
    - id: {id}
      kind: choice
      category: Conceptual
      difficulty: beginner
      title: Check {id}
      prompt: What does one rank print?
      options:
        - {{id: A, text: "`hi`"}}
        - {{id: B, text: "`bye`"}}
      answer: A
      explanation: It prints hi.
"""

TOPIC = (
    """\
id: gate-topic
title: Gate topic
summary: A topic with a lesson example, a card's proof, a named proof and a cheat sheet.
lesson:
  title: One rank prints
  intro: One rank prints a word.
  sections:
    - id: printing
      title: Printing
      body: A rank prints.
      examples:
        - id: says-hi
          code_file: example.py
          launch: {nproc: 1, backend: gloo, timeout_s: 20}
          predict:
            prompt: What does rank 0 print?
            options:
              - {id: A, text: "`hi`"}
              - {id: B, text: "`bye`"}
            answer: A
          output:
            all: "hi\\n"
  check:
"""
    + CHOICE_CHECK.format(id="first-check")
    + CHOICE_CHECK.format(id="second-check")
    + """\
cards:
  - id: card-hi
    front: What does one rank print?
    back: "`hi`"
    proof:
      code: "print('hi')\\n"
      launch: {nproc: 1, backend: gloo, timeout_s: 20}
      outcome: {ranks: {"0": {stdout: "hi\\n"}}}
proofs:
  - id: prints-hi
    code_file: proof.py
    launch: {nproc: 1, backend: gloo, timeout_s: 20}
    outcome: {ranks: {"0": {stdout: "hi\\n"}}}
cheat_sheet: |
  # Gate topic
  - A rank prints hi. <!-- proof: prints-hi -->
"""
)

LAB = """\
id: gate-lab
title: Gate lab
topic: Collectives
own_topic: true
summary: One step.
steps:
  - id: say-yes
    title: Say yes
    instructions: Make the rank print `yes`.
    starter: "print('no')\\n"
    solution: "print('yes')\\n"
    launch: {nproc: 1, backend: gloo, timeout_s: 20}
    checks:
      - says: The rank prints yes
        expect:
          ranks:
            all: {stdout_regex: "yes"}
"""

NEW_PROOF = """\
proofs:
  - id: still-hi
    code: "print('hi')\\n"
    launch: {nproc: 1, backend: gloo, timeout_s: 20}
    outcome: {ranks: {"0": {stdout: "hi\\n"}}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The test sets, and a set, a topic and a lab with every kind of proven part, all proven."""
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES, target)
    for name, files in {
        "gate-set": {"set.yaml": SET, "predicted.py": "print('hi')\n"},
        "gate-topic": {
            "topic.yaml": TOPIC,
            "example.py": "print('hi')\n",
            "proof.py": "print('hi')\n",
        },
        "gate-lab": {"lab.yaml": LAB},
    }.items():
        (target / name).mkdir()
        for file, text in files.items():
            (target / name / file).write_text(text)
    assert load_path(target).errors == []
    prove(target)
    return target


@pytest.fixture
def executor() -> PrintingExecutor:
    return PrintingExecutor()


# The gate tests' app (on this module's folder and executor), learner and build.
build, app, learner = gate.build, gate.app, gate.learner


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def verify_draft(staff: Learner, app, kind: str, unit_id: str, path: str) -> None:
    """Verify the held draft in the browser, as its preview's Verify button does."""
    draft = draft_of(staff, path)
    started = staff.post(
        f"/staff/{kind}s/{unit_id}/verify?version={draft}", headers={"HX-Request": "true"}
    )
    assert started.status_code == 200
    job_key = f"{unit_id}@{draft}" if kind == "set" else f"{kind}:{unit_id}@{draft}"
    job = app.state.verify_jobs.get((job_key, None))
    assert job is not None and job.wait(30)
    assert job.error is None


CHANGES: dict[str, tuple[str, str, str, Callable[[Path], None]]] = {
    # name: (kind, unit id, the YAML file whose row shows it, the change)
    "predict_output snippet": (
        "set", "gate-set", "gate-set/set.yaml",
        lambda root: edit(root / "gate-set/predicted.py", "\n", "  # reworded\n"),
    ),
    "numeric key read from a run": (
        "set", "gate-set", "gate-set/set.yaml",
        lambda root: edit(root / "gate-set/set.yaml", "print(1.0)", "print(2.0)")
        or edit(root / "gate-set/set.yaml", "answer: 1\n", "answer: 2\n"),
    ),
    "set item's proof snippet": (
        "set", "gate-set", "gate-set/set.yaml",
        lambda root: edit(root / "gate-set/set.yaml", "print('hi')", "print('hi')  # again"),
    ),
    "lesson example snippet": (
        "topic", "gate-topic", "gate-topic/topic.yaml",
        lambda root: edit(root / "gate-topic/example.py", "\n", "  # reworded\n"),
    ),
    "named proof snippet": (
        "topic", "gate-topic", "gate-topic/topic.yaml",
        lambda root: edit(root / "gate-topic/proof.py", "\n", "  # reworded\n"),
    ),
    "card's proof": (
        "topic", "gate-topic", "gate-topic/topic.yaml",
        lambda root: edit(root / "gate-topic/topic.yaml", "print('hi')", "print('hi')  # card"),
    ),
    "cheat-sheet line with its proof": (
        "topic", "gate-topic", "gate-topic/topic.yaml",
        lambda root: edit(root / "gate-topic/topic.yaml", "proofs:\n", NEW_PROOF) or edit(
            root / "gate-topic/topic.yaml",
            "prints-hi -->\n",
            "prints-hi -->\n  - It still prints hi. <!-- proof: still-hi -->\n",
        ),
    ),
    "lab step's solution": (
        "lab", "gate-lab", "gate-lab/lab.yaml",
        lambda root: edit(root / "gate-lab/lab.yaml", "print('yes')", "print('yes')  # again"),
    ),
    "lab check": (
        "lab", "gate-lab", "gate-lab/lab.yaml",
        lambda root: edit(root / "gate-lab/lab.yaml", '"yes"}', '"y+es"}'),
    ),
}  # fmt: skip


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_is_held_until_proven_and_published_after_verify_in_the_browser(
    change, staff, folder, app
):
    kind, unit_id, path, make = CHANGES[change]
    make(folder)
    staff.post("/staff/content/reload")
    row = content_row(staff, path)
    assert "v2 held</span>: not yet verified" in row and "live: v1" in row, row
    verify_draft(staff, app, kind, unit_id, path)
    staff.post("/staff/content/reload")
    row = content_row(staff, path)
    assert "live: v2, proven" in row and "held" not in row, row


def test_b1_a_numeric_key_that_proofs_json_fails_is_held_not_published(staff, learner, folder):
    set_file = folder / "gate-set" / "set.yaml"
    edit(set_file, "answer: 1\n", "answer: 2\n")  # the snippet still prints 1.0
    report = load_path(folder, display_root=folder.parent)
    hashes = proofs.current_hashes(report.sets, report.labs, report.topics)
    found = proofs.load(folder / proofs.FILE_NAME)
    key = proofs.item_key("gate-set", "printed-number")
    found[key] = proofs.Proof("fail", hashes[key])  # as `ranklab verify --proofs` wrote it
    proofs.save(folder / proofs.FILE_NAME, found, "2.13.0+cpu", "gloo")
    staff.post("/staff/content/reload")
    row = content_row(staff, "gate-set/set.yaml")
    assert "v2 held</span>: `printed-number` fails its Verify" in row and "live: v1" in row, row
    assert "live: v2" not in row


def test_b2_a_topic_with_a_held_draft_can_be_previewed_and_verified(staff, folder, app):
    edit(folder / "gate-topic" / "proof.py", "\n", "  # a comment\n")
    staff.post("/staff/content/reload")
    assert "v2 held" in content_row(staff, "gate-topic/topic.yaml")
    draft = draft_of(staff, "gate-topic/topic.yaml")
    assert staff.get("/staff/topics/gate-topic/preview").status_code == 200
    page = staff.get(f"/staff/topics/gate-topic/preview?version={draft}")
    assert page.status_code == 200 and "Held draft" in page.text
    verify_draft(staff, app, "topic", "gate-topic", "gate-topic/topic.yaml")  # answers 200


def test_b3_a_lesson_example_edit_is_held_and_learners_keep_the_proven_code(staff, learner, folder):
    lesson = "/topics/gate-topic/lesson"
    assert "print" in learner.get(lesson).text
    edit(folder / "gate-topic" / "example.py", "\n", "  # EDITED-EXAMPLE\n")
    staff.post("/staff/content/reload")
    row = content_row(staff, "gate-topic/topic.yaml")
    assert "v2 held</span>: not yet verified: `lesson example says-hi`" in row, row
    assert "EDITED-EXAMPLE" not in learner.get(lesson).text


@pytest.mark.parametrize(
    ("kind", "unit_id", "path", "old", "new"),
    [
        ("lab", "gate-lab", "gate-lab/lab.yaml", "print('yes')", "print('yes')  # again"),
        ("topic", "gate-topic", "gate-topic/proof.py", "\n", "  # again\n"),
    ],
    ids=["lab", "topic"],
)
def test_m1_a_held_lab_or_topic_verified_in_the_browser_is_published_by_reload(
    staff, folder, app, kind, unit_id, path, old, new
):
    edit(folder / path, old, new)
    staff.post("/staff/content/reload")
    shown = f"{unit_id}/{kind}.yaml"
    assert "v2 held</span>" in content_row(staff, shown)
    verify_draft(staff, app, kind, unit_id, shown)
    verdicts = staff.get(f"/staff/{kind}s/{unit_id}/verify?version={draft_of(staff, shown)}")
    assert re.search(r'data-verdict="pass"', verdicts.text) and 'data-verdict="fail"' not in (
        verdicts.text
    )
    staff.post("/staff/content/reload")
    row = content_row(staff, shown)
    assert "live: v2, proven" in row and "held" not in row, row
