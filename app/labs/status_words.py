"""How a lab run and each of its ranks ended, in words for the learner (never a status code
such as `output_limit`). The step page renders them, and hands the same words to lab.js for
runs that end while the page is open."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from executor.limits import Limits

# The executor's per-rank cut (executor.limits): what "output cut after 64 KiB" refers to.
OUTPUT_CUT = f"output cut after {Limits().output_bytes_per_rank // 1024} KiB"
CUT_NOTE = f"Output cut after {Limits().output_bytes_per_rank // 1024} KiB: the rest of what "
CUT_NOTE += "this rank printed is not kept."

RUN = {
    "running": "still running",
    "ok": "finished",
    "error": "ended with an error",
    "timeout": "stopped at the time limit",
    "memory_limit": "stopped: it ran out of memory",
    "output_limit": f"stopped: {OUTPUT_CUT}",
    "rejected": "was refused",
    "internal_error": "failed inside the executor; run it again",
    "stopped": "stopped by you",
    "unavailable": "could not run: runs are unavailable right now",
}
RANK = {
    "running": "running",
    "ok": "finished",
    "error": "error",
    "timeout": "timed out",
    "killed": "killed",
    "stopped": "stopped by you",
}


def run(status: str) -> str:
    """A run's status in words."""
    return RUN.get(status, status.replace("_", " "))


def rank(status: str) -> str:
    """A rank's status in words."""
    return RANK.get(status, status.replace("_", " "))


def ranks_said(result: Mapping[str, Any]) -> dict[int, str]:
    """Each rank's status in words, by rank number; a killed rank says why, from what the run's
    own result shows: a peer's failure (the others are stopped, as torchrun does), the output
    or memory limit, or the time limit."""
    ranks = result.get("ranks") or []
    failed = [found["rank"] for found in ranks if found.get("status") == "error"]
    cut = [found["rank"] for found in ranks if found.get("truncated")]
    said = {}
    for found in ranks:
        status = found.get("status", "")
        words = rank(status)
        if status == "killed":
            words = _why_killed(found["rank"], str(result.get("status")), failed, cut)
        said[found["rank"]] = words
    return said


def _why_killed(number: int, run_status: str, failed: list[int], cut: list[int]) -> str:
    if run_status == "memory_limit":
        return "killed: the run ran out of memory"
    if run_status == "output_limit":
        others = [other for other in cut if other != number]
        if number in cut or not others:
            return f"killed: it printed more than {_KIB} KiB"
        return f"killed: {_names(others)} printed more than {_KIB} KiB"
    if failed:
        return f"stopped after {_names(failed)} failed"
    if run_status == "timeout":
        return "killed at the time limit"
    return "killed"


_KIB = Limits().output_bytes_per_rank // 1024


def _names(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    return "ranks " + ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def for_script() -> dict[str, object]:
    """The words lab.js needs, as JSON-ready data."""
    return {"run": RUN, "rank": RANK, "cut": CUT_NOTE}
