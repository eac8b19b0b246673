"""CONTENT.md: the course per topic, counted from the content and its proofs, never stale; and
every shipped topic meets the curriculum's floors with every executable key proven."""

from __future__ import annotations

from collections import Counter

import pytest

from app.challenges import report
from app.challenges.catalog import Catalog
from app.config import ROOT
from app.verification import proofs
from tests.conftest import FIXTURES
from tests.support.content import PROVEN_CONTENT

SHIPPED = ROOT / "challenges"


def test_a_topic_is_counted_from_its_sets_cards_explain_items_and_labs():
    catalog = Catalog.load(FIXTURES)
    counts = {c.id: c for c in map(report.TopicCounts.of, catalog.topics())}
    drill = counts["drill"]
    assert (drill.set_items, drill.executable, drill.cards, drill.explain, drill.concepts) == (
        2, 0, 3, 1, 3
    )  # fmt: skip
    assert drill.cheat_sheet and drill.labs == 0 and not drill.meets_floors
    assert counts["collectives"].labs == 1  # the hello-ranks lab names that topic
    assert (
        "| Drill topic (`drill`) | 2 | 0 | 3 | 1 (3) | yes | 0 | nothing to run | not yet |"
        in report.render(catalog)
    )


def test_each_sets_key_spread_counts_keys_by_their_place_in_the_file():
    catalog = Catalog.load(FIXTURES)
    loaded = catalog.get("test-basics")
    assert loaded is not None
    # One choice item keyed on its second option (B); the numeric item has no options.
    assert report.key_spread(loaded.challenge_set) == "B 1"
    spread = loaded.challenge_set.model_copy(update={"items": [loaded.challenge_set.items[0]] * 3})
    assert report.key_spread(spread) == "B 3"
    assert "| `test-basics` | B 1 |" in report.render(catalog)
    assert "## Where the keys sit" in report.render(catalog)


def test_each_set_and_lesson_check_reports_how_often_its_key_is_the_longest_option():
    rendered = report.render(Catalog.load(FIXTURES))
    assert "## Is the key the longest option?" in rendered
    # Both items of test-perturb key their longest option, each at least 1.3x its distractors.
    assert (
        "| set `test-perturb` | 2 of 2 (100%) | 50% | no | `lucky-order`, `any-order` |" in rendered
    )
    assert "| lesson check `lesson-drill` | 1 of 2 (50%) | 50% | yes | `where-sum` |" in rendered


def test_the_verify_column_counts_each_status_and_an_edit_unproves():
    catalog = Catalog.load(FIXTURES)
    topic = catalog.topic("collectives")
    assert topic is not None
    hashes = proofs.current_hashes(topic.loaded_sets, topic.labs)
    keys = sorted(hashes)
    assert len(keys) >= 3, keys  # executable items and the lab's steps
    given = {
        keys[0]: proofs.Proof("pass", hashes[keys[0]]),
        keys[1]: proofs.Proof("needs_gpus", hashes[keys[1]]),
        keys[2]: proofs.Proof("pass", "f" * 64),  # proven once, edited since
    }
    counts = report.TopicCounts.of(topic, given)
    assert counts.verify == Counter({"pass": 1, "needs_gpus": 1, "unproven": len(keys) - 2})
    assert not counts.proven
    assert report.verify_cell(counts.verify) == f"1 pass, 1 need GPUs, {len(keys) - 2} not verified"
    everything = {key: proofs.Proof("pass", digest) for key, digest in hashes.items()}
    assert report.TopicCounts.of(topic, everything).proven


def test_cards_and_cheat_sheet_claims_count_as_proven_only_once_their_proof_passed():
    catalog = Catalog.load(PROVEN_CONTENT)
    topic = catalog.topic("proven")
    assert topic is not None and topic.loaded_topic is not None
    hashes = proofs.current_hashes(topic.loaded_sets, topic.labs, [topic.loaded_topic])
    sums, returns = (
        "topic:proven:proof:all-reduce-sums",
        "topic:proven:proof:all-reduce-returns-none",
    )
    given = {
        sums: proofs.Proof("pass", hashes[sums]),
        returns: proofs.Proof("fail", hashes[returns]),  # a failed proof proves nothing
    }  # the inline proof of world-size-card was never verified
    counts = report.TopicCounts.of(topic, given)
    # Cards: all-reduce-card proven; nccl-card sourced; the failed, the unverified and the
    # bare card neither.
    assert dict(counts.card_basis) == {"proven": 1, "sourced": 1, "neither": 3}
    # Claims: two lines name the passing proof, two cite a source, one names the failed
    # proof and one has no marker; the nofact line is counted apart.
    assert dict(counts.claim_basis) == {"proven": 2, "sourced": 2, "neither": 2, "no fact": 1}
    assert counts.verify == Counter({"pass": 1, "fail": 1, "unproven": 1})
    rendered = report.render(catalog, given)
    assert "| `proven` | 1 / 1 / 3 | 2 / 2 / 2 | 1 |" in rendered
    assert "1 of 6 cards proven by a run, 4 cards and 2 cheat-sheet claims resting on" in rendered
    everything = {key: proofs.Proof("pass", digest) for key, digest in hashes.items()}
    assert dict(report.TopicCounts.of(topic, everything).card_basis) == {
        "proven": 3, "sourced": 1, "neither": 1
    }  # fmt: skip


def test_a_broken_proofs_file_is_an_error_not_an_empty_table(tmp_path):
    broken = tmp_path / proofs.FILE_NAME
    broken.write_text('{"proofs": [1, 2]}')
    with pytest.raises(ValueError, match="not a proofs file"):
        proofs.load(broken)
    assert proofs.load(tmp_path / "missing.json") == {}


def test_the_committed_content_md_is_current():
    committed = report.CONTENT_PATH.read_text(encoding="utf-8")
    proven = proofs.load(SHIPPED / proofs.FILE_NAME)
    assert committed == report.render(Catalog.load(SHIPPED), proven), "stale: run `ranklab content`"


def test_every_shipped_topic_meets_the_floors_with_every_key_proven():
    catalog = Catalog.load(SHIPPED)
    proven = proofs.load(SHIPPED / proofs.FILE_NAME)
    counts = [report.TopicCounts.of(topic, proven) for topic in catalog.topics()]
    assert len(counts) >= 12
    below = [c.id for c in counts if not c.meets_floors]
    assert not below, f"topics below the floors: {below}"
    unproven = {c.id: dict(c.verify) for c in counts if not c.proven}
    assert not unproven, f"run `make proofs`; not proven: {unproven}"
    assert sum(c.set_items for c in counts) >= 60
    assert 2 * sum(c.executable for c in counts) >= sum(c.set_items for c in counts)
