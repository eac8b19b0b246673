"""Every variant proven: verify runs each variant as an item, names a wrong one by its
parameters, records a proof per variant hash, skips what is unchanged; a learner may be shown
only the variants proven for exactly their content."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.challenges import variants
from app.challenges.loader import load_path
from app.verification import incremental, proofs, variant_sets
from tests.challenges.test_loader import break_file
from tests.conftest import TEST_CHALLENGES
from tests.verification.test_verify_cli import verify

FIXTURE = TEST_CHALLENGES.parent / "variants"
NOW = incremental.Stamp("2.13.0+cpu", "gloo")


def _loaded():
    report = load_path(FIXTURE)
    assert report.errors == []
    (loaded,) = report.sets
    return loaded


def test_each_variant_is_an_item_of_its_own_with_its_own_proofs_key():
    loaded = _loaded()
    hashes = proofs.current_hashes([loaded], [])
    item = loaded.challenge_set.items[0]
    keys = [v.key for v in variants.variants_of(item)]
    assert len(keys) == 6
    assert {f"variant-basics/all-reduce-op@{key}" for key in keys} <= set(hashes)
    assert "variant-basics/all-reduce-op" not in hashes  # the template itself is never run
    assert len(hashes) == 6 + 3 + 4
    assert len(set(hashes.values())) == len(hashes)


def test_item_picks_every_variant_of_an_item_by_its_own_id():
    loaded = _loaded()
    selection = incremental.select([loaded], [], ["broadcast-src"], {}, None, NOW, False)
    picked = [i.id for s in selection.sets for i in s.challenge_set.items]
    assert [variant_sets.base_id(i) for i in picked] == ["broadcast-src"] * 3
    assert selection.unknown == []


def test_only_the_variants_proven_for_their_exact_content_are_shown():
    loaded = _loaded()
    item = loaded.challenge_set.items[0]
    found = proofs.variant_hashes(loaded, item)
    first, second, *others = variants.variants_of(item)
    recorded = {
        found[first.key][0]: proofs.Proof("pass", found[first.key][1]),
        found[second.key][0]: proofs.Proof("fail", found[second.key][1]),
        found[others[0].key][0]: proofs.Proof("pass", "0" * 64),  # proven for older content
    }
    assert proofs.proven_variant_keys(recorded, loaded, item) == {first.key}


def test_a_plain_item_is_its_own_single_variant():
    report = load_path(TEST_CHALLENGES / "runs")
    (loaded,) = report.sets
    item = loaded.challenge_set.items[0]
    (key, digest) = proofs.variant_hashes(loaded, item)[""]
    assert key == "test-runs/all-reduce"
    assert proofs.proven_variant_keys({key: proofs.Proof("pass", digest)}, loaded, item) == {""}
    assert proofs.proven_variant_keys({}, loaded, item) == frozenset()


@pytest.mark.executor
def test_verify_fails_the_one_variant_its_author_got_wrong_by_name(executor_url, tmp_path: Path):
    folder = tmp_path / "course"
    shutil.copytree(FIXTURE, folder / "variants")
    # The author believes MAX over four ranks gives 5: wrong in that one variant only.
    break_file(
        folder / "variants" / "set.yaml",
        "result: \"float(sum(range(1, nproc + 1)) if OP == 'SUM' else nproc)\"",
        "result: \"float(sum(range(1, nproc + 1)) if OP == 'SUM' else 5 if nproc == 4 "
        'else nproc)"',
    )
    proofs_file = folder / proofs.FILE_NAME
    done = verify(
        folder, executor_url, "--item", "all-reduce-op", "--repeats", "1",
        "--proofs", str(proofs_file),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert len(verdicts) == 6, done.stdout
    failed = [line for line in verdicts if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].endswith("(nproc=4, OP=MAX)"), done.stdout
    recorded = json.loads(proofs_file.read_text())["proofs"]
    assert sorted(entry["verdict"] for entry in recorded.values()) == ["fail"] + ["pass"] * 5

    again = verify(folder, executor_url, "--item", "all-reduce-op", "--repeats", "1",
                   "--proofs", str(proofs_file))  # fmt: skip
    assert "5 proven and unchanged, skipped" in again.stdout, again.stdout
    assert [line for line in again.stdout.splitlines() if line.startswith(("PASS", "FAIL"))] == [
        failed[0]
    ]


def test_the_publish_gate_asks_for_a_proof_of_every_variant():
    from app.publishing import gate

    loaded = _loaded()
    found = gate.parts(loaded)
    assert {part.key for part in found} == set(proofs.current_hashes([loaded], []))
    assert "`broadcast-src@" in found[6].name and found[6].name.endswith("(SRC=0)`")


def test_a_set_rebuilt_from_its_stored_version_renders_its_variants_from_the_stored_code():
    from app.publishing import versions

    loaded = _loaded()
    kind, _unit_id, payload = versions.payload_of(loaded)
    stored = json.loads(json.dumps(payload))  # as the database gives it back
    rebuilt = versions.loaded_of(kind, loaded.path, stored)
    item = rebuilt.challenge_set.items[1]  # broadcast-src, its snippet in a code_file
    last = variants.variants_of(item)[-1]
    assert "SRC = 2\n" in variants.render(item, last.key).code
    assert proofs.variant_hashes(rebuilt, item) == proofs.variant_hashes(loaded, item)
