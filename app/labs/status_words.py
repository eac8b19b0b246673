"""How a lab run and each of its ranks ended, in words for the learner (never a status code
such as `output_limit`). The step page renders them, and hands the same words to lab.js for
runs that end while the page is open."""

from __future__ import annotations

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


def for_script() -> dict[str, object]:
    """The words lab.js needs, as JSON-ready data."""
    return {"run": RUN, "rank": RANK, "cut": CUT_NOTE}
