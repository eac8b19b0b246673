"""Benchmark `ranklab validate FOLDER` on one folder of the shipped course against the whole
course: the CLI end to end (a fresh process each time, as an author runs it), and the load
alone in this process (a folder with what it needs, against the whole course that a folder
loaded before). Runs interleave, so a busy host slows both sides alike; medians are printed
with the ratio.

    .venv/bin/python bench/lone_folder.py [--repeats 5] [FOLDER ...]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from app.challenges import course, loader

ROOT = Path(__file__).resolve().parent.parent
COURSE = Path("challenges")
DEFAULT = ["challenges/collectives", "challenges/fsdp-checkpoint", "challenges/labs/practical-6"]


def _cli(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "app.cli", "validate", str(path)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


def _load(function, *args) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


def main() -> None:
    """Print the medians: CLI and in-process load, the folder and the course, and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("folders", nargs="*", default=DEFAULT)
    args = parser.parse_args()
    for name in args.folders:
        folder = Path(name)
        cli_folder, cli_course, load_folder, load_course = [], [], [], []
        for _ in range(args.repeats):
            cli_folder.append(_cli(folder))
            cli_course.append(_cli(COURSE))
            load_folder.append(_load(course.load, ROOT / folder))
            load_course.append(_load(loader.load_path, ROOT / COURSE))
        rows = (("validate (CLI)", cli_folder, cli_course), ("load", load_folder, load_course))
        for what, alone, whole in rows:
            one, every = statistics.median(alone), statistics.median(whole)
            print(f"{name:34} {what:15} folder {one:6.2f} s  course {every:6.2f} s  "
                  f"x{every / one:5.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
