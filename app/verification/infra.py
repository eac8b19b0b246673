"""Tell a run the executor spoiled from what the snippet does.

Under load a run can fail for reasons that are not the snippet's: a rank loses its connection
while the ranks rendezvous (gloo's or the store's "Connection closed by peer"), a rank's set-up
in the executor fails, the executor reports an internal error. Such a run says nothing about the
snippet: verify runs it again, and never judges a claim on it or shows it as evidence.

The signature is narrow on purpose: a transport error raised inside `init_process_group` (before
the snippet's own code after it ran), and every other failing rank either the same or stopped by
the executor without an error of its own. A snippet that fails by itself, even at rendezvous (a
missing MASTER_ADDR, a world size no rank can reach), does not match it.

Pure: the standard library and the executor's contract models.
"""

from __future__ import annotations

import re

from executor.contract import RankResult, RankStatus, RunResult, RunStatus

# What a rank's own set-up in the executor writes before it gives up (executor/rank.py).
RANK_SETUP_FAILED = "ranklab: rank setup failed"
TRANSPORT = re.compile(r"Connection closed by peer|Connection reset by peer|Broken pipe")
# Frames of the rendezvous, as Python's traceback on stderr names them.
RENDEZVOUS = re.compile(
    r"in (init_process_group|_rendezvous_helper|_create_c10d_store|rendezvous)\b"
)


def _lost_at_rendezvous(rank: RankResult) -> bool:
    exception = rank.exception
    if exception is None or not TRANSPORT.search(exception.message):
        return False
    return RENDEZVOUS.search(rank.stderr) is not None


def _ended_well(rank: RankResult) -> bool:
    return rank.status is RankStatus.OK and rank.exit_code in (0, None)


def _stopped_quietly(rank: RankResult) -> bool:
    """A rank the executor stopped (a peer having failed) with no error and no output of its own."""
    return (
        rank.exception is None
        and not rank.stdout
        and (rank.status is RankStatus.KILLED or (rank.exit_code or 0) < 0)
    )


def executor_fault(result: RunResult) -> str | None:
    """Why this run tells nothing about the snippet (the executor's failure), or None."""
    if result.status in (RunStatus.INTERNAL_ERROR, RunStatus.REJECTED):
        return f"the executor answered {result.status.value}: {result.message or 'no reason given'}"
    setup = [rank for rank in result.ranks if RANK_SETUP_FAILED in rank.stderr]
    if setup:
        return f"rank {setup[0].rank}'s set-up in the executor failed"
    lost = [rank for rank in result.ranks if _lost_at_rendezvous(rank)]
    if not lost:
        return None
    others_failed = [
        rank
        for rank in result.ranks
        if rank not in lost
        and (rank.status is not RankStatus.OK or rank.exit_code not in (0, None))
    ]
    if any(not _stopped_quietly(rank) for rank in others_failed):
        return None  # another rank failed by itself: the snippet's doing
    message = lost[0].exception.message.splitlines()[0][:160] if lost[0].exception else ""
    return f"rank {lost[0].rank} lost its connection while the ranks rendezvoused ({message})"
