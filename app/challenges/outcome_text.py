"""Outcomes and numbers in plain words, for staff previews ("rank 0 hangs", "rank 1 prints
1002"), never as Python reprs. Pure: the outcome schema only.
"""

from __future__ import annotations

from app.challenges.base import Outcome, RankExpectation, RankOutcome

_STATUS = {
    RankOutcome.RETURNS: "returns",
    RankOutcome.RAISES: "raises",
    RankOutcome.HANGS: "hangs",
    RankOutcome.KILLED: "is killed",
}


def number(value: float | int) -> str:
    """A number as an author writes it: 1002, not 1002.0; 0.25 as 0.25."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)


def _printed(text: str) -> str:
    shown = text.rstrip("\n")
    if not shown:
        return "prints nothing"
    return f"prints {shown}" if "\n" not in shown else "prints " + " ⏎ ".join(shown.splitlines())


def rank_claims(expectation: RankExpectation) -> list[str]:
    """What one rank is claimed to do, one phrase a claim, in the order a reader checks them."""
    claims: list[str] = []
    if expectation.status is not None and not (
        expectation.status is RankOutcome.RAISES and expectation.exception is not None
    ):
        claims.append(_STATUS[expectation.status])
    if expectation.exception is not None:
        claims.append(f"raises {expectation.exception}")
    if expectation.message_regex is not None:
        claims.append(f"with a message matching /{expectation.message_regex}/")
    if expectation.stdout is not None:
        claims.append(_printed(expectation.stdout))
    if expectation.stdout_regex is not None:
        claims.append(f"prints output matching /{expectation.stdout_regex}/")
    if expectation.stderr_regex is not None:
        claims.append(f"writes to stderr matching /{expectation.stderr_regex}/")
    if expectation.exit_code is not None:
        claims.append(f"exits with code {expectation.exit_code}")
    if expectation.differs_across_ranks is not None:
        claims.append(
            "prints something different from every other rank"
            if expectation.differs_across_ranks
            else "prints the same as every other rank"
        )
    if expectation.varies_between_runs is not None:
        claims.append(
            "prints something different from run to run"
            if expectation.varies_between_runs
            else "prints the same on every run"
        )
    return claims


def _rank_order(key: str) -> tuple[int, int]:
    # A key known only per variant ("others", "{SRC}") sorts after the numbered ranks.
    return (0, -1) if key == "all" else (1, int(key)) if key.isdigit() else (2, 0)


def outcome(claimed: Outcome) -> list[str]:
    """An outcome as sentences: the run as a whole, then each rank ("rank 0 hangs")."""
    lines: list[str] = []
    if claimed.hangs is True:
        lines.append("the run hangs")
    elif claimed.hangs is False:
        lines.append("the run ends, no rank blocked")
    for key in sorted(claimed.ranks, key=_rank_order):
        who = {"all": "every rank", "others": "every other rank"}.get(key, f"rank {key}")
        lines.append(f"{who} " + ", ".join(rank_claims(claimed.ranks[key])))
    if claimed.order_varies is True:
        lines.append("which rank prints first may vary between runs")
    elif claimed.order_varies is False:
        lines.append("the ranks print in the same order on every run")
    return lines
