"""Proofs, sources and facts: named and inline proofs load with their code, a reference to a
proof that does not exist is an error at its line with a suggestion, a source must say which
torch it was read at, a fact asked in two topics is a warning, and cheat-sheet markers are
parsed for authors and stripped for learners."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges import cheatsheet
from app.challenges.catalog import Catalog
from app.challenges.loader import load_path
from app.challenges.schema import InlineProof
from app.verification import evidence
from tests.support.content import PROVEN_CONTENT, edit, line_of

PROOFS = PROVEN_CONTENT


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """A copy of the proof fixtures that a test may break."""
    target = tmp_path / "challenges"
    shutil.copytree(PROOFS, target)
    return target


def messages(content: Path) -> list[str]:
    return [str(error) for error in load_path(content, content).errors]


def test_named_and_inline_proofs_load_with_their_code(content: Path) -> None:
    report = load_path(content, content)
    assert report.errors == []
    proven = next(t for t in report.topics if t.topic.id == "proven")
    assert sorted(proven.proof_code) == ["all-reduce-returns-none", "all-reduce-sums"]
    assert 'print("sum", t.item())' in proven.proof_code["all-reduce-sums"]  # from code_file
    card = proven.topic.entry("world-size-card")
    assert card is not None and isinstance(card.proof, InlineProof)
    assert proven.entry_proof_code == {"world-size-card": card.proof.code}
    nccl = proven.topic.entry("nccl-card")
    assert nccl is not None and nccl.source is not None and nccl.source.torch == "2.13.0"
    assert report.sets[0].challenge_set.items[0].proof == "all-reduce-returns-none"


def test_a_card_naming_a_missing_proof_is_an_error_at_the_name_with_a_suggestion(
    content: Path,
) -> None:
    edit(content / "topic.yaml", "proof: all-reduce-sums\n", "proof: all-reduce-sum\n")
    line = line_of(content / "topic.yaml", "proof: all-reduce-sum")
    assert messages(content) == [
        f"topic.yaml:{line}:12: cards.0: proof 'all-reduce-sum' is not a proof of topic "
        "'proven'; did you mean 'all-reduce-sums'?"
    ]


def test_a_set_item_naming_a_proof_its_topic_lacks_is_an_error_in_the_set(
    content: Path,
) -> None:
    edit(content / "set.yaml", "proof: all-reduce-returns-none", "proof: all-reduce-return-none")
    line = line_of(content / "set.yaml", "proof: all-reduce-return-none")
    assert messages(content) == [
        f"set.yaml:{line}:12: items.0: proof 'all-reduce-return-none' is not a proof of topic "
        "'proven'; did you mean 'all-reduce-returns-none'?"
    ]


def test_a_source_without_the_torch_version_read_is_an_error(content: Path) -> None:
    edit(content / "topic.yaml", '      torch: "2.13.0"\n', "")
    line = line_of(content / "topic.yaml", "source:")
    [error] = messages(content)
    assert error.startswith(f"topic.yaml:{line}:")
    assert "a source needs the torch version it was read at: torch:" in error


def test_a_broken_inline_proof_is_reported_at_its_own_fields(content: Path) -> None:
    edit(content / "topic.yaml", '          all: {stdout: "2\\n"}\n', "")
    edit(content / "topic.yaml", "        ranks:\n", "        hangs: false\n")
    [error] = messages(content)
    assert "a proof's outcome must claim something a run" in error


def test_a_cheat_sheet_marker_naming_a_missing_proof_is_an_error_in_the_cheat_sheet(
    content: Path,
) -> None:
    sheet = content / "cheatsheet.md"
    edit(sheet, "<!-- proof: all-reduce-returns-none -->", "<!-- proof: all-reduce-return -->")
    line = line_of(sheet, "all-reduce-return -->")
    assert messages(content) == [
        f"cheatsheet.md:{line}:26: proof 'all-reduce-return' is not a proof of topic 'proven'; "
        "did you mean 'all-reduce-returns-none'?"
    ]


def test_a_cheat_sheet_source_without_torch_is_an_error_there(content: Path) -> None:
    sheet = content / "cheatsheet.md"
    edit(sheet, "distributed_c10d.py torch=2.13.0", "distributed_c10d.py")
    line = line_of(sheet, "distributed_c10d.py")
    [error] = messages(content)
    assert error.startswith(f"cheatsheet.md:{line}:")
    assert "source 'torch/distributed/distributed_c10d.py' has no torch version" in error


def test_a_fact_asked_in_two_topics_is_a_warning_naming_both_places(content: Path) -> None:
    report = load_path(content, content)
    assert report.errors == []
    card_line = line_of(content / "topic.yaml", "fact: all-reduce-sum-everywhere")
    other_line = line_of(content / "facts" / "topic.yaml", "fact: all-reduce-sum-everywhere")
    item_line = line_of(content / "set.yaml", "fact: all-reduce-sum-everywhere")
    elsewhere = f"is also asked by sum-again (topic facts-again, facts/topic.yaml:{other_line})"
    assert [str(warning) for warning in report.warnings] == [
        f"set.yaml:{item_line}:11: warning: fact 'all-reduce-sum-everywhere' of "
        f"proven-set/sum-where (topic proven) {elsewhere}: merge the duplicate",
        f"topic.yaml:{card_line}:11: warning: fact 'all-reduce-sum-everywhere' of "
        f"all-reduce-card (topic proven) {elsewhere}: merge the duplicate",
    ]
    # The card and the item of the same topic share the fact without a warning: a quiz asks
    # it once, and neither is a duplicate across topics.
    edit(content / "facts" / "topic.yaml", "all-reduce-sum-everywhere", "sum-held-by-all")
    assert load_path(content, content).warnings == []


def test_cheat_sheet_claims_carry_their_markers() -> None:
    claims, problems = cheatsheet.claims((PROOFS / "cheatsheet.md").read_text())
    assert problems == []
    assert [(c.line, c.marker, c.proof or c.source) for c in claims] == [
        (3, "proof", "all-reduce-sums"),
        (4, "proof", "all-reduce-returns-none"),  # the marker ends the bullet's second line
        (6, "source", "https://docs.pytorch.org/docs/2.13/distributed.html#backends"),
        (8, "nofact", None),
        (9, None, None),  # a claim with no marker: neither proven nor sourced
        (13, "proof", "all-reduce-sums"),  # table body rows are claims, the header is not
        (14, "source", "torch/distributed/distributed_c10d.py"),
    ]  # the bullet inside the code block is code, not a claim
    assert claims[1].text == "- It returns `None`; the result is in `t`\n  itself, on every rank."


def test_learners_see_the_cheat_sheet_without_markers(content: Path) -> None:
    topic = Catalog.load(content).topic("proven")
    assert topic is not None and topic.cheat_sheet is not None
    outside_code = topic.cheat_sheet.split("```")[0]
    assert "<!--" not in outside_code
    assert "- NCCL handles CUDA tensors only.\n- A rank is one process.\n" in outside_code
    assert "| `all_reduce` | the sum everywhere |\n" in outside_code


def test_a_fact_tag_or_source_leaves_an_items_content_hash_as_it_was(content: Path) -> None:
    def item_hash() -> str:
        [loaded] = load_path(content, content).sets
        return evidence.item_hash(loaded, loaded.challenge_set.items[0])

    before = item_hash()
    edit(content / "set.yaml", "    fact: all-reduce-sum-everywhere\n", "")
    edit(content / "set.yaml", "    proof: all-reduce-returns-none\n", "")
    assert item_hash() == before
    edit(content / "set.yaml", "text: Rank 0 only", "text: Rank 1 only")
    assert item_hash() != before
