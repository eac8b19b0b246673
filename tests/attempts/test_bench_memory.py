"""bench/bench_memory.py against a test server on a fixture course: remembering the keys a
first attempt showed, then retaking, earns no badge; nor does "longest option first"."""

from __future__ import annotations

import shutil
from pathlib import Path

from app import migrations
from app.main import create_app
from bench import bench_memory
from tests.conftest import FIXTURES, make_settings
from tests.support.live import serving

# Four sets: two without parameters, one with snippets to run, one whose items all vary. (Not
# tests/fixtures/quick: two questions of two options each, which any guess passes one time in
# four; bench_memory reports "longest" earning its badge there, as a guess would.)
COURSE = {
    "basics": FIXTURES / "challenges" / "basics",
    "runs": FIXTURES / "challenges" / "runs",
    "modes": FIXTURES / "modes",
    "variants": FIXTURES / "variants",
}


def test_memory_and_longest_option_earn_no_badge_on_four_sets_with_two_guests_each(
    tmp_path: Path,
):
    course = tmp_path / "challenges"
    for name, folder in COURSE.items():
        shutil.copytree(folder, course / name)
    url = f"sqlite:///{tmp_path / 'bench.db'}"
    migrations.upgrade(url)
    app = create_app(make_settings(url, challenges_dir=course))
    set_ids = sorted(app.state.catalog.sets)
    assert len(set_ids) >= 4, set_ids
    with serving(app) as base_url:
        tallies = bench_memory.play(base_url, set_ids, guests=2)
    printed = bench_memory.report(tallies)
    print(printed)
    for set_id in set_ids:
        remembered = tallies[set_id]["memory"]
        assert remembered.attempts == 2 and remembered.questions > 0, printed
        assert remembered.badges == 0, printed  # a retake from memory: never first sight
        assert tallies[set_id]["longest"].badges == 0, printed
    # The memory strategy did recall the keys of the sets without parameters (so the badge it
    # misses is refused for being seen before, not for wrong answers).
    basics = tallies["test-basics"]["memory"]
    assert basics.right == basics.questions, printed
